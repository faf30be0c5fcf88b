// Package asmfp defines analyzers that check how Go assembly (amd64, arm64)
// treats the frame pointer where frame-pointer chains must end or link.
//
//   - fptopframe: a TOPFRAME function, or a function entered from C
//     (crosscall2, sigtramp, ...), calls with the caller's frame pointer
//     live, or (C entry) changes it before saving it.
//   - fpstackswitch: a function switches SP to another stack and calls on it
//     while the frame pointer still points into the old stack, without a
//     documented, deliberate link.
//   - fpclobber: the frame pointer is clobbered before it is saved, as
//     golang.org/x/tools/go/analysis/passes/framepointer reports, but also in
//     package runtime and for every GOOS; a clear or link from which the
//     function never returns (a context switch) is not a clobber.
//
// A deliberate link is declared with a "// fpcheck:link" comment (and a
// reason) on the TEXT line, on the stack switch, or on the call.
package asmfp

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis"
)

var TopFrame = &analysis.Analyzer{
	Name: "fptopframe",
	Doc:  "report TOPFRAME and C-entry assembly functions that call with the caller's frame pointer live\n\nA frame-pointer unwinder must stop at a TOPFRAME function. If it calls\nwithout first clearing the frame pointer (after saving it, when entered from C),\nthe callee's frame record points at whatever frame pointer the caller had,\nwhich for C code built without frame pointers is garbage.",
	Run:  runner(checkTopframe),
}

var StackSwitch = &analysis.Analyzer{
	Name: "fpstackswitch",
	Doc:  "report assembly that calls on a new stack with a frame pointer into the old one\n\nAfter SP is switched to another stack, a call must be preceded by a write of\nthe frame pointer (a clear, or a deliberate link annotated // fpcheck:link),\nunless the function is one of the runtime's documented links.",
	Run:  runner(checkStackSwitch),
}

var Clobber = &analysis.Analyzer{
	Name: "fpclobber",
	Doc:  "report assembly that clobbers the frame pointer before saving it\n\nLike x/tools' framepointer pass, but also in package runtime and for all\noperating systems; a clear or link after which the function never returns\n(a context switch) is accepted.",
	Run:  runner(checkClobber),
}

// Analyzers are all of the package's analyzers.
var Analyzers = []*analysis.Analyzer{TopFrame, StackSwitch, Clobber}

var knownOS = []string{"aix", "android", "darwin", "dragonfly", "freebsd", "illumos", "ios", "linux", "netbsd", "openbsd", "plan9", "solaris", "windows"}

// fileTarget returns the GOOS and GOARCH a file is built for: from its name,
// else from the environment the tool runs in (go vet sets it).
func fileTarget(name string) (goos, goarch string) {
	goos, goarch = os.Getenv("GOOS"), os.Getenv("GOARCH")
	if goos == "" {
		goos = build.Default.GOOS
	}
	if goarch == "" {
		goarch = build.Default.GOARCH
	}
	base := strings.TrimSuffix(filepath.Base(name), ".s")
	parts := strings.Split(base, "_")
	for i, p := range parts {
		if i == 0 {
			continue
		}
		if p == "amd64" || p == "arm64" || p == "386" || p == "arm" || strings.HasPrefix(p, "ppc") || strings.HasPrefix(p, "mips") || p == "riscv64" || p == "s390x" || p == "loong64" || p == "wasm" {
			goarch = p
		}
		for _, o := range knownOS {
			if p == o {
				goos = p
			}
		}
	}
	return goos, goarch
}

func runner(check func(*asmFunc, *archRegs) []finding) func(*analysis.Pass) (any, error) {
	return func(pass *analysis.Pass) (any, error) {
		for _, fname := range pass.OtherFiles {
			if !strings.HasSuffix(fname, ".s") {
				continue
			}
			goos, goarch := fileTarget(fname)
			r := archs[goarch]
			if r == nil {
				continue
			}
			content, err := readFile(pass, fname)
			if err != nil {
				return nil, err
			}
			tf := pass.Fset.AddFile(fname, -1, len(content))
			tf.SetLinesForContent(content)
			for _, f := range parseFile(fname, content, pass.Pkg.Path(), goos, goarch) {
				for _, fd := range check(f, r) {
					pass.Reportf(posOf(tf, fd.line), "%s", fd.msg)
				}
			}
		}
		return nil, nil
	}
}

func readFile(pass *analysis.Pass, name string) ([]byte, error) {
	if pass.ReadFile != nil {
		return pass.ReadFile(name)
	}
	return os.ReadFile(name)
}
