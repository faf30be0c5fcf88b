package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// vettool is fpcheck built as a binary, for go vet -vettool, which runs
// it as a separate process; every other test calls cli in process.
var vettool struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if vettool.dir != "" {
		os.RemoveAll(vettool.dir)
	}
	os.Exit(code)
}

// fpcheckBinary builds fpcheck once and returns its path.
func fpcheckBinary(t *testing.T) string {
	t.Helper()
	vettool.once.Do(func() {
		vettool.dir, vettool.err = os.MkdirTemp("", "fpcheck-test")
		if vettool.err != nil {
			return
		}
		vettool.path = filepath.Join(vettool.dir, "fpcheck")
		out, err := exec.Command(goTool(), "build", "-o", vettool.path, ".").CombinedOutput()
		if err != nil {
			vettool.err = fmt.Errorf("building fpcheck: %v\n%s", err, out)
		}
	})
	if vettool.err != nil {
		t.Fatal(vettool.err)
	}
	return vettool.path
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// isFork reports whether the toolchain running the tests is this fork,
// whose binaries must pass fpcheck binary.
func isFork() bool { return strings.Contains(runtime.Version(), "-fpsafe") }

var upstream struct {
	once  sync.Once
	goBin string
	why   string
}

// upstreamGo returns the go command of the pristine upstream release the
// repository's VERSION names, from the module cache (fetched through the
// toolchain mechanism), or skips the test.
func upstreamGo(t *testing.T) string {
	goBin, why := upstreamGoBin()
	if goBin == "" {
		t.Skip(why)
	}
	return goBin
}

// upstreamGoBin is upstreamGo without the skip: the go command, or "" and why.
func upstreamGoBin() (string, string) {
	upstream.once.Do(func() {
		v, err := os.ReadFile("../../VERSION")
		if err != nil {
			upstream.why = fmt.Sprintf("no upstream release: %v", err)
			return
		}
		first, _, _ := strings.Cut(string(v), "\n")
		release, _, _ := strings.Cut(first, "-")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool(), "env", "GOROOT")
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+release)
		out, err := cmd.Output()
		if err != nil {
			upstream.why = fmt.Sprintf("upstream %s unavailable (GOTOOLCHAIN=%[1]s go env GOROOT: %v)", release, err)
			return
		}
		root := strings.TrimSpace(string(out))
		if v, err := os.ReadFile(filepath.Join(root, "VERSION")); err != nil || !strings.HasPrefix(string(v), release+"\n") && string(v) != release {
			upstream.why = fmt.Sprintf("GOTOOLCHAIN=%s did not give pristine %[1]s at %s", release, root)
			return
		}
		upstream.goBin = filepath.Join(root, "bin", "go")
	})
	return upstream.goBin, upstream.why
}

// build builds the package pkg (relative to the module) with goBin into a
// temporary file and returns its path.
func build(t *testing.T, goBin, pkg, name string, env []string, flags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	args := append([]string{"build", "-o", out}, flags...)
	args = append(args, pkg)
	cmd := exec.Command(goBin, args...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	cmd.Env = append(cmd.Env, env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", goBin, strings.Join(args, " "), err, b)
	}
	return out
}

// fpcheck runs fpcheck in process and returns its exit code and output.
func fpcheck(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// fpcheckIn runs fpcheck in process in directory dir with the environment
// variables env (NAME=VALUE) set, restoring both afterwards.
func fpcheckIn(t *testing.T, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Run(strings.Join(args, " "), func(t *testing.T) {
		t.Chdir(dir)
		for _, e := range env {
			k, v, _ := strings.Cut(e, "=")
			t.Setenv(k, v)
		}
		code, stdout, stderr = fpcheck(t, args...)
	})
	return code, stdout, stderr
}

func haveCgo(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		if _, err := exec.LookPath("cc"); err != nil {
			t.Skip("no C compiler: cgo programs cannot be built")
		}
	}
}
