package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The build suite times `go build` of buildprog, a fixed program in this
// module, and records its binary's size. Before each timed build the
// program is copied to a fresh directory and its salt package rewritten, so
// the program's own packages are recompiled and the binary relinked while
// the standard library comes from the build cache (warmed by an untimed
// build first). What is timed is therefore the compiler and linker on the
// program's code plus linking the whole binary: what a developer's edit-
// build cycle costs. CPU time (user+system of go and its compiler and
// linker children) is recorded besides wall time because it is less
// sensitive to other load on the machine.

var warmed = map[string]bool{}

func runBuildRound(ctx context.Context, cfg *config, tcs map[string]*toolchain, round int, dir string) ([]failure, error) {
	var failures []failure
	for _, v := range cfg.variants["build"] {
		tc := tcs[v.toolchain]
		what := fmt.Sprintf("round %d/%d build %s buildprog", round, cfg.count, v.spec)
		if !warmed[v.toolchain] {
			if _, _, _, err := buildProg(ctx, cfg, tc, "warm"); err != nil {
				failures = append(failures, failure{what: what + " (warm-up)", err: err})
				continue
			}
			warmed[v.toolchain] = true
		}
		wall, cpu, size, err := buildProg(ctx, cfg, tc, fmt.Sprintf("%d-%d", round, time.Now().UnixNano()))
		fmt.Fprintf(os.Stderr, "benchrun: %s (%.1fs)\n", what, wall.Seconds())
		if err != nil {
			failures = append(failures, failure{what: what, err: err})
			continue
		}
		line := fmt.Sprintf("BenchmarkBuild/buildprog \t1\t%d ns/op\t%d cpu-ns/op\t%d binary-bytes\n", wall.Nanoseconds(), cpu.Nanoseconds(), size)
		f, err := os.OpenFile(filepath.Join(dir, v.spec+".txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
		if err != nil {
			return nil, err
		}
		if round == 1 {
			fmt.Fprintf(f, "# %s\n", tc.version)
		}
		_, err = f.WriteString(line)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return failures, nil
}

// buildProg copies buildprog into a temporary module with salt as its salt
// and builds it, returning wall time, CPU time and the binary's size.
func buildProg(ctx context.Context, cfg *config, tc *toolchain, salt string) (wall, cpu time.Duration, size int64, err error) {
	tmp, err := os.MkdirTemp("", "benchrun-build-")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(cfg.moduleDir, "buildprog")
	if err := copyTree(src, filepath.Join(tmp, "buildprog")); err != nil {
		return 0, 0, 0, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module fpsafe/benchmarks\n\ngo 1.27\n"), 0o666); err != nil {
		return 0, 0, 0, err
	}
	saltSrc := fmt.Sprintf("// Package salt is rewritten before every timed build.\npackage salt\n\n// Salt differs between builds.\nconst Salt = %q\n", salt)
	if err := os.WriteFile(filepath.Join(tmp, "buildprog", "internal", "salt", "salt.go"), []byte(saltSrc), 0o666); err != nil {
		return 0, 0, 0, err
	}
	bin := filepath.Join(tmp, "buildprog.bin")
	// -trimpath: otherwise the binary records every source file's full
	// path, and the two GOROOTs' different lengths alone change its size.
	cmd := goCmd(ctx, tc, tmp, "build", "-trimpath", "-o", bin, "./buildprog")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err = cmd.Run()
	wall = time.Since(t0)
	if err != nil {
		return wall, 0, 0, fmt.Errorf("%s: go build: %v\n%s", tc.name, err, out.String())
	}
	// wait4's rusage covers go and the compile and link processes it waited for.
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return wall, cpu, 0, err
	}
	return wall, cpu, fi.Size(), nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o777)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o666)
	})
}
