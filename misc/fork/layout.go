package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// excludes are the work tree's paths git ignores: build output and scratch files.
var excludes = []string{
	"/" + stateFile,
	"/bin/",
	"/pkg/",
	"/src/cmd/dist/dist",
	"/src/cmd/cgo/zdefaultcc.go",
	"/src/cmd/go/internal/cfg/zdefaultcc.go",
	"/src/cmd/internal/objabi/zbootstrap.go",
	"/src/go/build/zcgo.go",
	"/src/internal/buildcfg/zbootstrap.go",
	"/src/internal/runtime/sys/zversion.go",
	"/src/time/tzdata/zzipdata.go",
	"/VERSION.cache",
	"/test/",
	"*.test",
	"*.o",
}

// layoutPlain lays out the work tree as a plain tree: upstream's source (not its bin/ and
// pkg/), each patch's new files and diff in order, and VERSION. No git history: this is
// what make.bash builds.
func (f *fork) layoutPlain(up string, s series, version []byte) error {
	if err := copyTree(up, f.work); err != nil {
		return fmt.Errorf("copying upstream into %s: %w", f.work, err)
	}
	// git apply outside any repository works as a patch program; the ceiling keeps it from
	// finding the fork's own repository above the work tree.
	g := &gitRepo{dir: f.work, env: []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(f.work)}}
	for _, p := range s {
		_, diff, err := readPatchFile(f.top, p.name)
		if err != nil {
			return err
		}
		for _, nf := range p.files {
			dst := filepath.Join(f.work, filepath.FromSlash(nf))
			if exists(dst) {
				return errAlreadyThere(nf, p.name)
			}
			if err := copyFile(filepath.Join(f.top, filepath.FromSlash(nf)), dst); err != nil {
				return err
			}
		}
		if len(strings.TrimSpace(string(diff))) > 0 {
			g.stdin = diff
			if _, err := g.run("apply", "--whitespace=nowarn", "-"); err != nil {
				return errDoesNotApply(p.name, version, err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(f.work, "VERSION"), version, 0o644); err != nil {
		return err
	}
	return nil
}

func errAlreadyThere(nf, patch string) error {
	return fmt.Errorf("patches/series lists %s as a new file of %s, but upstream or an earlier patch already has it; change it with a diff, or list it under the patch that first brings it", nf, patch)
}

func errDoesNotApply(patch string, version []byte, err error) error {
	return fmt.Errorf("patches/%s does not apply to %s plus the patches before it (edited by hand? redo the change in goroot/, commit, ./fork extract): %w", patch, upstreamOf(version), err)
}

// copyTree copies upstream's source tree, all but bin/ and pkg/, making it writable.
func copyTree(up, dst string) error {
	return filepath.WalkDir(up, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(up, p)
		if rel == "bin" || rel == "pkg" {
			return filepath.SkipDir
		}
		out := filepath.Join(dst, rel)
		switch {
		case de.IsDir():
			return os.MkdirAll(out, 0o755)
		case de.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		default:
			return copyFile(p, out)
		}
	})
}

// copyFile copies a regular file, keeping its executable bit, writable by the owner.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// addHistory gives a laid-out plain work tree its git history, written with git plumbing
// so that the tree's files are read, never rewritten: the upstream commit is hashed from
// the pristine upstream GOROOT, each patch is applied to a temporary index (new files by
// hash-object, the diff by apply --cached). It returns HEAD.
func (f *fork) addHistory(up string, s series, version []byte) (string, error) {
	head, err := initHistory(f.work, up, s, f.top, version)
	if err != nil {
		return "", err
	}
	// The real index: HEAD's tree, its stat data refreshed from the work tree's files.
	g := &gitRepo{dir: f.work}
	if _, err := g.run("read-tree", "HEAD"); err != nil {
		return "", err
	}
	g.run("update-index", "-q", "--refresh") // differences show in git status
	return head, nil
}

// initHistory makes dir a git repository (dir/.git) holding the series' history.
func initHistory(dir, up string, s series, top string, version []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := (&gitRepo{dir: dir}).run("init", "-q", "."); err != nil {
		return "", err
	}
	gitDir := filepath.Join(dir, ".git")
	if err := os.WriteFile(filepath.Join(gitDir, "info", "exclude"), []byte(strings.Join(excludes, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	return writeHistory(gitDir, up, s, top, version)
}

// writeHistory writes the commits of the series into the repository gitDir and points
// its main branch (HEAD) at the last. top is where the patches and new files are read.
func writeHistory(gitDir, up string, s series, top string, version []byte) (string, error) {
	index := filepath.Join(gitDir, "fork-index.tmp")
	os.Remove(index)
	defer os.Remove(index)
	env := []string{"GIT_DIR=" + gitDir, "GIT_INDEX_FILE=" + index}
	// The pristine upstream commit, hashed from upstream itself (excludes keep out bin/, pkg/).
	gu := &gitRepo{dir: up, env: append(env, "GIT_WORK_TREE="+up)}
	if _, err := gu.run("add", "-A", "."); err != nil {
		return "", fmt.Errorf("committing upstream: %w", err)
	}
	g := &gitRepo{dir: top, env: env}
	commit := func(parent, msg string) (string, error) {
		tree, err := g.line("write-tree")
		if err != nil {
			return "", err
		}
		args := []string{"commit-tree", tree}
		if parent != "" {
			ptree, err := g.line("rev-parse", parent+"^{tree}")
			if err != nil {
				return "", err
			}
			if ptree == tree {
				return "", errNoChange
			}
			args = append(args, "-p", parent)
		}
		g.stdin = []byte(msg)
		clean, err := g.run("stripspace")
		if err != nil {
			return "", err
		}
		g.stdin = []byte(clean)
		return g.line(args...)
	}
	head, err := commit("", "upstream "+upstreamOf(version)+"\n")
	if err != nil {
		return "", err
	}
	if _, err := g.run("update-ref", "refs/tags/upstream", head); err != nil {
		return "", err
	}
	for _, p := range s {
		msg, diff, err := readPatchFile(top, p.name)
		if err != nil {
			return "", err
		}
		if len(p.files) > 0 {
			if err := addNewFiles(g, top, p); err != nil {
				return "", err
			}
		}
		if len(strings.TrimSpace(string(diff))) > 0 {
			g.stdin = diff
			if _, err := g.run("apply", "--cached", "--whitespace=nowarn", "-"); err != nil {
				return "", errDoesNotApply(p.name, version, err)
			}
		}
		if head, err = commit(head, msg); err == errNoChange {
			return "", fmt.Errorf("patches/%s changes nothing; remove it from patches/series", p.name)
		} else if err != nil {
			return "", err
		}
	}
	g.stdin = version
	h, err := g.line("hash-object", "-w", "--stdin")
	if err != nil {
		return "", err
	}
	if _, err := g.run("update-index", "--add", "--cacheinfo", "100644,"+h+",VERSION"); err != nil {
		return "", err
	}
	if head, err = commit(head, "fork: VERSION\n"); err != nil && err != errNoChange {
		return "", err
	}
	if _, err := g.run("update-ref", "refs/heads/main", head); err != nil {
		return "", err
	}
	if _, err := g.run("symbolic-ref", "HEAD", "refs/heads/main"); err != nil {
		return "", err
	}
	return head, nil
}

var errNoChange = fmt.Errorf("no change")

func readPatchFile(top, name string) (string, []byte, error) {
	data, err := os.ReadFile(filepath.Join(top, "patches", name))
	if err != nil {
		return "", nil, err
	}
	return splitPatch(name, data)
}

// addNewFiles adds a patch's new files, as the repository holds them, to the index.
func addNewFiles(g *gitRepo, top string, p seriesPatch) error {
	there, err := g.run(append([]string{"ls-files", "-z", "--cached", "--"}, p.files...)...)
	if err != nil {
		return err
	}
	if l := nulList(there); len(l) > 0 {
		return errAlreadyThere(l[0], p.name)
	}
	var paths []string
	for _, nf := range p.files {
		paths = append(paths, filepath.Join(top, filepath.FromSlash(nf)))
	}
	out, err := g.run(append([]string{"hash-object", "-w", "--no-filters", "--"}, paths...)...)
	if err != nil {
		return err
	}
	hashes := strings.Fields(out)
	var info strings.Builder
	for i, nf := range p.files {
		fi, err := os.Stat(paths[i])
		if err != nil {
			return err
		}
		mode := "100644"
		if fi.Mode()&0o111 != 0 {
			mode = "100755"
		}
		fmt.Fprintf(&info, "%s %s\t%s\n", mode, hashes[i], nf)
	}
	g.stdin = []byte(info.String())
	_, err = g.run("update-index", "--add", "--index-info")
	return err
}

// editedSince lists the files of a plain work tree changed after it was laid out (build
// output aside): work that replacing the tree would lose.
func (f *fork) editedSince(t time.Time) ([]string, error) {
	skip := map[string]bool{}
	for _, e := range excludes {
		if !strings.HasPrefix(e, "*") {
			skip[strings.Trim(e, "/")] = true
		}
	}
	var edited []string
	err := filepath.WalkDir(f.work, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(f.work, p)
		rel = filepath.ToSlash(rel)
		if skip[rel] || rel == ".git" || strings.HasSuffix(rel, ".test") || strings.HasSuffix(rel, ".o") {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			return nil
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		if fi.ModTime().After(t) {
			edited = append(edited, rel)
		}
		return nil
	})
	return edited, err
}

// run runs a command with its output going to w.
func runCmd(w io.Writer, dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, w, w
	return cmd.Run()
}
