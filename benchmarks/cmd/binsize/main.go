// Binsize builds hello, a small program (URL, HTTP request and JSON) and
// cmd/go with the fork, with and without its .sframe section
// (-ldflags=-sframe=false), and with the upstream release the fork is
// built from, also stripped (-s -w), and prints Markdown tables of file
// and section sizes, and of the text the fork adds to each program by
// feature: the record of doc/benchmarks.md's "Binary size".
//
// Usage:
//
//	go run ./cmd/binsize [-fork GOROOT] [-upstream GOROOT] [-sections] [-keep DIR]
//
// The programs are built for $GOARCH (default: this machine's); for another
// architecture, build the command first and run it with GOARCH set:
//
//	go build -o /tmp/binsize ./cmd/binsize && GOARCH=arm64 /tmp/binsize
//
// Every build uses -trimpath, so that the two GOROOTs' path lengths do not
// enter the sizes. The file size of an ELF binary is exact; no repetition
// is needed.
package main

import (
	"cmp"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"fpsafe/benchmarks/internal/upstream"
)

const hello = `package main

import "fmt"

func main() { fmt.Println("hello, world") }
`

const small = `package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
)

type T struct {
	Scheme, Host, Path string
	Query              map[string]string
}

func main() {
	u, err := url.Parse("https://example.com/a/b?x=1&y=two")
	if err != nil {
		panic(err)
	}
	req, err := http.NewRequest("GET", u.String(), nil)
	if err != nil {
		panic(err)
	}
	t := T{u.Scheme, req.URL.Host, strings.ToUpper(u.Path), map[string]string{}}
	for k, v := range u.Query() {
		t.Query[k] = strings.Join(v, ",")
	}
	b, _ := json.Marshal(t)
	fmt.Fprintln(os.Stdout, string(b))
}
`

type build struct {
	name   string // column name
	goroot string
	flags  []string
}

type binary struct {
	file     int64
	sections map[string]uint64
	funcs    map[string]uint64 // text symbols and their sizes
}

func main() {
	forkRoot := flag.String("fork", "", "the fork's GOROOT (default: ../goroot next to benchmarks/)")
	upRoot := flag.String("upstream", "", "upstream's GOROOT (default: found from the fork's VERSION)")
	sections := flag.Bool("sections", false, "also print every section that differs")
	keep := flag.String("keep", "", "leave the binaries in this directory")
	flag.Parse()
	if *forkRoot == "" {
		wd, err := os.Getwd()
		check(err)
		*forkRoot = filepath.Join(wd, "..", "goroot")
	}
	fr, err := filepath.Abs(*forkRoot)
	check(err)
	if *upRoot == "" {
		_, *upRoot, err = upstream.GOROOT(filepath.Join(fr, "bin", "go"), os.Environ())
		check(err)
	}
	dir := *keep
	if dir == "" {
		dir, err = os.MkdirTemp("", "binsize-")
		check(err)
		defer os.RemoveAll(dir)
	}
	check(os.MkdirAll(dir, 0o777))
	check(os.WriteFile(filepath.Join(dir, "hello.go"), []byte(hello), 0o666))
	check(os.WriteFile(filepath.Join(dir, "small.go"), []byte(small), 0o666))

	// The first three are compared section by section; the last two give
	// the stripped sizes.
	builds := []build{
		{"upstream", *upRoot, nil},
		{"fork -sframe=false", fr, []string{"-ldflags=-sframe=false"}},
		{"fork", fr, nil},
		{"upstream -s -w", *upRoot, []string{"-ldflags=-s -w"}},
		{"fork -sframe=false -s -w", fr, []string{"-ldflags=-sframe=false -s -w"}},
	}
	progs := []struct{ name, pkg string }{
		{"hello", filepath.Join(dir, "hello.go")},
		{"small", filepath.Join(dir, "small.go")},
		{"cmd/go", "cmd/go"},
	}
	for _, p := range progs {
		var bins []binary
		for i, b := range builds {
			out := filepath.Join(dir, fmt.Sprintf("%s.%d", strings.ReplaceAll(p.name, "/", "_"), i))
			args := append([]string{"build", "-trimpath", "-o", out}, b.flags...)
			cmd := exec.Command(filepath.Join(b.goroot, "bin", "go"), append(args, p.pkg)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GO111MODULE=off", "GOROOT="+b.goroot, "GOTOOLCHAIN=local", "GOFLAGS=")
			if outb, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "binsize: %s: %v\n%s", strings.Join(cmd.Args, " "), err, outb)
				os.Exit(1)
			}
			bins = append(bins, measure(out))
		}
		print(p.name, builds, bins, *sections)
	}
}

func measure(path string) binary {
	st, err := os.Stat(path)
	check(err)
	f, err := elf.Open(path)
	check(err)
	defer f.Close()
	b := binary{file: st.Size(), sections: map[string]uint64{}, funcs: map[string]uint64{}}
	for _, s := range f.Sections {
		if s.Name != "" && s.Type != elf.SHT_NOBITS {
			b.sections[s.Name] = s.FileSize
		}
	}
	syms, _ := f.Symbols() // none when stripped
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			b.funcs[s.Name] += s.Size
		}
	}
	return b
}

// features names, by the fork's function names, what each new function of
// the runtime is for; the first match wins.
var features = []struct{ name, prefixes string }{
	{"lineage ABI", "runtime.lineage"},
	{"fpunwindcheck", "runtime.fpunwindcheck"},
	{"goroutine profile by frame pointers", "runtime.savegFP runtime.gfp runtime.goroutineProf runtime.forEachGProfile"},
	{"heap profile by frame pointers", "runtime.mProf runtime.memProf runtime.fp runtime.specialProf runtime.prefetch"},
	{"GODEBUG range checks", "runtime.parseDebugClamped runtime.debugClamped"},
	{"frame-pointer boundaries", "runtime.asyncPreemptFP runtime.goexitResumeFP runtime.cgocallbackLink runtime.preemptFP"},
}

func feature(name string) string {
	for _, f := range features {
		for _, p := range strings.Fields(f.prefixes) {
			if strings.HasPrefix(name, p) {
				return f.name
			}
		}
	}
	if strings.HasPrefix(name, "runtime.") {
		return "other runtime"
	}
	return "other packages"
}

// group is the summary row a section is counted in.
func group(name string) string {
	switch {
	case strings.HasPrefix(name, ".text"):
		return ".text"
	case name == ".gopclntab":
		return ".gopclntab"
	case strings.HasPrefix(name, ".debug_") || strings.HasPrefix(name, ".zdebug_"):
		return "DWARF (.debug_*)"
	case name == ".symtab" || name == ".strtab":
		return ".symtab, .strtab"
	case name == ".sframe":
		return ".sframe"
	}
	return "data (.rodata, .go.type, .data, ...)"
}

var groups = []string{".text", ".gopclntab", "DWARF (.debug_*)", "data (.rodata, .go.type, .data, ...)", ".symtab, .strtab"}

func print(prog string, builds []build, bins []binary, all bool) {
	up, nosf, fk := bins[0], bins[1], bins[2]
	goarch := cmp.Or(os.Getenv("GOARCH"), runtime.GOARCH)
	fmt.Printf("\n%s (%s, -trimpath)\n\n", prog, goarch)
	fmt.Printf("| | %s | %s | %s |\n|---|---:|---:|---:|\n", builds[0].name, builds[1].name, builds[2].name)
	fmt.Printf("| file | %d | %d (%+.2f%%) | %d (%+.2f%%) |\n", up.file, nosf.file, pct(nosf.file, up.file), fk.file, pct(fk.file, up.file))
	ups, nosfs := bins[3], bins[4]
	fmt.Printf("| file, stripped (-s -w) | %d | %d (%+.2f%%) | |\n", ups.file, nosfs.file, pct(nosfs.file, ups.file))
	sf := int64(fk.sections[".sframe"])
	fmt.Printf("| .sframe | | | %d (%.2f%% of the file) |\n", sf, 100*float64(sf)/float64(fk.file))
	sum := func(b binary, g string) (n int64) {
		for name, size := range b.sections {
			if g == "" && group(name) != ".sframe" || group(name) == g {
				n += int64(size)
			}
		}
		return n
	}
	for _, g := range groups {
		u, f := sum(up, g), sum(nosf, g)
		fmt.Printf("| %s | %d | %d (%+d) | |\n", g, u, f, f-u)
	}
	// The rest of the file: headers and the padding that aligns
	// segments, which moves in page-sized steps.
	u, f := up.file-sum(up, ""), nosf.file-sum(nosf, "")
	fmt.Printf("| headers, alignment | %d | %d (%+d) | |\n", u, f, f-u)

	// The text the fork adds, by feature: new functions, and the growth
	// (or shrinking) of functions both have, from the symbol tables of
	// the builds without .sframe.
	byFeature := map[string][2]int64{} // new, changed
	for name, size := range nosf.funcs {
		old, ok := up.funcs[name]
		ft := feature(name)
		v := byFeature[ft]
		if !ok {
			v[0] += int64(size)
		} else {
			v[1] += int64(size) - int64(old)
		}
		byFeature[ft] = v
	}
	for name, size := range up.funcs {
		if _, ok := nosf.funcs[name]; !ok {
			v := byFeature[feature(name)]
			v[1] -= int64(size)
			byFeature[feature(name)] = v
		}
	}
	fmt.Printf("\n| %s: text by feature | new functions | changed or removed functions |\n|---|---:|---:|\n", prog)
	names := []string{}
	for _, f := range features {
		names = append(names, f.name)
	}
	names = append(names, "other runtime", "other packages")
	for _, n := range names {
		if v := byFeature[n]; v != [2]int64{} {
			fmt.Printf("| %s | %d | %+d |\n", n, v[0], v[1])
		}
	}
	if !all {
		return
	}
	names = nil
	for n := range nosf.sections {
		names = append(names, n)
	}
	for n := range up.sections {
		if _, ok := nosf.sections[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	fmt.Printf("\n| section | %s | %s |\n|---|---:|---:|\n", builds[0].name, builds[1].name)
	for _, n := range names {
		if u, f := int64(up.sections[n]), int64(nosf.sections[n]); u != f {
			fmt.Printf("| %s | %d | %d (%+d) |\n", n, u, f, f-u)
		}
	}
}

func pct(a, b int64) float64 { return 100 * (float64(a)/float64(b) - 1) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}
