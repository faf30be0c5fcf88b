package main

// TestSwitchThroughProxy checks a release as a user meets it: a stock go
// command, with nothing of the fork installed, switches to the fork through
// the GOPROXY tree in dist/proxy. all.bash runs it after ./release.bash:
//
//	FPSAFE_DIST=dist FPSAFE_STOCK_GO=path/to/upstream/go [FPSAFE_NEWER_GO=...] go test -run TestSwitch ./release
//
// FPSAFE_STOCK_GO (default: go on PATH) must be an upstream go 1.21 or later
// older than the fork's base version; FPSAFE_NEWER_GO, if set, is an upstream
// go at or above the base version, with which the test shows that a go.mod
// toolchain line does not switch down while GOTOOLCHAIN still does.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// switchEnv is a user's environment with only the release's proxy to fetch from.
type switchEnv struct {
	t    *testing.T
	env  []string
	dir  string // a module pinning the fork with a toolchain line
	tool string // the fork's toolchain name, go1.27.3-fpsafe1
}

func (s *switchEnv) run(gocmd, gotoolchain string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command(gocmd, args...)
	cmd.Dir = s.dir
	cmd.Env = append(s.env, "GOTOOLCHAIN="+gotoolchain)
	var stderr strings.Builder
	cmd.Stderr = &stderr // "go: downloading go1.27.3-fpsafe1" and the like
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("GOTOOLCHAIN=%s %s %s: %v\n%s%s", gotoolchain, gocmd, strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func newSwitchEnv(t *testing.T, dist string) *switchEnv {
	dist, err := filepath.Abs(dist)
	if err != nil {
		t.Fatal(err)
	}
	list, err := os.ReadFile(filepath.Join(dist, "proxy", toolchainModule, "@v", "list"))
	if err != nil {
		t.Fatalf("FPSAFE_DIST=%s holds no GOPROXY tree (run ./release.bash): %v", dist, err)
	}
	suffix := "." + runtime.GOOS + "-" + runtime.GOARCH
	var tool string
	for _, v := range strings.Fields(string(list)) {
		if name, ok := strings.CutSuffix(strings.TrimPrefix(v, modVersionBase+"-"), suffix); ok {
			tool = name
		}
	}
	if tool == "" {
		t.Fatalf("%s/proxy lists no toolchain for %s:\n%s", dist, suffix[1:], list)
	}
	tmp := t.TempDir()
	s := &switchEnv{t: t, dir: filepath.Join(tmp, "hello"), tool: tool}
	s.env = cleanEnv(
		"GOPROXY=file://"+filepath.ToSlash(filepath.Join(dist, "proxy")),
		"GONOSUMDB="+toolchainModule, "GOENV=off", "GOFLAGS=",
		"GOPATH="+filepath.Join(tmp, "gopath"), "GOMODCACHE="+filepath.Join(tmp, "mod"),
		"GOCACHE="+filepath.Join(tmp, "cache"))
	os.MkdirAll(s.dir, 0o777)
	gomod := fmt.Sprintf("module example.com/hello\n\ngo 1.21\n\ntoolchain %s\n", tool)
	main := "package main\n\nimport (\n\t\"fmt\"\n\t\"runtime\"\n)\n\nfunc main() { fmt.Println(runtime.Version()) }\n"
	os.WriteFile(filepath.Join(s.dir, "go.mod"), []byte(gomod), 0o644)
	os.WriteFile(filepath.Join(s.dir, "main.go"), []byte(main), 0o644)
	return s
}

// goVersion returns gocmd's version (go1.26.8) without switching.
func (s *switchEnv) goVersion(gocmd string) string {
	s.t.Helper()
	return s.run(gocmd, "local", "env", "GOVERSION")
}

// versionLess compares go1.X.Y versions numerically, ignoring any suffix.
func versionLess(a, b string) bool {
	parse := func(v string) (n [3]int) {
		v, _, _ = strings.Cut(strings.TrimPrefix(v, "go"), "-")
		for i, f := range strings.SplitN(v, ".", 3) {
			fmt.Sscan(f, &n[i])
		}
		return n
	}
	pa, pb := parse(a), parse(b)
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func TestSwitchThroughProxy(t *testing.T) {
	dist := os.Getenv("FPSAFE_DIST")
	if dist == "" {
		t.Skip("set FPSAFE_DIST to the output of ./release.bash (dist/) to check toolchain switching")
	}
	stock := os.Getenv("FPSAFE_STOCK_GO")
	if stock == "" {
		var err error
		if stock, err = exec.LookPath("go"); err != nil {
			t.Fatal("no go on PATH; set FPSAFE_STOCK_GO to an upstream go 1.21 or later")
		}
	}
	s := newSwitchEnv(t, dist)
	t.Cleanup(func() { s.run(stock, "local", "clean", "-modcache") }) // the module cache is read-only

	sv := s.goVersion(stock)
	if strings.Contains(sv, "-") || !versionLess(sv, s.tool) {
		t.Fatalf("FPSAFE_STOCK_GO=%s is %s; want an upstream go older than %s", stock, sv, s.tool)
	}

	// GOTOOLCHAIN names the fork: the stock go downloads it and runs it.
	want := fmt.Sprintf("go version %s %s/%s", s.tool, runtime.GOOS, runtime.GOARCH)
	if got := s.run(stock, s.tool, "version"); got != want {
		t.Errorf("GOTOOLCHAIN=%s go version (with %s): %q, want %q", s.tool, sv, got, want)
	}

	// A go.mod toolchain line selects the fork under GOTOOLCHAIN=auto, and the
	// binary says so. (The fork's go.env says GOTOOLCHAIN=local, which must not
	// stop the switch into the fork: the switched-to go command is told its target.)
	if got := s.run(stock, "auto", "env", "GOVERSION"); got != s.tool {
		t.Errorf("go env GOVERSION in a module pinning %s: %q", s.tool, got)
	}
	s.run(stock, "auto", "build", "-o", "hello", ".")
	if got := s.run(filepath.Join(s.dir, "hello"), "local"); got != s.tool {
		t.Errorf("the built program's runtime.Version() = %q, want %q", got, s.tool)
	}
	info := s.run(stock, "local", "version", "-m", "hello")
	if first, _, _ := strings.Cut(info, "\n"); first != "hello: "+s.tool {
		t.Errorf("go version -m hello:\n%s\nwant its first line to be %q", info, "hello: "+s.tool)
	}

	// The fork's commands are found by go tool, through the switch.
	tools := strings.Fields(s.run(stock, "auto", "tool"))
	for _, c := range forkCommands {
		found := false
		for _, f := range tools {
			found = found || f == c
		}
		if !found {
			t.Errorf("go tool (switched to %s) does not list %s: %v", s.tool, c, tools)
		}
	}

	newer := os.Getenv("FPSAFE_NEWER_GO")
	if newer == "" {
		return
	}
	// A go at or above the fork's base version never switches down for a
	// toolchain line, so the pin silently loses; GOTOOLCHAIN still switches.
	nv := s.goVersion(newer)
	if versionLess(nv, s.tool) {
		t.Fatalf("FPSAFE_NEWER_GO=%s is %s, not at or above %s", newer, nv, s.tool)
	}
	if got := s.run(newer, "auto", "env", "GOVERSION"); got != nv {
		t.Errorf("with %s, the toolchain line selected %q; expected the pin to lose to %s (update doc/install.md if this changed)", nv, got, nv)
	}
	if got := s.run(newer, s.tool, "env", "GOVERSION"); got != s.tool {
		t.Errorf("with %s, GOTOOLCHAIN=%s selected %q", nv, s.tool, got)
	}
}

func TestVersionLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"go1.26.8", "go1.27.3-fpsafe1", true},
		{"go1.27.3", "go1.27.3-fpsafe1", false},
		{"go1.27.10", "go1.27.3-fpsafe1", false},
		{"go1.9.1", "go1.10", true},
	} {
		if got := versionLess(tc.a, tc.b); got != tc.less {
			t.Errorf("versionLess(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
