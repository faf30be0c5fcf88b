package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// inputs is what a layout is made from.
type inputs struct {
	up      string
	series  series
	version []byte
	hash    string
}

func (f *fork) loadInputs() (*inputs, error) {
	up, err := f.upstream()
	if err != nil {
		return nil, err
	}
	s, err := f.loadSeries()
	if err != nil {
		return nil, err
	}
	v, err := f.readVersion()
	if err != nil {
		return nil, err
	}
	h, err := f.inputsHash()
	if err != nil {
		return nil, err
	}
	return &inputs{up: up, series: s, version: v, hash: h}, nil
}

func (f *fork) git() *gitRepo { return &gitRepo{dir: f.work} }

// dirty returns git's short status of uncommitted edits (build output is excluded).
func (f *fork) dirty() (string, error) {
	return f.git().run("status", "--porcelain", "--untracked-files=normal")
}

// safeToReplace refuses to throw away work in the work tree that is not saved in the
// repository: uncommitted edits, commits not extracted, edits to a plain tree.
func (f *fork) safeToReplace(st state) error {
	if !exists(f.work) {
		return nil
	}
	if !f.isGit() {
		if !exists(filepath.Join(f.work, stateFile)) {
			return fmt.Errorf("%s exists but is not a fork work tree (no .git, no %s); move it away first", f.work, stateFile)
		}
		edited, err := f.editedSince(st.LaidOut)
		if err != nil {
			return err
		}
		if len(edited) > 0 {
			return fmt.Errorf("%s has files edited since it was laid out (%s%s); keep them with ./fork apply (which gives the tree a git history and shows them as uncommitted edits), or discard them with rm -rf %[1]s", f.work, strings.Join(first(edited, 3), ", "), more(edited, 3))
		}
		return nil
	}
	d, err := f.dirty()
	if err != nil {
		return err
	}
	if d != "" {
		lines := strings.Split(strings.TrimSpace(d), "\n")
		return fmt.Errorf("%s has uncommitted edits that would be lost (%s%s); save them: git -C %[1]s add -A && git -C %[1]s commit -m 'pkg: what and why' && ./fork extract; or discard them: git -C %[1]s reset --hard && git -C %[1]s clean -fd", f.work, strings.Join(first(lines, 3), ", "), more(lines, 3))
	}
	head, err := f.git().line("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if head != st.AppliedHead {
		same, err := f.extractMatchesRepo()
		if err != nil {
			return err
		}
		if !same {
			return fmt.Errorf("%s has commits that are not extracted to patches/ and src/; save them with ./fork extract, or drop them with rm -rf %[1]s", f.work)
		}
	}
	return nil
}

func first(l []string, n int) []string {
	if len(l) > n {
		return l[:n]
	}
	return l
}

func more(l []string, n int) string {
	if len(l) > n {
		return fmt.Sprintf(" and %d more", len(l)-n)
	}
	return ""
}

// extractMatchesRepo reports whether extracting the work tree gives the repository's series.
func (f *fork) extractMatchesRepo() (bool, error) {
	tmp, err := os.MkdirTemp("", "fork-extract-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	if err := extractTo(f.git(), tmp); err != nil {
		return false, err
	}
	a, err := readSnapshot(tmp)
	if err != nil {
		return false, err
	}
	b, err := readSnapshot(f.top)
	if err != nil {
		return false, err
	}
	return len(differences(a, b)) == 0, nil
}

// apply gives the work tree the series with a git history.
func (f *fork) apply() error {
	in, err := f.loadInputs()
	if err != nil {
		return err
	}
	st := f.readState()
	if exists(f.work) {
		if !f.isGit() && st.Inputs == in.hash {
			// A current plain tree: keep its files (and its build), add the history.
			return f.historyInPlace(in, st)
		}
		if err := f.safeToReplace(st); err != nil {
			return err
		}
		if f.isGit() && st.Inputs == in.hash {
			f.logf("%s already holds the series (%d patches), with its history", f.work, len(in.series))
			return nil
		}
		if err := os.RemoveAll(f.work); err != nil {
			return err
		}
	}
	f.logf("laying out %s from %s", f.work, in.up)
	if err := f.layoutPlain(in.up, in.series, in.version); err != nil {
		return err
	}
	return f.historyInPlace(in, state{Inputs: in.hash, LaidOut: time.Now()})
}

func (f *fork) historyInPlace(in *inputs, st state) error {
	head, err := f.addHistory(in.up, in.series, in.version)
	if err != nil {
		os.RemoveAll(filepath.Join(f.work, ".git"))
		return err
	}
	st.AppliedHead = head
	if st.BuiltInputs == in.hash {
		if st.BuiltTree, err = f.git().line("rev-parse", "HEAD^{tree}"); err != nil {
			return err
		}
	}
	st.BuiltInputs = ""
	if err := f.writeState(st); err != nil {
		return err
	}
	f.logf("applied %d patches; %s is at %s", len(in.series), f.work, head[:12])
	if d, _ := f.dirty(); d != "" {
		f.logf("the tree's files differ from the series (edits made before the history existed):\n%s", d)
	}
	return nil
}

// extract writes the work tree's commits back into the repository.
func (f *fork) extract() error {
	if !f.isGit() {
		return fmt.Errorf("%s has no git history; run ./fork apply first", f.work)
	}
	if d, err := f.dirty(); err != nil {
		return err
	} else if d != "" {
		return fmt.Errorf("%s has uncommitted edits; commit them there first (one commit per concern, message 'pkg: what' and why)", f.work)
	}
	tmp, err := os.MkdirTemp("", "fork-extract-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := extractTo(f.git(), tmp); err != nil {
		return err
	}
	v, err := os.ReadFile(filepath.Join(tmp, "VERSION"))
	if err != nil {
		return err
	}
	if err := checkVersion("goroot/VERSION", v); err != nil {
		return err
	}
	if old, err := f.readVersion(); err == nil && upstreamOf(old) != upstreamOf(v) {
		return fmt.Errorf("goroot/VERSION names upstream %s, but the series is for %s: a new upstream release needs a new layout (edit VERSION, then ./fork apply)", upstreamOf(v), upstreamOf(old))
	}
	changed, err := syncInto(tmp, f.top)
	if err != nil {
		return err
	}
	for _, c := range changed {
		f.logf("%s", c)
	}
	// The work tree now is what apply would lay out from the repository.
	st := f.readState()
	if st.AppliedHead, err = f.git().line("rev-parse", "HEAD"); err != nil {
		return err
	}
	if st.Inputs, err = f.inputsHash(); err != nil {
		return err
	}
	if err := f.writeState(st); err != nil {
		return err
	}
	s, err := f.loadSeries()
	if err != nil {
		return err
	}
	n := 0
	for _, p := range s {
		n += len(p.files)
	}
	f.logf("extracted %d patches and %d new files", len(s), n)
	return nil
}

// status prints what the work tree holds.
func (f *fork) status(w io.Writer) error {
	if !exists(f.work) {
		fmt.Fprintf(w, "no work tree at %s (./make.bash or ./fork apply lays one out)\n", f.work)
		return nil
	}
	st := f.readState()
	h, err := f.inputsHash()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "work tree: %s\n", f.work)
	applied := "current"
	if st.Inputs != h {
		applied = "stale (patches/, src/ or VERSION changed since)"
	}
	fmt.Fprintf(w, "applied:   %s\n", applied)
	built, err := f.builtCurrent(st)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "built:     %s\n", yesNo(built, "current", "no (run ./make.bash)"))
	if !f.isGit() {
		fmt.Fprintf(w, "history:   none, a plain tree (./fork apply adds it, keeping the build)\n")
		edited, err := f.editedSince(st.LaidOut)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "edits:     %s\n", yesNo(len(edited) > 0, fmt.Sprintf("%d files changed since the layout", len(edited)), "none"))
		return nil
	}
	d, err := f.dirty()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "edits:     %s\n", yesNo(d != "", "uncommitted", "none"))
	head, err := f.git().line("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if head != st.AppliedHead {
		fmt.Fprintf(w, "commits:   not extracted (run ./fork extract)\n")
	}
	return nil
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// builtCurrent reports whether upstream's make.bash built the work tree's current sources.
func (f *fork) builtCurrent(st state) (bool, error) {
	if !exists(filepath.Join(f.work, "bin", "go")) {
		return false, nil
	}
	if !f.isGit() {
		return st.BuiltInputs != "" && st.BuiltInputs == st.Inputs, nil
	}
	tree, err := f.git().line("rev-parse", "HEAD^{tree}")
	return tree == st.BuiltTree, err
}

// make is make.bash: lay out a plain tree when the series changed, build it when its
// sources changed.
func (f *fork) make(stdout io.Writer) error {
	in, err := f.loadInputs()
	if err != nil {
		return err
	}
	st := f.readState()
	if !exists(f.work) || st.Inputs != in.hash {
		if err := f.safeToReplace(st); err != nil {
			return err
		}
		wasGit := f.isGit()
		if err := os.RemoveAll(f.work); err != nil {
			return err
		}
		f.logf("laying out %s from %s", f.work, in.up)
		if err := f.layoutPlain(in.up, in.series, in.version); err != nil {
			return err
		}
		st = state{Inputs: in.hash, LaidOut: time.Now()}
		if err := f.writeState(st); err != nil {
			return err
		}
		if wasGit { // a developer's tree stays one
			if err := f.historyInPlace(in, st); err != nil {
				return err
			}
			st = f.readState()
		}
	}
	built, err := f.builtCurrent(st)
	if err != nil {
		return err
	}
	version, _, _ := strings.Cut(string(in.version), "\n")
	if built {
		f.logf("%s is up to date (%s)", f.work, version)
	} else {
		f.logf("building %s with upstream's make.bash, GOROOT_BOOTSTRAP=%s", version, in.up)
		env := append(cleanEnv(), "GOROOT_BOOTSTRAP="+in.up)
		if err := runCmd(stdout, filepath.Join(f.work, "src"), env, "bash", "./make.bash"); err != nil {
			return fmt.Errorf("upstream's make.bash in %s/src failed: %w", f.work, err)
		}
		if f.isGit() {
			if st.BuiltTree, err = f.git().line("rev-parse", "HEAD^{tree}"); err != nil {
				return err
			}
		} else {
			st.BuiltInputs = st.Inputs
		}
		if err := f.writeState(st); err != nil {
			return err
		}
	}
	return runCmd(stdout, f.top, append(cleanEnv(), "GOTOOLCHAIN=local"), filepath.Join(f.work, "bin", "go"), "version")
}

// tools installs the fork's commands, built with the fork's go, in goroot/bin.
// Each is a module of its own under misc/ (misc/fpcheck, misc/golineage).
// make.bash leaves them out: built cold, they cost 7% of a make.bash.
func (f *fork) tools(stdout io.Writer) error {
	gobin := filepath.Join(f.work, "bin", "go")
	if !exists(gobin) {
		return fmt.Errorf("no %s; run ./make.bash first", gobin)
	}
	env := append(cleanEnv(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	bin := filepath.Join(f.work, "bin") + string(filepath.Separator)
	for _, c := range forkCommands {
		dir := filepath.Join(f.top, "misc", c)
		if err := runCmd(stdout, f.top, env, gobin, "build", "-C", dir, "-o", bin, "."); err != nil {
			return fmt.Errorf("building misc/%s failed: %w", c, err)
		}
	}
	f.logf("installed %s in %s", strings.Join(forkCommands, " and "), filepath.Join(f.work, "bin"))
	return nil
}

// forkCommands are the fork's commands ./fork tools builds, each the module in misc/NAME.
var forkCommands = []string{"fpcheck", "golineage"}
