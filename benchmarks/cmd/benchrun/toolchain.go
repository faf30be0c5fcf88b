package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"fpsafe/benchmarks/internal/upstream"
	"fpsafe/benchmarks/internal/workload"
)

type toolchain struct {
	name    string // "upstream" or "fork"
	goroot  string
	version string // `go version` output
}

func resolveToolchains(ctx context.Context, cfg *config) (map[string]*toolchain, error) {
	fork, err := checkToolchain(ctx, "fork", cfg.fork)
	if err != nil {
		return nil, err
	}
	// The release the fork is built from, and its GOROOT unless given.
	upstreamVersion, up, err := upstream.GOROOT(filepath.Join(fork.goroot, "bin", "go"), workload.CleanEnv())
	if cfg.upstrm != "" {
		up, err = cfg.upstrm, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%v; pass -upstream", err)
	}
	uptc, err := checkToolchain(ctx, "upstream", up)
	if err != nil {
		return nil, err
	}
	if upstreamVersion != "" && !strings.HasPrefix(uptc.version, "go version "+upstreamVersion+" ") {
		fmt.Fprintf(os.Stderr, "benchrun: warning: upstream toolchain is %q, not %s\n", uptc.version, upstreamVersion)
	}
	if fork.goroot == uptc.goroot {
		return nil, fmt.Errorf("-fork and -upstream are the same GOROOT %s", fork.goroot)
	}
	return map[string]*toolchain{"fork": fork, "upstream": uptc}, nil
}

func checkToolchain(ctx context.Context, name, goroot string) (*toolchain, error) {
	abs, err := filepath.Abs(goroot)
	if err != nil {
		return nil, err
	}
	tc := &toolchain{name: name, goroot: filepath.Clean(abs)}
	outb, err := goCmd(ctx, tc, "", "version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s toolchain %s: go version: %v\n%s", name, tc.goroot, err, outb)
	}
	tc.version = strings.TrimSpace(string(outb))
	return tc, nil
}

type binKey struct{ toolchain, pkg string }

// buildBinaries compiles every package the selected suites run, once per
// toolchain. The fork may be rebuilt while the harness starts, so a failed
// build is retried a few times before the harness gives up.
func buildBinaries(ctx context.Context, cfg *config, tcs map[string]*toolchain, dir string) (map[binKey]string, error) {
	bins := map[binKey]string{}
	for _, s := range cfg.suites {
		for _, r := range s.runs {
			for _, v := range cfg.variants[s.name] {
				k := binKey{v.toolchain, r.pkg}
				if _, ok := bins[k]; ok {
					continue
				}
				out := filepath.Join(dir, v.toolchain, strings.Trim(strings.ReplaceAll(r.pkg, "/", "_"), "._")+".test")
				t0 := time.Now()
				var err error
				for attempt := 1; attempt <= 3; attempt++ {
					cmd := goCmd(ctx, tcs[v.toolchain], cfg.moduleDir, "test", "-c", "-o", out, r.pkg)
					cmd.Env = append(cmd.Env, "GOFLAGS=-mod=readonly")
					var buf bytes.Buffer
					cmd.Stdout, cmd.Stderr = &buf, &buf
					if err = cmd.Run(); err == nil {
						break
					}
					err = fmt.Errorf("%s: go test -c %s: %v\n%s", v.toolchain, r.pkg, err, buf.String())
					fmt.Fprintf(os.Stderr, "benchrun: attempt %d: %v\n", attempt, err)
					if attempt < 3 {
						time.Sleep(20 * time.Second)
					}
				}
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(os.Stderr, "benchrun: built %s %s (%.1fs)\n", v.toolchain, r.pkg, time.Since(t0).Seconds())
				bins[k] = out
			}
		}
	}
	return bins, nil
}

// ensureBenchstat returns the benchstat binary: -benchstat, or
// golang.org/x/perf/cmd/benchstat at the version go.mod pins, built once
// into the user's cache directory (never into a GOROOT).
func ensureBenchstat(ctx context.Context, cfg *config, tc *toolchain) (string, error) {
	if cfg.benchstatPath != "" {
		return cfg.benchstatPath, nil
	}
	cmd := goCmd(ctx, tc, cfg.moduleDir, "list", "-m", "-f", "{{.Version}}", "golang.org/x/perf")
	cmd.Env = append(cmd.Env, "GOFLAGS=-mod=readonly")
	v, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("benchstat: go list -m golang.org/x/perf: %v", err)
	}
	cache, err := cacheDir()
	if err != nil {
		return "", fmt.Errorf("benchstat: %v", err)
	}
	path := filepath.Join(cache, "benchstat-"+strings.TrimSpace(string(v)))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	cmd = goCmd(ctx, tc, cfg.moduleDir, "build", "-o", path, "golang.org/x/perf/cmd/benchstat")
	cmd.Env = append(cmd.Env, "GOFLAGS=-mod=readonly")
	if outb, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building benchstat: %v\n%s", err, outb)
	}
	return path, nil
}

// cacheDir is where the harness keeps tools it builds (BENCH_CACHE, or
// fpsafe-benchmarks in the user's cache directory).
func cacheDir() (string, error) {
	dir := os.Getenv("BENCH_CACHE")
	if dir == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(uc, "fpsafe-benchmarks")
	}
	return dir, os.MkdirAll(dir, 0o777)
}
