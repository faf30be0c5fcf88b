// Binsize builds a small program (hello) and cmd/go with the fork, with and
// without its .sframe section (-ldflags=-sframe=false), and with the
// upstream release the fork is built from, and prints a Markdown table of
// file and section sizes: the record of doc/benchmarks.md's "Binary size".
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

type build struct {
	name   string // column name
	goroot string
	flags  []string
}

type binary struct {
	file     int64
	sections map[string]uint64
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

	builds := []build{
		{"upstream", *upRoot, nil},
		{"fork -sframe=false", fr, []string{"-ldflags=-sframe=false"}},
		{"fork", fr, nil},
	}
	progs := []struct{ name, pkg string }{
		{"hello", filepath.Join(dir, "hello.go")},
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
	b := binary{file: st.Size(), sections: map[string]uint64{}}
	for _, s := range f.Sections {
		if s.Name != "" && s.Type != elf.SHT_NOBITS {
			b.sections[s.Name] = s.FileSize
		}
	}
	return b
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
	if !all {
		return
	}
	var names []string
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
