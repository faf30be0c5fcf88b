package main

// The build steps: lay out and make the GOROOT, cross-compile the other
// ports, build the fork's commands, then assemble the output directory.

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type config struct {
	top, upstream, out, work, ports string
	keep, dirty                     bool
}

type releaser struct {
	cfg        config
	ports      []port
	log        io.Writer
	version    string // VERSION's first line, goX.Y.Z-SUFFIX
	vtime      string // RFC 3339, UTC
	sdkVersion string // the reader SDK's module version (misc/lineage/VERSION)
	work       string
	goroot     string
	host       port
}

// The fork's commands that ship in pkg/tool/GOOS_GOARCH, each the module in misc/NAME.
var forkCommands = []string{"fpcheck", "golineage"}

// The tools cmd/dist installs for a distribution (its toolsToInstall); a
// cross-compiled port needs the same set for cmd/distpack to pack.
var distCommands = []string{"cmd/go", "cmd/gofmt", "cmd/asm", "cmd/cgo", "cmd/compile", "cmd/cover", "cmd/fix", "cmd/link", "cmd/preprofile", "cmd/vet"}

// releaseGOFLAGS are the flags cmd/dist's toolenv sets when it builds a release's commands.
const releaseGOFLAGS = "-trimpath -ldflags=-w -gcflags=cmd/...=-dwarf=false"

func (r *releaser) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "release: "+format+"\n", args...)
}

func (r *releaser) release(stdout io.Writer) error {
	top, err := filepath.Abs(r.cfg.top)
	if err != nil {
		return err
	}
	r.cfg.top = top
	if r.cfg.out == "" {
		r.cfg.out = filepath.Join(top, "dist")
	}
	if err := r.readVersion(); err != nil {
		return err
	}
	if r.sdkVersion, err = readSDKVersion(top); err != nil {
		return err
	}
	if err := r.checkClean(); err != nil {
		return err
	}
	if r.cfg.work != "" {
		r.work, err = filepath.Abs(r.cfg.work)
		if err == nil {
			err = os.MkdirAll(r.work, 0o777)
		}
	} else {
		r.work, err = os.MkdirTemp("", "fpsafe-release-")
		if !r.cfg.keep {
			defer os.RemoveAll(r.work)
		}
	}
	if err != nil {
		return fmt.Errorf("creating the build directory: %w", err)
	}
	r.goroot = filepath.Join(r.work, "go")
	r.logf("building %s (time %s) in %s", r.version, r.vtime, r.work)

	steps := []struct {
		name string
		do   func() error
	}{
		{"make.bash", r.makeHost},
		{"packing the toolchain", r.pack},
		{"building the fork's commands", r.buildCommands},
		{"writing the output", r.writeOutput},
		{"checking the archives", r.checkArchives},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.do(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		r.logf("%s: done in %s", s.name, time.Since(start).Round(time.Second))
	}
	sums, err := os.ReadFile(filepath.Join(r.cfg.out, "SHA256SUMS"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s", sums)
	return nil
}

// readVersion reads the version from VERSION and decides the archives' time:
// VERSION's own time line if it has one, else the commit time of the last
// commit that changed VERSION. Both are fixed for a commit, so the time (which
// cmd/distpack puts on every archived file) does not depend on when or where
// the release is built.
func (r *releaser) readVersion() error {
	data, err := os.ReadFile(filepath.Join(r.cfg.top, "VERSION"))
	if err != nil {
		return fmt.Errorf("reading the version: %w (is -top the fork's repository?)", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	r.version = strings.TrimSpace(lines[0])
	if !strings.HasPrefix(r.version, "go1.") || !strings.Contains(r.version, "-") {
		return fmt.Errorf("VERSION: %q is not a suffixed Go version such as go1.2.3-fork1", r.version)
	}
	for _, l := range lines[1:] {
		if t, ok := strings.CutPrefix(strings.TrimSpace(l), "time "); ok {
			r.vtime = strings.TrimSpace(t)
		}
	}
	if r.vtime == "" {
		out, err := r.git("log", "-1", "--format=%ct", "--", "VERSION")
		if err != nil {
			return err
		}
		if out == "" {
			return fmt.Errorf("VERSION is not committed; commit it (its commit time dates the release)")
		}
		var sec int64
		if _, err := fmt.Sscan(out, &sec); err != nil {
			return fmt.Errorf("git log: bad commit time %q", out)
		}
		r.vtime = time.Unix(sec, 0).UTC().Format(time.RFC3339)
	}
	if _, err := time.Parse(time.RFC3339, r.vtime); err != nil {
		return fmt.Errorf("VERSION: bad time line: %w", err)
	}
	return nil
}

// checkClean refuses to release uncommitted inputs: the output would match no commit.
func (r *releaser) checkClean() error {
	out, err := r.git("status", "--porcelain", "--", "VERSION", "fork", "patches", "src", "misc")
	if err != nil {
		return err
	}
	if out != "" && !r.cfg.dirty {
		return fmt.Errorf("uncommitted changes (%s); commit them first, or pass -dirty for a build that matches no commit",
			strings.ReplaceAll(out, "\n", "; "))
	}
	return nil
}

func (r *releaser) git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", r.cfg.top}, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// cleanEnv is the caller's environment without Go and cgo settings, which
// must not leak into a release build; then extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GO") || strings.HasPrefix(kv, "CGO_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// goEnv is the environment for the built go command: clean, but keeping the
// caller's module download settings (the misc module has dependencies).
func (r *releaser) goEnv(p port, extra ...string) []string {
	env := cleanEnv("GOTOOLCHAIN=local", "GOENV=off",
		"GOCACHE="+filepath.Join(r.goroot, "pkg", "obj", "go-build"),
		"GOOS="+p.goos, "GOARCH="+p.goarch, "CGO_ENABLED=0")
	for _, k := range []string{"GOPATH", "GOMODCACHE", "GOPROXY", "GONOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOINSECURE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

func (r *releaser) runIn(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = r.log
	cmd.Stderr = r.log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s (in %s): %w", filepath.Base(name), strings.Join(args, " "), dir, err)
	}
	return nil
}

// makeHost lays out the GOROOT and runs make.bash, unless the build
// directory already holds a finished build of the same inputs.
func (r *releaser) makeHost() error {
	// What ./fork apply lays out: the committed series, new files and
	// VERSION (with -dirty, uncommitted changes are not part of the key).
	inputs, err := r.git("rev-parse", "HEAD:patches", "HEAD:src", "HEAD:VERSION")
	if err != nil {
		return fmt.Errorf("naming the build's inputs: %w", err)
	}
	stamp := filepath.Join(r.work, "make.done")
	want := fmt.Sprintf("%s\ntime %s\ninputs %s", r.version, r.vtime, strings.Join(strings.Fields(inputs), " "))
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		r.logf("reusing the finished build in %s", r.goroot)
		return r.readHost()
	}
	os.Remove(stamp)
	if err := os.RemoveAll(r.goroot); err != nil {
		return err
	}
	env := cleanEnv("FORK_WORK="+r.goroot, "FORK_UPSTREAM="+r.cfg.upstream)
	if err := r.runIn(r.cfg.top, env, filepath.Join(r.cfg.top, "fork"), "apply"); err != nil {
		return err
	}
	// The workflow tool's own bookkeeping is not part of the toolchain
	// (distpack would pack it).
	if err := os.Remove(filepath.Join(r.goroot, ".fork-state")); err != nil && !os.IsNotExist(err) {
		return err
	}
	version := fmt.Sprintf("%s\ntime %s\n", r.version, r.vtime)
	if err := os.WriteFile(filepath.Join(r.goroot, "VERSION"), []byte(version), 0o644); err != nil {
		return err
	}
	env = cleanEnv("GOROOT_BOOTSTRAP=" + r.cfg.upstream)
	if err := r.runIn(filepath.Join(r.goroot, "src"), env, "bash", "make.bash"); err != nil {
		return err
	}
	if err := r.readHost(); err != nil {
		return err
	}
	return os.WriteFile(stamp, []byte(want), 0o644)
}

func (r *releaser) goCmd() string { return filepath.Join(r.goroot, "bin", "go") }

// readHost asks the built go command for its host port.
func (r *releaser) readHost() error {
	cmd := exec.Command(r.goCmd(), "env", "GOHOSTOS", "GOHOSTARCH")
	cmd.Env = cleanEnv("GOTOOLCHAIN=local", "GOENV=off")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s env: %w", r.goCmd(), err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return fmt.Errorf("%s env GOHOSTOS GOHOSTARCH: unexpected output %q", r.goCmd(), out)
	}
	r.host = port{f[0], f[1]}
	return nil
}

// pack runs cmd/distpack for every port, as make.bash -distpack does for the
// host. Another port is first cross-compiled: the commands cmd/dist would
// install, with cmd/dist's release flags; cmd/distpack then packs them when
// run with GOOS and GOARCH set.
func (r *releaser) pack() error {
	if err := removeModuleCopies(r.goroot); err != nil {
		return err
	}
	if err := os.RemoveAll(r.distpackDir()); err != nil {
		return err
	}
	distpack := filepath.Join(r.work, "distpack")
	host := r.goEnv(r.host, "GOFLAGS="+releaseGOFLAGS)
	if err := r.runIn(r.goroot, host, r.goCmd(), "build", "-o", distpack, "cmd/distpack"); err != nil {
		return err
	}
	src := filepath.Join(r.distpackDir(), r.version+".src.tar.gz")
	var first string
	for _, p := range r.ports {
		if p != r.host {
			env := r.goEnv(p, "GOFLAGS="+releaseGOFLAGS)
			if err := r.runIn(r.goroot, env, r.goCmd(), append([]string{"install"}, distCommands...)...); err != nil {
				return err
			}
		}
		if err := r.runIn(r.goroot, r.goEnv(p, "GOROOT="+r.goroot), distpack); err != nil {
			return err
		}
		h, err := fileHash(src)
		if err != nil {
			return err
		}
		if first == "" {
			first = h
		} else if h != first {
			return fmt.Errorf("cmd/distpack wrote a different %s for %s; the source tree changed during the build", filepath.Base(src), p.dash())
		}
	}
	return nil
}

// removeModuleCopies deletes the _go.mod files that sit next to a go.mod. The
// pristine GOROOT comes from the golang.org/toolchain module, in which
// cmd/distpack renamed each go.mod to _go.mod, and the go command restored
// go.mod beside it on download. Left in place, cmd/distpack's own renaming
// would put two _go.mod entries in the module zip, which the go command
// rejects ("multiple entries for file").
func removeModuleCopies(goroot string) error {
	return filepath.WalkDir(filepath.Join(goroot, "src"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "_go.mod" {
			return err
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "go.mod")); err != nil {
			return nil
		}
		return os.Remove(p)
	})
}

func (r *releaser) distpackDir() string { return filepath.Join(r.goroot, "pkg", "distpack") }

func (r *releaser) toolsDir(p port) string { return filepath.Join(r.work, "tools", p.under()) }

// buildCommands builds fpcheck and golineage for every port, each from its
// module (misc/fpcheck, misc/golineage).
func (r *releaser) buildCommands() error {
	for _, p := range r.ports {
		env := r.goEnv(p, "GOFLAGS=-mod=readonly")
		for _, c := range forkCommands {
			args := []string{"build", "-trimpath", "-buildvcs=false", "-o", r.toolsDir(p) + string(filepath.Separator), "."}
			if err := r.runIn(filepath.Join(r.cfg.top, "misc", c), env, r.goCmd(), args...); err != nil {
				return err
			}
		}
	}
	return nil
}

func fileHash(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// emulator returns the command that runs p's binaries here: none for the
// host's own port, qemu-user for another Linux architecture.
func emulator(p port) (string, bool) {
	if p.goos == runtime.GOOS && p.goarch == runtime.GOARCH {
		return "", true
	}
	if p.goos != "linux" || runtime.GOOS != "linux" {
		return "", false
	}
	arch := map[string]string{"arm64": "aarch64", "amd64": "x86_64", "386": "i386", "riscv64": "riscv64",
		"ppc64le": "ppc64le", "s390x": "s390x", "loong64": "loongarch64"}[p.goarch]
	if arch == "" {
		return "", false
	}
	path, err := exec.LookPath("qemu-" + arch)
	return path, err == nil
}
