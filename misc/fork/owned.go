package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// The rule on the fork's own files. A new file is stored under src/ with the content its
// introducing patch gives it, so a later patch that changed it would leave src/ showing
// code the fork no longer builds, and a reader of that patch would see the file only in
// pieces. So a patch's diff changes upstream files only: every change to a new file
// belongs to the patch that introduces it (or the file is introduced later, by the patch
// that needs it), and src/ is exactly what the last commit holds.
var (
	errOwnedFileChanged = errors.New("a patch's diff changes a new file of the series")
	errSrcStale         = errors.New("src/ is not what the series builds")
)

// checkOwnedFiles reports the patches whose diffs change a new file that they or an
// earlier patch introduce, naming the patch, the file and the patch that introduces it.
func checkOwnedFiles(top string, s series) error {
	owner := map[string]string{}
	var bad []string
	for _, p := range s {
		for _, f := range p.files {
			owner[f] = p.name
		}
		_, diff, err := readPatchFile(top, p.name)
		if err != nil {
			return err
		}
		for _, f := range diffFiles(diff) {
			o, ok := owner[f]
			switch {
			case !ok:
			case o == p.name:
				bad = append(bad, fmt.Sprintf("patches/%s changes %s, which it introduces itself", p.name, f))
			default:
				bad = append(bad, fmt.Sprintf("patches/%s changes %s (introduced by patches/%s)", p.name, f, o))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("check: %w: %s%s; fold each change into the patch that introduces the file (git rebase -i upstream, fixup) or introduce the file in the later patch, then ./fork extract", errOwnedFileChanged, strings.Join(first(bad, 3), "; "), more(bad, 3))
	}
	return nil
}

// diffFiles returns the paths a git diff names in its "diff --git a/X b/Y" lines, which
// cannot occur inside a hunk (hunk lines start with ' ', '+', '-' or '\').
func diffFiles(diff []byte) []string {
	var files []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(diff), "\n") {
		rest, ok := strings.CutPrefix(line, "diff --git ")
		if !ok {
			continue
		}
		for _, p := range diffPaths(rest) {
			if !seen[p] {
				seen[p] = true
				files = append(files, p)
			}
		}
	}
	return files
}

// diffPaths returns the two paths of "a/X b/Y", without their prefixes. git quotes both
// names or neither (they are one file: extract turns rename detection off), and leaves
// spaces unquoted, so an unquoted pair splits in the middle.
func diffPaths(s string) []string {
	var a, b string
	if strings.HasPrefix(s, `"`) {
		for _, p := range []*string{&a, &b} {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil
			}
			*p, _ = strconv.Unquote(q)
			s = strings.TrimPrefix(s[len(q):], " ")
		}
	} else if n := (len(s) - 1) / 2; len(s)%2 == 1 && s[n] == ' ' && strings.HasPrefix(s[n+1:], "b/") && s[:n] == "a/"+s[n+3:] {
		a, b = s[:n], s[n+1:]
	} else if i := strings.LastIndex(s, " b/"); i >= 0 {
		a, b = s[:i], s[i+1:]
	}
	var paths []string
	if p, ok := strings.CutPrefix(a, "a/"); ok {
		paths = append(paths, p)
	}
	if p, ok := strings.CutPrefix(b, "b/"); ok && (len(paths) == 0 || paths[0] != p) {
		paths = append(paths, p)
	}
	return paths
}

// checkSrcMatchesApplied compares every new file under top's src/ with the file in the last
// commit of g (the applied series): the repository must show what the fork builds.
func checkSrcMatchesApplied(g *gitRepo, top string, s series) error {
	var want []string
	for _, p := range s {
		want = append(want, p.files...)
	}
	if len(want) == 0 {
		return nil
	}
	out, err := g.run(append([]string{"ls-tree", "-r", "-z", "HEAD", "--"}, want...)...)
	if err != nil {
		return err
	}
	applied := map[string]string{}
	for _, e := range nulList(out) {
		meta, path, ok := strings.Cut(e, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 {
			applied[path] = f[2]
		}
	}
	var paths []string
	for _, f := range want {
		paths = append(paths, filepath.Join(top, filepath.FromSlash(f)))
	}
	hashes, err := (&gitRepo{dir: top}).run(append([]string{"hash-object", "--no-filters", "--"}, paths...)...)
	if err != nil {
		return err
	}
	var stale []string
	for i, h := range strings.Fields(hashes) {
		switch a, ok := applied[want[i]]; {
		case !ok:
			stale = append(stale, want[i]+" (absent from the applied tree)")
		case a != h:
			stale = append(stale, want[i])
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("check: %w: %s%s differs from the last commit of the applied series; make the introducing patch give the file its final content, then ./fork extract", errSrcStale, strings.Join(first(stale, 3), ", "), more(stale, 3))
	}
	return nil
}
