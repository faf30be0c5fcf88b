package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// extractTo writes OUT/patches (the series and its patches), OUT/src (the new files) and
// OUT/VERSION from the commits after the tag "upstream" in the repository g runs in.
//
// Each commit becomes one patch named after its subject: the files it adds that upstream
// lacks are its new files (their content at that commit goes to src/), every other change
// is its diff. VERSION goes to VERSION. "fork: VERSION" is generated and skipped.
func extractTo(g *gitRepo, out string) error {
	if _, err := g.line("rev-parse", "-q", "--verify", "upstream^{commit}"); err != nil {
		return fmt.Errorf("%s has no 'upstream' tag; is it a fork work tree? (./fork apply makes one)", g.dir)
	}
	upFiles, err := g.run("ls-tree", "-r", "-z", "--name-only", "upstream")
	if err != nil {
		return err
	}
	isUpstream := map[string]bool{}
	for _, p := range nulList(upFiles) {
		isUpstream[p] = true
	}
	revs, err := g.run("rev-list", "--reverse", "--first-parent", "upstream..HEAD")
	if err != nil {
		return err
	}
	var s series
	introduced := map[string]bool{}
	files := map[string][]byte{} // out-relative path -> content; mode in modes
	modes := map[string]fs.FileMode{}
	for _, c := range strings.Fields(revs) {
		subject, err := g.line("log", "-1", "--format=%s", c)
		if err != nil {
			return err
		}
		short := c[:12]
		changes, err := g.run("diff-tree", "-r", "-z", "--no-commit-id", "--no-renames", "--name-status", c+"^", c)
		if err != nil {
			return err
		}
		l := nulList(changes)
		var diffPaths, added []string
		for i := 0; i+1 < len(l); i += 2 {
			status, p := l[i], l[i+1]
			switch {
			case p == "VERSION":
			case isUpstream[p] || introduced[p] || status != "A":
				diffPaths = append(diffPaths, p)
			default:
				if err := checkNewFilePath(p); err != nil {
					return fmt.Errorf("commit %s (%q): %w", short, subject, err)
				}
				added = append(added, p)
			}
		}
		if subject == "fork: add new files from src/" {
			return fmt.Errorf("commit %s (%q) comes from the former fork script, which added every new file in one commit; extract this tree with that script (git show HEAD~N:fork), or move its own commits onto a tree laid out by ./fork apply", short, subject)
		}
		if strings.HasPrefix(subject, "fork: ") {
			if len(diffPaths)+len(added) > 0 {
				return fmt.Errorf("commit %s (%q) changes more than VERSION; subjects starting 'fork: ' are reserved for the generated VERSION commit: reword it (git rebase -i upstream)", short, subject)
			}
			continue
		}
		if len(diffPaths)+len(added) == 0 {
			continue
		}
		body, err := g.run("log", "-1", "--format=%B", c)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%04d-%s.patch", len(s)+1, slug(subject))
		var patch bytes.Buffer
		patch.WriteString("Subject: " + strings.TrimRight(body, "\n") + "\n---\n")
		if len(diffPaths) > 0 {
			diff, err := g.run(append([]string{"diff", "--no-color", "--no-ext-diff", "--full-index", c + "^", c, "--"}, diffPaths...)...)
			if err != nil {
				return err
			}
			for _, line := range strings.SplitAfter(diff, "\n") {
				if strings.HasPrefix(line, "GIT binary patch") || strings.HasPrefix(line, "Binary files ") {
					return fmt.Errorf("commit %s (%q) changes a binary file; the series carries text only", short, subject)
				}
				if !strings.HasPrefix(line, "index ") {
					patch.WriteString(line)
				}
			}
		}
		files["patches/"+name] = patch.Bytes()
		modes["patches/"+name] = 0o644
		if len(added) > 0 {
			tree, err := g.run(append([]string{"ls-tree", "-z", c, "--"}, added...)...)
			if err != nil {
				return err
			}
			for _, entry := range nulList(tree) {
				meta, p, _ := strings.Cut(entry, "\t")
				f := strings.Fields(meta) // mode type object
				switch {
				case f[1] != "blob":
					return fmt.Errorf("commit %s: %s is a submodule; not supported", short, p)
				case f[0] == "120000":
					return fmt.Errorf("commit %s: %s is a symbolic link; not supported", short, p)
				}
				data, err := g.run("cat-file", "blob", f[2])
				if err != nil {
					return err
				}
				files[p] = []byte(data)
				modes[p] = 0o644
				if f[0] == "100755" {
					modes[p] = 0o755
				}
				introduced[p] = true
			}
		}
		s = append(s, seriesPatch{name: name, files: added})
	}
	version, err := g.run("show", "HEAD:VERSION")
	if err != nil {
		return err
	}
	files["VERSION"] = []byte(version)
	modes["VERSION"] = 0o644
	files["patches/series"] = s.format()
	modes["patches/series"] = 0o644
	for p, data := range files {
		dst := filepath.Join(out, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, modes[p]); err != nil {
			return err
		}
		if err := os.Chmod(dst, modes[p]); err != nil {
			return err
		}
	}
	return nil
}

// A snapshot is the series part of a directory: patches/, src/ and VERSION, by slash path,
// with the executable bit marked by a trailing "*" on the content key.
type snapshot map[string]string

func readSnapshot(dir string) (snapshot, error) {
	snap := snapshot{}
	for _, d := range []string{"patches", "src", "VERSION"} {
		err := filepath.WalkDir(filepath.Join(dir, d), func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if de.IsDir() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			if fi.Mode()&0o111 != 0 {
				data = append(data, "\x00executable"...)
			}
			snap[filepath.ToSlash(rel)] = string(data)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// differences lists the paths whose content differs between a and b, or that only one has.
func differences(a, b snapshot) []string {
	var d []string
	for p, v := range a {
		if w, ok := b[p]; !ok || v != w {
			d = append(d, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, p)
		}
	}
	sort.Strings(d)
	return d
}

// syncInto makes top's patches/, src/ and VERSION what out holds: changed files are
// rewritten, stale ones removed, unchanged ones left alone.
func syncInto(out, top string) (changed []string, err error) {
	a, err := readSnapshot(out)
	if err != nil {
		return nil, err
	}
	b, err := readSnapshot(top)
	if err != nil {
		return nil, err
	}
	for _, p := range differences(a, b) {
		dst := filepath.Join(top, filepath.FromSlash(p))
		if _, ok := a[p]; !ok {
			if err := os.Remove(dst); err != nil {
				return nil, err
			}
			removeEmptyParents(filepath.Dir(dst), top)
			changed = append(changed, "removed "+p)
			continue
		}
		os.Remove(dst)
		if err := copyFile(filepath.Join(out, filepath.FromSlash(p)), dst); err != nil {
			return nil, err
		}
		changed = append(changed, "wrote "+p)
	}
	return changed, nil
}

func removeEmptyParents(dir, top string) {
	for dir != top && strings.HasPrefix(dir, top) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}
