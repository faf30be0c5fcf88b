package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A fork is one repository and its work tree.
type fork struct {
	top  string    // the repository: patches/, src/, VERSION
	work string    // the work tree, goroot/
	log  io.Writer // progress and errors
}

func newFork(top string, log io.Writer) (*fork, error) {
	abs, err := filepath.Abs(top)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(abs, "patches")); err != nil {
		return nil, fmt.Errorf("%s is not the fork's repository (no patches/); run ./fork from its top", abs)
	}
	work := os.Getenv("FORK_WORK")
	if work == "" {
		work = filepath.Join(abs, "goroot")
	}
	if work, err = filepath.Abs(work); err != nil {
		return nil, err
	}
	return &fork{top: abs, work: work, log: log}, nil
}

func (f *fork) logf(format string, args ...any) { fmt.Fprintf(f.log, "fork: "+format+"\n", args...) }

// upstream returns the pristine upstream GOROOT of the release VERSION
// names, checking its version.
func (f *fork) upstream() (string, error) {
	v, err := f.readVersion()
	if err != nil {
		return "", err
	}
	upstreamVersion := upstreamOf(v)
	up := os.Getenv("FORK_UPSTREAM")
	if up == "" {
		gocmd, err := exec.LookPath("go")
		if err != nil {
			if _, err2 := os.Stat("/usr/local/go/bin/go"); err2 != nil {
				return "", fmt.Errorf("no go command on PATH (needed to fetch %s); install Go 1.21 or later", upstreamVersion)
			}
			gocmd = "/usr/local/go/bin/go"
		}
		cmd := exec.Command(gocmd, "env", "GOROOT")
		cmd.Env = append(cleanEnv(), "GOTOOLCHAIN="+upstreamVersion)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("cannot fetch upstream %s with 'GOTOOLCHAIN=%[1]s go env GOROOT' (is the Go module proxy reachable?): %v: %s", upstreamVersion, err, strings.TrimSpace(stderr.String()))
		}
		up = strings.TrimSpace(string(out))
	}
	uv, err := os.ReadFile(filepath.Join(up, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("%s is not a Go root (no VERSION): set FORK_UPSTREAM to a pristine %s GOROOT", up, upstreamVersion)
	}
	if _, err := os.Stat(filepath.Join(up, "src", "runtime")); err != nil {
		return "", fmt.Errorf("%s is not a Go root (no src/runtime)", up)
	}
	if first, _, _ := strings.Cut(string(uv), "\n"); first != upstreamVersion {
		return "", fmt.Errorf("upstream %s is %s, not %s", up, first, upstreamVersion)
	}
	return up, nil
}

// cleanEnv is the environment without the Go settings of the caller, which must not leak
// into builds of other trees.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOROOT", "GOBIN", "GOFLAGS", "GOEXPERIMENT", "GOOS", "GOARCH", "GO111MODULE", "GOTOOLCHAIN":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// loadSeries reads patches/series and checks that every file it names exists.
func (f *fork) loadSeries() (series, error) {
	name := filepath.Join(f.top, "patches", "series")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading the series: %w (patches/series lists the patches in order)", err)
	}
	s, err := parseSeries("patches/series", data)
	if err != nil {
		return nil, err
	}
	for _, p := range s {
		if _, err := os.Stat(filepath.Join(f.top, "patches", p.name)); err != nil {
			return nil, fmt.Errorf("patches/series names patch %s, but patches/%[1]s does not exist", p.name)
		}
		for _, nf := range p.files {
			fi, err := os.Stat(filepath.Join(f.top, filepath.FromSlash(nf)))
			if err != nil || !fi.Mode().IsRegular() {
				return nil, fmt.Errorf("patches/series lists new file %s under %s, but the repository has no file %[1]s", nf, p.name)
			}
		}
	}
	return s, nil
}

// readVersion reads and checks the repository's VERSION.
func (f *fork) readVersion() ([]byte, error) {
	v, err := os.ReadFile(filepath.Join(f.top, "VERSION"))
	if err != nil {
		return nil, fmt.Errorf("no VERSION file in %s: %w", f.top, err)
	}
	return v, checkVersion("VERSION", v)
}

// versionRE matches the first line of VERSION: the upstream release the fork
// is built from (the one place the repository names it) and the fork's
// suffix, as in goX.Y.Z-fpsafe1.
var versionRE = regexp.MustCompile(`^go[1-9][0-9]*\.[0-9]+(\.[0-9]+)?-[0-9A-Za-z][0-9A-Za-z.]*$`)

func checkVersion(name string, v []byte) error {
	lines := strings.Split(strings.TrimSuffix(string(v), "\n"), "\n")
	if !versionRE.MatchString(lines[0]) {
		return fmt.Errorf("%s: first line must be goX.Y.Z-SUFFIX (the upstream release, then the fork's suffix), not %q", name, lines[0])
	}
	if len(lines) > 2 || len(lines) == 2 && !strings.HasPrefix(lines[1], "time ") {
		return fmt.Errorf("%s: only a 'time RFC3339' line may follow the version", name)
	}
	return nil
}

// upstreamOf is the upstream release a checked VERSION names.
func upstreamOf(v []byte) string {
	first, _, _ := strings.Cut(string(v), "\n")
	up, _, _ := strings.Cut(first, "-")
	return up
}

// inputsHash identifies what a layout is made of: the upstream version and every file
// under patches/ and src/ and VERSION (path, executable bit, content).
func (f *fork) inputsHash() (string, error) {
	v, err := f.readVersion()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", upstreamOf(v))
	var files []string
	for _, d := range []string{"patches", "src", "VERSION"} {
		err := filepath.WalkDir(filepath.Join(f.top, d), func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !de.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	sort.Strings(files)
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(f.top, p)
		fmt.Fprintf(h, "%s %v %x\n", filepath.ToSlash(rel), fi.Mode()&0o111 != 0, sha256.Sum256(data))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// state is what the tool remembers about a work tree, in WORK/.fork-state.
type state struct {
	Inputs      string    // inputsHash of the layout
	LaidOut     time.Time // when the layout finished (plain trees: later edits are unsaved work)
	AppliedHead string    `json:",omitempty"` // git trees: HEAD when it last matched the repository
	BuiltInputs string    `json:",omitempty"` // plain trees: the inputs upstream's make.bash last built
	BuiltTree   string    `json:",omitempty"` // git trees: the HEAD tree last built
}

const stateFile = ".fork-state"

func (f *fork) readState() state {
	var st state
	if data, err := os.ReadFile(filepath.Join(f.work, stateFile)); err == nil {
		json.Unmarshal(data, &st)
	} else if head, err := os.ReadFile(filepath.Join(f.work, ".git", "fork-applied-head")); err == nil {
		// A tree laid out by the former shell script: its HEAD when applied or extracted.
		st.AppliedHead = strings.TrimSpace(string(head))
	}
	return st
}

func (f *fork) writeState(st state) error {
	data, err := json.MarshalIndent(st, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(f.work, stateFile), append(data, '\n'), 0o644)
}

// isGit reports whether the work tree has a git history.
func (f *fork) isGit() bool {
	_, err := os.Stat(filepath.Join(f.work, ".git"))
	return err == nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
