package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A step is one line of LOGDIR/steps with the results read from its files.
type step struct {
	name    string
	kind    string // results or exit
	exit    int
	seconds int
	results []result
	skipped []string // tests that skipped themselves, "pkg Test: reason"
	notes   []string // what note records say, for the step's summary line
	logTail []string // last lines of NAME.log
	logName string   // NAME.log's path, as given
}

// A result is one counted unit: a package, a record or a step's exit status.
type result struct {
	name   string
	status string // pass, fail or skip
	note   string
	detail []string // output that says why it failed
}

const (
	detailLines  = 12 // lines quoted per failure
	quotedTests  = 3  // failed tests of a package whose output is quoted
	logTailLines = 20 // lines quoted from a step's log
	skipLines    = 10 // skipped tests listed
)

// readSteps reads LOGDIR/steps and each step's results.
func readSteps(dir string) ([]*step, error) {
	data, err := os.ReadFile(filepath.Join(dir, "steps"))
	if err != nil {
		return nil, fmt.Errorf("reading the step list: %w (run all.bash, which writes it)", err)
	}
	var steps []*step
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s/steps:%d: want NAME KIND EXIT SECONDS separated by tabs, have %q", dir, i+1, line)
		}
		exit, err1 := strconv.Atoi(f[2])
		secs, err2 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s/steps:%d: %w", dir, i+1, err)
		}
		s := &step{name: f[0], kind: f[1], exit: exit, seconds: secs, logName: filepath.Join(dir, f[0]+".log")}
		switch s.kind {
		case "results":
			err = errors.Join(s.readJSON(filepath.Join(dir, s.name+".json")), s.readRecords(filepath.Join(dir, s.name+".records")))
		case "exit":
			st := "pass"
			if exit != 0 {
				st = "fail"
			}
			s.results = append(s.results, result{name: s.name, status: st})
		default:
			err = fmt.Errorf("%s/steps:%d: unknown kind %q (want results or exit)", dir, i+1, s.kind)
		}
		if err != nil {
			return nil, err
		}
		s.logTail = tail(s.logName, logTailLines)
		if s.kind == "exit" && exit != 0 {
			s.results[0].detail = s.logTail
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// testEvent is one event of `go test -json` (cmd/test2json), with the
// build events that the go command interleaves.
type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	OutputType  string
	ImportPath  string
	FailedBuild string
}

// readJSON counts each package's final pass or fail. A missing file counts
// nothing; the step's exit status then decides. Lines that are not JSON (the
// go command's own complaints, if standard error was merged) are skipped.
func (s *step) readJSON(name string) error {
	data, err := readOptional(name)
	if err != nil {
		return err
	}
	build := map[string][]string{}        // ImportPath -> build output
	output := map[string][]string{}       // package or package+test -> non-frame output
	pkgOutput := map[string][]string{}    // package -> all its own output
	var pkgs []string                     // packages in order of appearance
	seen := map[string]bool{}             // packages in pkgs
	done := map[string]bool{}             // packages with a final pass, fail or skip
	running := map[string]bool{}          // package+test -> started, not ended
	failedTests := map[string][]string{}  // package -> tests that failed, in order of first failure
	runs := map[string]int{}              // package+test -> runs (-count, repeated steps)
	failures := map[string]int{}          // package+test -> failed runs
	firstFailure := map[string][]string{} // package+test -> output of its first failed run
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e testEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			continue
		}
		if e.Package != "" && !seen[e.Package] {
			seen[e.Package] = true
			pkgs = append(pkgs, e.Package)
		}
		if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			done[e.Package] = true
		}
		key := e.Package
		if e.Test != "" {
			key += " " + e.Test
		}
		if e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			delete(running, key)
		}
		switch e.Action {
		case "run":
			runs[key]++
			running[key] = true
			output[key] = nil // keep one run's output
		case "build-output":
			build[e.ImportPath] = append(build[e.ImportPath], strings.TrimRight(e.Output, "\n"))
		case "output":
			if e.Test == "" {
				pkgOutput[key] = append(pkgOutput[key], strings.TrimRight(e.Output, "\n"))
			}
			if e.OutputType != "frame" {
				output[key] = append(output[key], strings.TrimRight(e.Output, "\n"))
			}
		case "skip":
			if e.Test != "" {
				why := "(no reason given)"
				if o := output[key]; len(o) > 0 {
					why = strings.TrimSpace(o[len(o)-1])
				}
				s.skipped = append(s.skipped, fmt.Sprintf("%s: %s", key, why))
			}
		case "fail":
			if e.Test != "" {
				if failures[key]++; failures[key] == 1 {
					failedTests[e.Package] = append(failedTests[e.Package], e.Test)
					firstFailure[key] = output[key]
				}
				continue
			}
			r := result{name: e.Package, status: "fail"}
			switch {
			case e.FailedBuild != "":
				r.note = "build failed"
				r.detail = build[e.FailedBuild]
			case len(failedTests[e.Package]) > 0:
				r.detail = failedTestDetail(e.Package, failedTests[e.Package], runs, failures, firstFailure)
			default:
				r.note = "no test failed; the test binary failed"
				r.detail = pkgOutput[e.Package]
			}
			s.results = append(s.results, r)
		case "pass":
			if e.Test == "" {
				s.results = append(s.results, result{name: e.Package, status: "pass"})
			}
		}
	}
	for _, p := range pkgs {
		if !done[p] {
			r := unfinished(p, running, output)
			r.detail = append(failedTestDetail(p, failedTests[p], runs, failures, firstFailure), r.detail...)
			s.results = append(s.results, r)
		}
	}
	return nil
}

// unfinished is the failure of a package whose stream ends without its
// result, naming the tests that were running.
func unfinished(pkg string, running map[string]bool, output map[string][]string) result {
	r := result{name: pkg, status: "fail", note: "the stream ends before the package's result (the test binary crashed, hung or was killed)"}
	var names []string
	for k := range running {
		if t, ok := strings.CutPrefix(k, pkg+" "); ok {
			names = append(names, t)
		}
	}
	slices.Sort(names)
	for _, t := range names {
		r.detail = append(r.detail, "--- "+t+" was running; its last lines:")
		out := output[pkg+" "+t]
		if len(out) > detailLines {
			out = out[len(out)-detailLines:]
		}
		for _, l := range out {
			r.detail = append(r.detail, "  "+strings.TrimLeft(l, " "))
		}
	}
	r.detail = append(r.detail, output[pkg]...)
	return r
}

// failedTestDetail lists a package's failed tests, quoting the end of the
// first failure of the first few. A test that failed only because subtests
// failed is left out: its subtests say why.
func failedTestDetail(pkg string, tests []string, runs, failures map[string]int, firstFailure map[string][]string) []string {
	var detail []string
	quoted := 0
	for _, t := range tests {
		parent := false
		for _, u := range tests {
			parent = parent || strings.HasPrefix(u, t+"/")
		}
		if parent {
			continue
		}
		k := pkg + " " + t
		line := "--- " + t
		out := firstFailure[k]
		cut := len(out) > detailLines
		if cut {
			out = out[len(out)-detailLines:]
		}
		if quoted++; quoted > quotedTests {
			out, cut = nil, false
		}
		switch {
		case runs[k] > 1 && cut:
			line += fmt.Sprintf(" failed %d of %d runs; the first failure's last %d lines:", failures[k], runs[k], detailLines)
		case runs[k] > 1:
			line += fmt.Sprintf(" failed %d of %d runs; the first failure:", failures[k], runs[k])
		case cut:
			line += fmt.Sprintf(" (last %d lines)", detailLines)
		}
		detail = append(detail, line)
		for _, l := range out {
			detail = append(detail, "  "+strings.TrimLeft(l, " "))
		}
	}
	return detail
}

// readRecords reads RESULT<TAB>NAME<TAB>SECONDS<TAB>NOTE lines. A malformed
// line is a failed result: a step that cannot report is broken.
func (s *step) readRecords(name string) error {
	data, err := readOptional(name)
	if err != nil {
		return err
	}
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "\t", 4)
		if len(f) != 4 || (f[0] != "pass" && f[0] != "fail" && f[0] != "skip" && f[0] != "note") {
			s.results = append(s.results, result{name: fmt.Sprintf("%s:%d", filepath.Base(name), i+1), status: "fail",
				note: fmt.Sprintf("malformed record %q (want pass|fail|skip|note, NAME, SECONDS, NOTE separated by tabs)", line)})
			continue
		}
		if f[0] == "note" {
			s.notes = append(s.notes, f[3])
			continue
		}
		r := result{name: f[1], status: f[0], note: f[3]}
		if f[2] != "" && f[2] != "0" {
			r.name += " (" + f[2] + "s)"
		}
		s.results = append(s.results, r)
	}
	return nil
}

// readOptional reads a file that a step may not have written: missing, it
// is empty.
func readOptional(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// tail returns the last n lines of a file, or nothing if it cannot be read.
func tail(name string, n int) []string {
	data, err := os.ReadFile(name)
	if err != nil || len(data) == 0 {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// A summary is the counted steps.
type summary struct {
	steps          []*step
	rows           []row
	passed, failed int
}

type row struct {
	step                    *step
	passed, failed, skipped int
	verdict                 string // ok, FAIL or skip
	why                     []result
}

// summarize counts every step's results and adds the failures of the step
// itself: a non-zero exit with nothing failed or skipped, a zero exit with
// nothing at all.
func summarize(steps []*step, allowSkip bool) *summary {
	sum := &summary{steps: steps}
	for _, s := range steps {
		r := row{step: s}
		for _, res := range s.results {
			switch {
			case res.status == "pass":
				r.passed++
			case res.status == "skip" && allowSkip:
				r.skipped++
				r.why = append(r.why, res)
			case res.status == "skip":
				res.note += " (a skip counts as failed: install what is missing; outside CI, -allow-skip)"
				r.failed++
				r.why = append(r.why, res)
			default:
				r.failed++
				r.why = append(r.why, res)
			}
		}
		switch {
		case s.exit != 0 && r.failed+r.skipped == 0:
			r.failed++
			r.why = append(r.why, result{name: s.name, status: "fail",
				note: fmt.Sprintf("exited with status %d, but no result says what failed", s.exit), detail: s.logTail})
		case s.exit == 0 && r.passed+r.failed+r.skipped == 0:
			r.failed++
			r.why = append(r.why, result{name: s.name, status: "fail", note: "reported no results", detail: s.logTail})
		}
		switch {
		case r.failed > 0:
			r.verdict = "FAIL"
		case r.skipped > 0:
			r.verdict = "skip"
		default:
			r.verdict = "ok"
		}
		sum.passed += r.passed
		sum.failed += r.failed
		sum.rows = append(sum.rows, r)
	}
	return sum
}

// print writes the failures, the skipped tests and the table, then the
// closing line.
func (sum *summary) print(w io.Writer, dir string) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	for _, r := range sum.rows {
		for _, res := range r.why {
			fmt.Fprintf(bw, "--- %s: %s %s", r.step.name, strings.ToUpper(res.status), res.name)
			if res.note != "" {
				fmt.Fprintf(bw, ": %s", res.note)
			}
			fmt.Fprintln(bw)
			detail := res.detail
			if len(detail) == 0 && r.step.kind == "results" {
				detail = r.step.logTail
			}
			if max := detailLines * (quotedTests + 1); len(detail) > max {
				fmt.Fprintf(bw, "    ... (%d lines before; see %s)\n", len(detail)-max, logFor(r.step, dir))
				detail = detail[len(detail)-max:]
			}
			for _, l := range detail {
				fmt.Fprintf(bw, "    %s\n", l)
			}
		}
	}
	var skipped []string
	for _, s := range sum.steps {
		for _, t := range s.skipped {
			skipped = append(skipped, s.name+": "+t)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(bw, "\ntests that skipped themselves: %d\n", len(skipped))
		for i, t := range skipped {
			if i == skipLines {
				fmt.Fprintf(bw, "  ... and %d more (the steps' .json files in %s)\n", len(skipped)-skipLines, dir)
				break
			}
			fmt.Fprintf(bw, "  %s\n", t)
		}
	}
	fmt.Fprintf(bw, "\n%-10s %-6s %6s %7s %7s %8s\n", "step", "result", "time", "passed", "failed", "skipped")
	for _, r := range sum.rows {
		fmt.Fprintf(bw, "%-10s %-6s %5ds %7d %7d %8d", r.step.name, r.verdict, r.step.seconds, r.passed, r.failed, r.skipped+len(r.step.skipped))
		if len(r.step.notes) > 0 {
			fmt.Fprintf(bw, "  %s", strings.Join(r.step.notes, "; "))
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintf(bw, "(go test steps count packages, and list skipped tests; other steps count result records, or their exit status)\n")
	fmt.Fprintf(bw, "logs: %s\n", dir)
	fmt.Fprintf(bw, "%d passed, %d failed\n", sum.passed, sum.failed)
}

func logFor(s *step, dir string) string {
	return filepath.Join(dir, s.name+".{json,records,log}")
}
