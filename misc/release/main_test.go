package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageNamesEveryFlag(t *testing.T) {
	var cfg config
	newFlags(&cfg).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(usageText, "-"+f.Name+" ") {
			t.Errorf("usage text does not name -%s", f.Name)
		}
	})
	if !strings.Contains(usageText, "Exit codes") {
		t.Errorf("usage text does not give the exit codes")
	}
}

func TestBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-top", "x"},
		{"-top", "x", "-upstream", "y", "extra"},
		{"-top", "x", "-upstream", "y", "-ports", "linux"},
		{"-top", "x", "-upstream", "y", "-ports", "windows/amd64"},
		{"-nosuchflag"},
	} {
		var stdout, stderr bytes.Buffer
		if code := cli(args, &stdout, &stderr); code != 2 {
			t.Errorf("release %s: exit %d, want 2; stderr:\n%s", strings.Join(args, " "), code, &stderr)
		}
		if first, _, _ := strings.Cut(stderr.String(), "\n"); !strings.HasPrefix(first, "release: ") || !strings.Contains(stderr.String(), "usage:") {
			t.Errorf("release %s: stderr %q, want one error line then the usage", strings.Join(args, " "), stderr.String())
		}
	}
}

func TestNotARepository(t *testing.T) {
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	code := cli([]string{"-top", dir, "-upstream", dir}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "is -top the fork's repository?") {
		t.Errorf("exit %d, stderr %q; want 1 and a hint about -top", code, &stderr)
	}
}

// gitRepo makes a repository with a committed VERSION and returns it.
func gitRepo(t *testing.T, version string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "VERSION"), []byte(version), 0o644)
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "VERSION"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "v"},
	} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2026-12-02T14:08:24Z", "GIT_AUTHOR_DATE=2026-12-02T14:08:24Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func TestVersionTime(t *testing.T) {
	for _, tc := range []struct{ file, time string }{
		{"go1.27.3-x1\n", "2026-12-02T14:08:24Z"},                            // commit time of VERSION
		{"go1.27.3-x1\ntime 2027-01-02T03:04:05Z\n", "2027-01-02T03:04:05Z"}, // its own time line
	} {
		r := &releaser{cfg: config{top: gitRepo(t, tc.file)}}
		if err := r.readVersion(); err != nil {
			t.Fatal(err)
		}
		if r.version != "go1.27.3-x1" || r.vtime != tc.time {
			t.Errorf("VERSION %q: got %s, time %s; want go1.27.3-x1, time %s", tc.file, r.version, r.vtime, tc.time)
		}
	}
	r := &releaser{cfg: config{top: gitRepo(t, "go1.27.3\n")}}
	if err := r.readVersion(); err == nil {
		t.Errorf("unsuffixed VERSION go1.27.3 accepted; a fork's release must not claim upstream's version")
	}
}

func TestCheckClean(t *testing.T) {
	top := gitRepo(t, "go1.27.3-x1\n")
	r := &releaser{cfg: config{top: top}}
	if err := r.checkClean(); err != nil {
		t.Fatalf("clean tree: %v", err)
	}
	os.MkdirAll(filepath.Join(top, "misc"), 0o777)
	os.WriteFile(filepath.Join(top, "misc", "new.go"), nil, 0o644)
	if err := r.checkClean(); err == nil || !strings.Contains(err.Error(), "misc/") {
		t.Errorf("untracked misc/new.go: err = %v, want a refusal naming it", err)
	}
	r.cfg.dirty = true
	if err := r.checkClean(); err != nil {
		t.Errorf("-dirty: %v", err)
	}
}

func TestWriteSums(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "proxy", "@v"), 0o777)
	os.WriteFile(filepath.Join(dir, "b.tar.gz"), []byte("b"), 0o644)
	os.WriteFile(filepath.Join(dir, "proxy", "@v", "list"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte("stale"), 0o644)
	if err := writeSums(dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	want := "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.tar.gz\n" +
		"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  proxy/@v/list\n"
	if string(got) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, want)
	}
	if sha, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command(sha, "-c", "--quiet", "SHA256SUMS")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c: %v\n%s", err, out)
		}
	}
}

func TestCheckReplaceable(t *testing.T) {
	dir := t.TempDir()
	if err := checkReplaceable(filepath.Join(dir, "none")); err != nil {
		t.Errorf("missing directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	if err := checkReplaceable(dir); err == nil {
		t.Errorf("a directory of someone's files would be replaced")
	}
	os.WriteFile(filepath.Join(dir, "SHA256SUMS"), nil, 0o644)
	if err := checkReplaceable(dir); err != nil {
		t.Errorf("a previous output: %v", err)
	}
}
