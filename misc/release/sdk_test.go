package main

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadSDKVersion(t *testing.T) {
	for _, tc := range []struct {
		file string
		ok   bool
	}{
		{"v0.1.0\n", true},
		{"v1.2.3", true},
		{"v0.2.0-rc.1\n", true},
		{"0.1.0\n", false},          // no v
		{"v0.1\n", false},           // not canonical
		{"v0.1.0+build\n", false},   // build metadata
		{"v2.0.0\n", false},         // needs the path fpsafe.dev/misc/v2
		{"v0.1.0\nv0.2.0\n", false}, // one line
	} {
		top := t.TempDir()
		os.MkdirAll(filepath.Join(top, "misc", "lineage"), 0o777)
		os.WriteFile(filepath.Join(top, filepath.FromSlash(sdkVersionFile)), []byte(tc.file), 0o644)
		v, err := readSDKVersion(top)
		if (err == nil) != tc.ok {
			t.Errorf("VERSION %q: version %q, err %v; want ok=%v", tc.file, v, err, tc.ok)
		}
	}
}

// TestRepositorySDK checks the repository's SDK module: its version file,
// and the files its zip would hold (the SDK and the C header, none of the
// commands' modules).
func TestRepositorySDK(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readSDKVersion(top); err != nil {
		t.Fatal(err)
	}
	r := &releaser{cfg: config{top: top}}
	files, err := r.sdkFiles()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
	}
	for _, want := range []string{"go.mod", "lineage/lineage.go", "lineage/VERSION", sdkHeader} {
		if !slices.Contains(paths, want) {
			t.Errorf("the SDK module has no %s", want)
		}
	}
	for _, p := range paths {
		for _, c := range append([]string{"allbash", "fork", "release"}, forkCommands...) {
			if strings.HasPrefix(p, c+"/") {
				t.Errorf("the SDK module holds %s, a file of the module misc/%s", p, c)
			}
		}
	}
}

// TestSDKModuleFiles writes the SDK module of a small repository twice: the
// outputs are equal, and the zip holds what the go command's rules keep.
func TestSDKModuleFiles(t *testing.T) {
	top := gitRepo(t, "go1.27.3-x1\n")
	for name, content := range map[string]string{
		".gitignore":                           "*.bin\n",
		"misc/go.mod":                          "module fpsafe.dev/misc\n\ngo 1.27\n",
		"misc/lineage/l.go":                    "package lineage\n",
		"misc/lineage/VERSION":                 "v0.1.0\n",
		"misc/lineage/include/golineage_abi.h": "/* header */\n",
		"misc/lineage/testdata/x.txt":          "data\n",
		"misc/lineage/out.bin":                 "ignored by git\n",
		"misc/tool/go.mod":                     "module fpsafe.dev/misc/tool\n",
		"misc/tool/main.go":                    "package main\n",
		"misc/vendor/v/v.go":                   "package v\n",
		"other/o.go":                           "package other\n",
	} {
		p := filepath.Join(top, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o777)
		os.WriteFile(p, []byte(content), 0o644)
	}
	r := &releaser{cfg: config{top: top}, vtime: "2027-01-02T03:04:05Z", sdkVersion: "v0.1.0"}
	var outs [2]string
	for i := range outs {
		outs[i] = t.TempDir()
		if err := r.writeSDK(outs[i]); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join("fpsafe.dev", "misc", "@v")
	for _, f := range []string{"list", "v0.1.0.info", "v0.1.0.mod", "v0.1.0.zip"} {
		a, err := os.ReadFile(filepath.Join(outs[0], dir, f))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(outs[1], dir, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", f)
		}
	}
	for f, want := range map[string]string{
		"list":        "v0.1.0\n",
		"v0.1.0.info": `{"Version":"v0.1.0", "Time":"2027-01-02T03:04:05Z"}` + "\n",
		"v0.1.0.mod":  "module fpsafe.dev/misc\n\ngo 1.27\n",
	} {
		if got, _ := os.ReadFile(filepath.Join(outs[0], dir, f)); string(got) != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	zr, err := zip.OpenReader(filepath.Join(outs[0], dir, "v0.1.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if want := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC); !f.Modified.Equal(want) {
			t.Errorf("%s: time %v, want %v", f.Name, f.Modified, want)
		}
	}
	want := []string{
		"fpsafe.dev/misc@v0.1.0/go.mod",
		"fpsafe.dev/misc@v0.1.0/lineage/VERSION",
		"fpsafe.dev/misc@v0.1.0/lineage/include/golineage_abi.h",
		"fpsafe.dev/misc@v0.1.0/lineage/l.go",
		"fpsafe.dev/misc@v0.1.0/lineage/testdata/x.txt",
	}
	if !slices.Equal(names, want) {
		t.Errorf("zip entries:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}

	// The C header is part of the SDK: a module without it is refused.
	os.Remove(filepath.Join(top, "misc", filepath.FromSlash(sdkHeader)))
	if err := r.writeSDK(t.TempDir()); err == nil || !strings.Contains(err.Error(), "golineage_abi.h") {
		t.Errorf("no C header: err = %v, want a refusal naming it", err)
	}
}

// TestSDKThroughProxy checks the reader SDK as a user meets it: a module
// outside the repository gets fpsafe.dev/misc/lineage from the release's
// GOPROXY tree, at the version misc/lineage/VERSION names, then vets, builds
// and runs a program that uses it. all.bash runs it after ./release.bash,
// with TestSwitchThroughProxy:
//
//	FPSAFE_DIST=dist go test -run TestSDKThroughProxy .
//
// The go command is the one on PATH (all.bash's is the fork's). The test
// uses no network: GOPROXY is the release's tree, then the caller's module
// cache (for the SDK's dependencies, x/arch and x/sys, which building the
// commands put there), then off; the user's go.sum starts with the lines of
// the SDK's own go.sum, so the checksum database is asked for nothing but
// fpsafe.dev, which GONOSUMDB=fpsafe.dev exempts, as doc/install.md says.
func TestSDKThroughProxy(t *testing.T) {
	dist := os.Getenv("FPSAFE_DIST")
	if dist == "" {
		t.Skip("set FPSAFE_DIST to the output of ./release.bash (dist/) to check the reader SDK's module")
	}
	dist, err := filepath.Abs(dist)
	if err != nil {
		t.Fatal(err)
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("no go on PATH")
	}
	version, err := readSDKVersion("../..")
	if err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(dist, "proxy")
	list, err := os.ReadFile(filepath.Join(proxy, sdkModule, "@v", "list"))
	if err != nil {
		t.Fatalf("FPSAFE_DIST=%s holds no module %s (run ./release.bash): %v", dist, sdkModule, err)
	}
	if !slices.Contains(strings.Fields(string(list)), version) {
		t.Fatalf("%s/proxy lists %s versions %q; want %s (%s)", dist, sdkModule, strings.Fields(string(list)), version, sdkVersionFile)
	}

	// The zip holds the SDK and its C header, none of the commands.
	zr, err := zip.OpenReader(filepath.Join(proxy, sdkModule, "@v", version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var sdkSum []byte
	for _, f := range zr.File {
		name := strings.TrimPrefix(f.Name, sdkModule+"@"+version+"/")
		names = append(names, name)
		if name == "go.sum" {
			rc, err := f.Open()
			if err == nil {
				sdkSum, err = io.ReadAll(rc)
				rc.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	zr.Close()
	for _, want := range []string{"go.mod", "lineage/lineage.go", sdkHeader} {
		if !slices.Contains(names, want) {
			t.Errorf("%s@%s's zip has no %s", sdkModule, version, want)
		}
	}
	for _, n := range names {
		if c, _, _ := strings.Cut(n, "/"); slices.Contains(forkCommands, c) {
			t.Errorf("%s@%s's zip holds %s, a file of the module misc/%s", sdkModule, version, n, c)
		}
	}

	// A user's module, with nothing of the repository but the proxy.
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "sdkuser")
	os.MkdirAll(dir, 0o777)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/sdkuser\n\ngo 1.27\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(sdkUserMain), 0o644)
	os.WriteFile(filepath.Join(dir, "go.sum"), sdkSum, 0o644)
	callerEnv := func(key, def string) string {
		out, err := exec.Command(gocmd, "env", key).Output()
		if v := strings.TrimSpace(string(out)); err == nil && v != "" {
			return v
		}
		return def
	}
	proxies := []string{"file://" + filepath.ToSlash(proxy)}
	if mc := callerEnv("GOMODCACHE", ""); mc != "" {
		proxies = append(proxies, "file://"+filepath.ToSlash(filepath.Join(mc, "cache", "download")))
	}
	env := cleanEnv(
		"GOPROXY="+strings.Join(append(proxies, "off"), ","),
		"GONOSUMDB=fpsafe.dev", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOENV=off",
		"GOPATH="+filepath.Join(tmp, "gopath"), "GOMODCACHE="+filepath.Join(tmp, "mod"),
		"GOCACHE="+callerEnv("GOCACHE", filepath.Join(tmp, "cache")))
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { run(gocmd, "clean", "-modcache") }) // the module cache is read-only

	run(gocmd, "get", "fpsafe.dev/misc/lineage@"+version)
	gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if want := sdkModule + " " + version; !strings.Contains(string(gomod), want) {
		t.Errorf("go.mod after go get does not require %s:\n%s", want, gomod)
	}
	run(gocmd, "vet", "./...")
	run(gocmd, "build", "-o", "sdkuser", ".")
	out := run(filepath.Join(dir, "sdkuser"))
	if !strings.HasPrefix(out, "lineage ABI ") {
		t.Errorf("sdkuser printed %q", out)
	}
	t.Logf("%s@%s from %s: %s", sdkModule, version, proxy, strings.TrimSpace(out))
}

// sdkUserMain is a program outside the repository that uses the SDK: it opens
// a process that cannot exist (above Linux's largest pid_max) and must be told so.
const sdkUserMain = `package main

import (
	"context"
	"fmt"
	"os"

	"fpsafe.dev/misc/lineage"
)

func main() {
	p, err := lineage.OpenPID(context.Background(), 1<<22+1, nil)
	if err == nil {
		p.Close()
		fmt.Fprintln(os.Stderr, "sdkuser: OpenPID of a process that cannot exist succeeded")
		os.Exit(1)
	}
	fmt.Printf("lineage ABI %d: %v\n", lineage.ABIVersion, err)
}
`
