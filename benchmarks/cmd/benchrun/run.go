package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"fpsafe/benchmarks/internal/report"
	"fpsafe/benchmarks/internal/workload"
)

// runTimeout bounds one benchmark process; a hung benchmark is a failure,
// not a hung harness.
const runTimeout = 30 * time.Minute

// runOnce runs one invocation of one variant and appends its output to the
// variant's raw file. A process that fails is reported as a failure; only
// the harness's own errors (files it cannot write) are returned as errors.
func runOnce(ctx context.Context, cfg *config, tc *toolchain, bin string, s *suite, r run, v variant, round int, dir string) (*failure, error) {
	bt := cfg.benchtime
	if cfg.quick && r.quickBenchtime != "" {
		bt = r.quickBenchtime
	} else if !cfg.quick && r.benchtime != "" {
		bt = r.benchtime
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^$", "-test.bench="+r.bench, "-test.count=1",
		"-test.benchtime="+bt, "-test.timeout="+(runTimeout-time.Minute).String())
	cmd.Dir = filepath.Join(cfg.moduleDir, r.pkg)
	if r.pkg == "runtime" {
		cmd.Dir = filepath.Join(tc.goroot, "src", "runtime")
	}
	cmd.Env = v.environ(workload.CleanEnv(), r.env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	what := fmt.Sprintf("round %d/%d %s %s %s -bench %s %s", round, cfg.count, s.name, v.spec, r.pkg, r.bench, strings.Join(r.env, " "))
	t0 := time.Now()
	err := cmd.Run()
	fmt.Fprintf(os.Stderr, "benchrun: %s (%.1fs)\n", strings.TrimSpace(what), time.Since(t0).Seconds())

	f, ferr := os.OpenFile(filepath.Join(dir, v.spec+".txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
	if ferr != nil {
		return nil, ferr
	}
	defer f.Close()
	if _, ferr := f.Write(stdout.Bytes()); ferr != nil {
		return nil, ferr
	}
	if err != nil {
		return &failure{what: what, err: err, tail: tail(stdout.String()+stderr.String(), 40)}, nil
	}
	if _, perr := report.Parse(bytes.NewReader(stdout.Bytes())); perr != nil {
		return &failure{what: what, err: fmt.Errorf("unparsable output: %v", perr), tail: tail(stdout.String(), 20)}, nil
	}
	return nil, nil
}
