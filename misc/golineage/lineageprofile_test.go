package main

// The differential test of GODEBUG lineageprofile=1 (issue 27): the
// creation chains the runtime appends to its own profiles after
// runtime.goexit must be golineage's stitched lineage of the same
// goroutines, read from outside the process in the same state.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// lpFrame is one frame of a creation chain: a go statement's function and
// position, or a frame of the creator's stack there.
type lpFrame struct {
	Func string
	File string
	Line int
}

func (f lpFrame) String() string { return fmt.Sprintf("%s %s:%d", f.Func, f.File, f.Line) }

func lpChainString(c []lpFrame) string {
	s := make([]string, len(c))
	for i, f := range c {
		s[i] = f.String()
	}
	return strings.Join(s, " <- ")
}

// lpSkip reports whether neither view is expected to agree on frame f:
// runtime.goexit, which runtime/pprof leaves out, and the go statements'
// wrappers (F.gowrapN), which the goroutine profile leaves out of a
// goroutine's own frames while golineage prints them in creation stacks.
func lpSkip(fn string) bool {
	return fn == "runtime.goexit" || lpWrapper.MatchString(fn)
}

var lpWrapper = regexp.MustCompile(`\.gowrap\d+$`)

// lpSampleFrames returns a profile sample's frames, leaf first, inlined
// frames expanded, without lpSkip's.
func lpSampleFrames(s *profile.Sample) []lpFrame {
	var out []lpFrame
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function == nil || lpSkip(l.Function.Name) {
				continue
			}
			out = append(out, lpFrame{l.Function.Name, l.Function.Filename, int(l.Line)})
		}
	}
	return out
}

// lpInside is what the program's own profiles say.
type lpInside struct {
	// chains maps a labeled goroutine's goid to the frames that follow
	// the function it started in, in its goroutine profile sample.
	chains map[string][]lpFrame
	// created counts the goroutinecreate profile's goroutines by
	// chain (lpChainString), for the chains whose go statement is the
	// program's (package main).
	created map[string]int64
	// starts maps a labeled goroutine's goid to its start function.
	starts map[string]string
	// allocs are the allocs profile's stacks with allocations (not
	// the zero-valued copies without ancestry, lineage_profile.go).
	allocs [][]lpFrame
}

// lpReadInside parses the goroutine and goroutinecreate profiles in dir.
func lpReadInside(t *testing.T, dir string) lpInside {
	t.Helper()
	read := func(name string) *profile.Profile {
		f, err := os.Open(filepath.Join(dir, name+".pb.gz"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := profile.Parse(f)
		if err != nil {
			t.Fatalf("parsing the %s profile: %v", name, err)
		}
		return p
	}
	in := lpInside{chains: map[string][]lpFrame{}, created: map[string]int64{}, starts: map[string]string{}}
	for _, s := range read("goroutine").Sample {
		goid, start := s.Label["goid"], s.Label["start"]
		if len(goid) != 1 || len(start) != 1 {
			continue
		}
		if s.Value[0] != 1 {
			t.Fatalf("goroutine profile: %d goroutines labeled goid=%s", s.Value[0], goid[0])
		}
		fr := lpSampleFrames(s)
		i := slices.IndexFunc(fr, func(f lpFrame) bool { return f.Func == start[0] })
		if i < 0 {
			t.Fatalf("goroutine %s: its start function %s is not in its goroutine profile sample %s", goid[0], start[0], lpChainString(fr))
		}
		in.chains[goid[0]] = fr[i+1:]
		in.starts[goid[0]] = start[0]
	}
	for _, s := range read("allocs").Sample {
		if slices.ContainsFunc(s.Value, func(v int64) bool { return v != 0 }) {
			in.allocs = append(in.allocs, lpSampleFrames(s))
		}
	}
	for _, s := range read("goroutinecreate").Sample {
		c := lpSampleFrames(s)
		if len(c) > 0 && strings.HasPrefix(c[0].Func, "main.") {
			in.created[lpChainString(c)] += s.Value[0]
		}
	}
	return in
}

// lpOutside reads golineage's view of pid: for each goroutine, its
// stitched chain, parent first, as the runtime appends it: the go
// statement ("created by F at FILE:LINE" is frame F at FILE:LINE), or with
// creation stacks (GODEBUG lineagestack=N) the creator's stack there,
// then each ancestor's go statement.
func lpOutside(t *testing.T, pid int, creationStacks bool) map[string][]lpFrame {
	t.Helper()
	out, stderr, code := tool(t, "ps", "-json", strconv.Itoa(pid))
	if code != 0 {
		t.Fatalf("golineage ps -json: exit %d: %s", code, stderr)
	}
	chains := map[string][]lpFrame{}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var g goroutineJSON
		if err := dec.Decode(&g); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("golineage ps -json: %v\n%s", err, out)
		}
		// The chain ends where the runtime's does: at the first
		// creator without a go statement (the main goroutine).
		var c []lpFrame
		by := g.CreatedBy
		for i := 0; by != nil; i++ {
			c = append(c, lpFrame{by.Func, by.File, by.Line})
			by = nil
			if i < len(g.Ancestors) {
				by = g.Ancestors[i].CreatedBy
			}
		}
		chains[strconv.FormatUint(g.Goid, 10)] = c
	}
	if !creationStacks {
		return chains
	}
	// ps -json has no creation stacks: take them from stacks -all, and
	// check that they start at the go statement ps printed.
	out, stderr, code = tool(t, "stacks", "-all", strconv.Itoa(pid))
	if code != 0 {
		t.Fatalf("golineage stacks -all: exit %d: %s", code, stderr)
	}
	for goid, stk := range lpCreationStacks(t, out) {
		c := chains[goid]
		if len(c) == 0 || len(stk) == 0 || stk[0] != c[0] {
			t.Errorf("goroutine %s: golineage stacks -all's creation stack %s does not start at ps -json's go statement %s", goid, lpChainString(stk), lpChainString(c))
			continue
		}
		chains[goid] = append(stk, c[1:]...)
	}
	return chains
}

var (
	lpGoroutineHead = regexp.MustCompile(`^(?:thread \d+ )?goroutine (\d+) \[`)
	lpFileLine      = regexp.MustCompile(`^\t\t(.*):(\d+)(?: \+0x[0-9a-f]+)?$`)
)

// lpCreationStacks parses the creation stacks (the frames indented under
// a goroutine's first "created by" line) of golineage stacks output, by
// goid, without lpSkip's frames.
func lpCreationStacks(t *testing.T, out string) map[string][]lpFrame {
	stacks := map[string][]lpFrame{}
	lines := strings.Split(out, "\n")
	goid, first, in := "", false, false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case lpGoroutineHead.MatchString(l):
			goid, first, in = lpGoroutineHead.FindStringSubmatch(l)[1], true, false
		case strings.HasPrefix(l, "thread "):
			goid, in = "", false // a thread without a goroutine
		case strings.HasPrefix(l, "created by "):
			in, first = first && goid != "", false
		case in && strings.HasPrefix(l, "\t") && strings.HasSuffix(l, "(...)") && i+1 < len(lines):
			m := lpFileLine.FindStringSubmatch(lines[i+1])
			if m == nil {
				t.Fatalf("golineage stacks: no position under %q: %q", l, lines[i+1])
			}
			i++
			fn := strings.TrimSuffix(strings.TrimPrefix(l, "\t"), "(...)")
			if lpSkip(fn) {
				continue
			}
			line, _ := strconv.Atoi(m[2])
			stacks[goid] = append(stacks[goid], lpFrame{fn, m[1], line})
		case !strings.HasPrefix(l, "\t"):
			in = false
		}
	}
	return stacks
}

// lpDiffChains compares, for each goroutine the program labeled, the
// chain its goroutine profile sample continues with and golineage's.
func lpDiffChains(inside, outside map[string][]lpFrame) []string {
	var diffs []string
	for goid, in := range inside {
		out, ok := outside[goid]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("goroutine %s: not in golineage's view", goid))
		case len(in) == 0:
			diffs = append(diffs, fmt.Sprintf("goroutine %s: no creation chain after its start function in the goroutine profile; golineage: %s", goid, lpChainString(out)))
		case !slices.Equal(in, out):
			diffs = append(diffs, fmt.Sprintf("goroutine %s:\n\tgoroutine profile: %s\n\tgolineage:         %s", goid, lpChainString(in), lpChainString(out)))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// lpDiffAllocs checks the allocs profile: in each stack, the frames after
// the first start function of a labeled goroutine must be golineage's
// chain of the goroutines that started there, which the program's
// goroutines of one start function share. It returns the differences and
// how many stacks it compared, by start function.
func lpDiffAllocs(allocs [][]lpFrame, starts map[string]string, outside map[string][]lpFrame) ([]string, map[string]int) {
	chains := map[string][]lpFrame{}
	var diffs []string
	for goid, start := range starts {
		c, ok := chains[start]
		if ok && !slices.Equal(c, outside[goid]) {
			diffs = append(diffs, fmt.Sprintf("golineage: goroutines started in %s have different chains: %s and %s", start, lpChainString(c), lpChainString(outside[goid])))
		}
		chains[start] = outside[goid]
	}
	compared := map[string]int{}
	for _, fr := range allocs {
		i := slices.IndexFunc(fr, func(f lpFrame) bool { return chains[f.Func] != nil })
		if i < 0 {
			continue
		}
		start := fr[i].Func
		compared[start]++
		if !slices.Equal(fr[i+1:], chains[start]) {
			diffs = append(diffs, fmt.Sprintf("allocs: after %s:\n\tallocs profile: %s\n\tgolineage:      %s", start, lpChainString(fr[i+1:]), lpChainString(chains[start])))
		}
	}
	sort.Strings(diffs)
	return slices.Compact(diffs), compared
}

// lpDiffCreated compares the goroutinecreate profile's counts with the
// goroutines golineage sees by chain (those created by package main).
func lpDiffCreated(inside map[string]int64, outside map[string][]lpFrame) []string {
	want := map[string]int64{}
	for _, c := range outside {
		if len(c) > 0 && strings.HasPrefix(c[0].Func, "main.") {
			want[lpChainString(c)]++
		}
	}
	var diffs []string
	for k, n := range want {
		if inside[k] != n {
			diffs = append(diffs, fmt.Sprintf("goroutinecreate: %d goroutines, golineage %d: %s", inside[k], n, k))
		}
	}
	for k, n := range inside {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("goroutinecreate: %d goroutines, golineage none: %s", n, k))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// lpProc is a running testdata/lprof, whose output lines the test reads.
type lpProc struct {
	proc
	lines chan string
}

func lpStart(t *testing.T, exe string, env ...string) (*lpProc, int) {
	t.Helper()
	p := &lpProc{proc: proc{cmd: exec.Command(exe)}, lines: make(chan string)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &p.stderr
	p.stdin, _ = p.cmd.StdinPipe()
	stdout, _ := p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	n, _ := strconv.Atoi(strings.TrimPrefix(p.await(t, "goroutines "), "goroutines "))
	p.await(t, "ready")
	return p, n
}

// await returns the next line of output, which must start with prefix.
func (p *lpProc) await(t *testing.T, prefix string) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("lprof exited; stderr:\n%s", p.stderr.String())
		}
		if !strings.HasPrefix(l, prefix) {
			t.Fatalf("lprof: got %q, want %q...", l, prefix)
		}
		return l
	case <-time.After(2 * time.Minute):
		t.Fatalf("lprof: no %q line within 2m", prefix)
	}
	return ""
}

// profile has the program write its goroutine and goroutinecreate
// profiles and returns them.
func (p *lpProc) profile(t *testing.T) lpInside {
	t.Helper()
	dir := t.TempDir()
	if _, err := fmt.Fprintf(p.stdin, "profile %s\n", dir); err != nil {
		t.Fatal(err)
	}
	p.await(t, "profiled")
	return lpReadInside(t, dir)
}

// TestLineageProfileDifferential runs testdata/lprof with GODEBUG
// lineageprofile=1 and checks, for every goroutine it left parked, that
// the creation chain its goroutine profile sample continues with (parent
// first, after the function the goroutine started in) is golineage's
// stitched chain of that goroutine, function, file and line, and that
// the goroutinecreate profile counts the goroutines golineage sees at
// each chain. Ancestors are compared by their go statements, not their
// goids, which the lineage ABI need not keep beyond the parent. The
// program's own profiles are taken before and after golineage reads it,
// and must agree, so that both views are of the same state.
func TestLineageProfileDifferential(t *testing.T) {
	exe := fixture(t, "lprof")
	requireABI(t, exe)
	for _, tc := range []struct {
		godebug        string
		creationStacks bool
		longest        int // frames of the longest chain (a helper's)
	}{
		{"lineageprofile=1", false, 4},
		// A creation stack: the creator's frames at the go
		// statement (wrappers and runtime.goexit left out), then
		// the ancestors' go statements.
		{"lineageprofile=1,lineagestack=16", true, 5},
		// The stack cut at 1 frame (the go statement), the
		// ancestry at 2 ancestors: both views cut alike.
		{"lineageprofile=1,lineagestack=1,lineage=2", true, 3},
	} {
		t.Run(tc.godebug, func(t *testing.T) {
			p, n := lpStart(t, exe, "GODEBUG="+tc.godebug)
			before := p.profile(t)
			outside := lpOutside(t, p.cmd.Process.Pid, tc.creationStacks)
			after := p.profile(t)

			if !maps.EqualFunc(before.chains, after.chains, slices.Equal) {
				t.Fatalf("the program's goroutines changed while golineage read it:\nbefore: %v\nafter:  %v", before.chains, after.chains)
			}
			if !maps.Equal(before.created, after.created) {
				t.Fatalf("the goroutinecreate profile changed while golineage read the program:\nbefore: %v\nafter:  %v", before.created, after.created)
			}
			if len(before.chains) != n {
				t.Fatalf("goroutine profile: %d labeled goroutines, the program left %d", len(before.chains), n)
			}
			longest := 0
			for _, c := range before.chains {
				longest = max(longest, len(c))
			}
			if longest != tc.longest {
				t.Errorf("longest creation chain in the goroutine profile: %d frames, want %d", longest, tc.longest)
			}
			for _, d := range lpDiffChains(before.chains, outside) {
				t.Error(d)
			}
			for _, d := range lpDiffCreated(before.created, outside) {
				t.Error(d)
			}
			diffs, compared := lpDiffAllocs(before.allocs, before.starts, outside)
			for _, d := range diffs {
				t.Error(d)
			}
			// Every allocation is sampled: the crunchers' and the
			// helpers' in work must be there.
			if compared["main.startCrunchers.func1"] == 0 || compared["main.helper"] == 0 {
				t.Errorf("allocs: stacks compared by start function: %v; want some of the crunchers' and helpers'", compared)
			}
			t.Logf("allocs: stacks compared by start function: %v", compared)
			var total int64
			for _, k := range before.created {
				total += k
			}
			if total != int64(n) {
				t.Errorf("goroutinecreate: %d goroutines created by package main, the program left %d", total, n)
			}
			if t.Failed() || testing.Verbose() {
				for goid, c := range outside {
					if _, ok := before.chains[goid]; ok {
						t.Logf("goroutine %s: %s", goid, lpChainString(c))
					}
				}
			}

			// The comparison catches a chain off by one frame at
			// either end, or one line, in either view.
			t.Run("mutated", func(t *testing.T) {
				var goid string
				for g, c := range before.chains {
					if len(c) == tc.longest {
						goid = g
					}
				}
				if goid == "" {
					t.Skip("no chain of the expected length")
				}
				c := before.chains[goid]
				bumped := slices.Clone(c)
				bumped[0].Line++
				for name, m := range map[string][]lpFrame{
					"parent's go statement first": c[1:],
					"oldest ancestor dropped":     c[:len(c)-1],
					"one ancestor more":           append(slices.Clone(c), c[len(c)-1]),
					"go statement's line + 1":     bumped,
					"child first":                 slices.Concat(c[len(c)-1:], c[:len(c)-1]),
				} {
					for _, side := range []string{"inside", "outside"} {
						in, out := maps.Clone(before.chains), maps.Clone(outside)
						if side == "inside" {
							in[goid] = m
						} else {
							out[goid] = m
						}
						if d := lpDiffChains(in, out); len(d) != 1 {
							t.Errorf("%s %s: lpDiffChains found %d differences, want 1: %q", side, name, len(d), d)
						}
						if side == "outside" && len(lpDiffCreated(before.created, out)) == 0 {
							t.Errorf("outside %s: lpDiffCreated found no difference", name)
						}
						if side == "outside" {
							if d, _ := lpDiffAllocs(before.allocs, before.starts, out); len(d) == 0 {
								t.Errorf("outside %s: lpDiffAllocs found no difference", name)
							}
						}
					}
				}
			})
		})
	}
}
