package main

// The output directory: archives with the fork's commands added, the GOPROXY
// tree (the toolchain modules and the reader SDK's module, sdk.go), SHA256SUMS; then a check that each binary archive's go command runs.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

const (
	toolchainModule = "golang.org/toolchain"
	modVersionBase  = "v0.0.1" // cmd/distpack's and cmd/go's prefix for toolchain module versions
)

func (r *releaser) modVersion(p port) string {
	return modVersionBase + "-" + r.version + "." + p.dash()
}

// additions lists the fork's commands for p under the archive directory prefix.
func (r *releaser) additions(p port, prefix string) []addition {
	var add []addition
	for _, c := range forkCommands {
		add = append(add, addition{
			Name: path.Join(prefix, "pkg", "tool", p.under(), c),
			File: filepath.Join(r.toolsDir(p), c),
		})
	}
	return add
}

// writeOutput assembles the output next to -out, then swaps it in.
func (r *releaser) writeOutput() error {
	out := r.cfg.out
	if err := checkReplaceable(out); err != nil {
		return err
	}
	tmp := out + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	proxy := filepath.Join(tmp, "proxy", filepath.FromSlash(toolchainModule), "@v")
	if err := os.MkdirAll(proxy, 0o777); err != nil {
		return err
	}
	dp := r.distpackDir()
	if err := copyFile(filepath.Join(tmp, r.version+".src.tar.gz"), filepath.Join(dp, r.version+".src.tar.gz")); err != nil {
		return err
	}
	var list []string
	for _, p := range r.ports {
		name := r.version + "." + p.dash() + ".tar.gz"
		if err := addToTgz(filepath.Join(tmp, name), filepath.Join(dp, name), r.additions(p, "go")); err != nil {
			return err
		}
		mv := r.modVersion(p)
		if err := addToZip(filepath.Join(proxy, mv+".zip"), filepath.Join(dp, mv+".zip"), r.additions(p, toolchainModule+"@"+mv)); err != nil {
			return err
		}
		for _, ext := range []string{".mod", ".info"} {
			if err := copyFile(filepath.Join(proxy, mv+ext), filepath.Join(dp, mv+ext)); err != nil {
				return err
			}
		}
		list = append(list, mv)
	}
	slices.Sort(list)
	if err := os.WriteFile(filepath.Join(proxy, "list"), []byte(strings.Join(list, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := r.writeSDK(filepath.Join(tmp, "proxy")); err != nil {
		return fmt.Errorf("the reader SDK's module: %w", err)
	}
	if err := writeSums(tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// checkReplaceable refuses to delete a directory that is not a release output.
func checkReplaceable(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "SHA256SUMS")); err != nil {
		return fmt.Errorf("refusing to replace %s: it is not empty and holds no SHA256SUMS; move it away or pass another -out", dir)
	}
	return nil
}

func copyFile(dst, src string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// writeSums writes dir/SHA256SUMS for every other file under dir, sorted by
// slash-separated path, in the format sha256sum -c reads.
func writeSums(dir string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err == nil && rel != "SHA256SUMS" {
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		h, err := fileHash(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", h, n)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), b.Bytes(), 0o644)
}

// checkArchives unpacks each binary archive and runs its go command (under
// qemu-user for another architecture): it must report the release's version
// and port, and `go tool` must list the fork's commands.
func (r *releaser) checkArchives() error {
	for _, p := range r.ports {
		emu, ok := emulator(p)
		if !ok {
			r.logf("NOT CHECKED: %s binaries cannot run here (for linux, install qemu-user)", p.dash())
			continue
		}
		dir := filepath.Join(r.work, "check", p.under())
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := extractTgz(dir, filepath.Join(r.cfg.out, r.version+"."+p.dash()+".tar.gz")); err != nil {
			return err
		}
		gocmd := filepath.Join(dir, "go", "bin", "go")
		run := func(args ...string) (string, error) {
			cmd := exec.Command(gocmd, args...)
			if emu != "" {
				cmd = exec.Command(emu, append([]string{gocmd}, args...)...)
			}
			cmd.Dir = dir
			cmd.Env = cleanEnv("GOTOOLCHAIN=local", "GOENV=off")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("%s %s: %v: %s", cmd.Path, strings.Join(args, " "), err, out)
			}
			return string(out), nil
		}
		got, err := run("version")
		if err != nil {
			return err
		}
		want := fmt.Sprintf("go version %s %s/%s\n", r.version, p.goos, p.goarch)
		if got != want {
			return fmt.Errorf("%s archive: go version printed %q, want %q", p.dash(), got, want)
		}
		tools, err := run("tool")
		if err != nil {
			return err
		}
		for _, c := range forkCommands {
			if !slices.Contains(strings.Fields(tools), c) {
				return fmt.Errorf("%s archive: go tool does not list %s:\n%s", p.dash(), c, tools)
			}
		}
		how := "natively"
		if emu != "" {
			how = "under " + filepath.Base(emu)
		}
		r.logf("checked %s %s: %s", p.dash(), how, strings.TrimSpace(got))
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}
