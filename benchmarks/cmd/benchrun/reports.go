package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"fpsafe/benchmarks/internal/report"
)

// writeReports reads every suite's raw output back and writes its tables,
// chart and benchstat comparison, then results.csv and summary.md for the
// whole run, and prints the tables.
func writeReports(ctx context.Context, cfg *config, benchstat, header string) error {
	var csvBuf, md bytes.Buffer
	md.WriteString(header)
	md.WriteString("Cells are the median's ratio to upstream from the same run; `~` marks differences benchstat's test does not call significant (p > 0.05). The upstream column is upstream's median.\n\n")
	for i, s := range cfg.suites {
		dir := filepath.Join(cfg.out, s.name)
		var specs []string
		for _, v := range cfg.variants[s.name] {
			specs = append(specs, v.spec)
		}
		rs := report.NewSuite(s.name, "upstream", specs)
		for _, spec := range specs {
			data, err := os.ReadFile(filepath.Join(dir, spec+".txt"))
			if os.IsNotExist(err) {
				continue // every run of this variant failed before writing
			}
			if err != nil {
				return err
			}
			ms, err := report.Parse(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("%s/%s.txt: %v", s.name, spec, err)
			}
			rs.Add(spec, ms)
		}
		var table bytes.Buffer
		if err := report.WriteMarkdown(&table, rs); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "table.md"), table.Bytes(), 0o666); err != nil {
			return err
		}
		var svg bytes.Buffer
		if err := report.WriteSVG(&svg, rs); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "chart.svg"), svg.Bytes(), 0o666); err != nil {
			return err
		}
		if err := report.WriteCSV(&csvBuf, rs, i == 0); err != nil {
			return err
		}
		if benchstat != "" {
			if err := runBenchstat(ctx, benchstat, dir, specs); err != nil {
				return err
			}
		}
		fmt.Fprintf(&md, "## %s\n\n%s\n![%s](%s/chart.svg)\n\n", s.name, table.String(), s.name, s.name)
		fmt.Printf("\n== %s (%s)\n%s", s.name, dir, table.String())
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "results.csv"), csvBuf.Bytes(), 0o666); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.out, "summary.md"), md.Bytes(), 0o666)
}

// reportHeader describes the run for summary.md; it is also saved as
// header.md so that -report can regenerate the reports later.
func reportHeader(cfg *config, machine, command string, elapsed time.Duration) string {
	return fmt.Sprintf("# Benchmark results\n\nCommand: `%s` (%d round(s), benchtime %s, %s)\n\n```\n%sloadavg:   %s (at end)\nelapsed:   %s\n```\n\n",
		strings.TrimSpace(command), cfg.count, cfg.benchtime, modeName(cfg), machine, firstLine("/proc/loadavg"), elapsed.Round(time.Second))
}

// regenerate rewrites the reports of an existing results directory from its
// raw files: the suites are its subdirectories, the variants their *.txt
// files (upstream first, then fork, then the rest by name).
func regenerate(ctx context.Context, cfg *config) error {
	header, err := os.ReadFile(filepath.Join(cfg.out, "header.md"))
	if err != nil {
		return fmt.Errorf("-report %s: %v", cfg.out, err)
	}
	cfg.suites = nil
	for _, s := range allSuites("") {
		files, _ := filepath.Glob(filepath.Join(cfg.out, s.name, "*.txt"))
		var vs []variant
		for _, f := range files {
			spec := strings.TrimSuffix(filepath.Base(f), ".txt")
			if spec == "benchstat" {
				continue
			}
			v, err := parseVariant(spec)
			if err != nil {
				return fmt.Errorf("-report: %s: %v", f, err)
			}
			vs = append(vs, v)
		}
		if len(vs) == 0 {
			continue
		}
		slices.SortStableFunc(vs, func(a, b variant) int {
			rank := func(v variant) int {
				return map[string]int{"upstream": 0, "fork": 1}[v.spec] + 2*len(strings.Split(v.spec, "+"))
			}
			return rank(a) - rank(b)
		})
		cfg.suites = append(cfg.suites, s)
		cfg.variants[s.name] = vs
	}
	if len(cfg.suites) == 0 {
		return fmt.Errorf("-report %s: no suite directories with raw results", cfg.out)
	}
	benchstat, err := ensureBenchstat(ctx, cfg, &toolchain{name: "fork", goroot: cfg.fork})
	if err != nil {
		return err
	}
	return writeReports(ctx, cfg, benchstat, string(header))
}

func modeName(cfg *config) string {
	if cfg.quick {
		return "quick mode"
	}
	return "full mode"
}

// runBenchstat writes benchstat's comparison of the variants' raw files,
// upstream first so that its deltas are against upstream. benchstat reads
// "label=file" arguments, so labels spell '=' as ':'.
func runBenchstat(ctx context.Context, benchstat, dir string, specs []string) error {
	var args []string
	for _, spec := range specs {
		if _, err := os.Stat(filepath.Join(dir, spec+".txt")); err != nil {
			continue
		}
		args = append(args, strings.ReplaceAll(spec, "=", ":")+"="+spec+".txt")
	}
	cmd := exec.CommandContext(ctx, benchstat, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("benchstat in %s: %v\n%s", dir, err, out)
	}
	return os.WriteFile(filepath.Join(dir, "benchstat.txt"), out, 0o666)
}
