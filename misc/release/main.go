// Release builds the fork as a Go toolchain distribution: the archives a user
// unpacks, and the golang.org/toolchain module versions that the go command's
// toolchain switching (GOTOOLCHAIN, go.mod toolchain lines) downloads from a
// GOPROXY.
//
// It lays out a fresh GOROOT from the repository (./fork apply), stamps its
// VERSION with a time line, and runs upstream's make.bash there. Then
// upstream's cmd/distpack packs each port, as make.bash -distpack does: the
// binary archive, the source archive and the module files, with every mtime
// set to the VERSION time and every mode fixed. A port other than the host is
// first cross-compiled with the built toolchain, with the flags cmd/dist uses
// for a release (-trimpath, no DWARF in cmd). The fork's commands,
// fpcheck and golineage, are built from their modules (misc/fpcheck,
// misc/golineage) for each port and added to pkg/tool/GOOS_GOARCH of the
// binary archive and the module zip, so that `go tool fpcheck` runs them
// whichever way the toolchain was installed. The reader SDK, the module
// fpsafe.dev/misc, goes into the same GOPROXY tree at the version
// misc/lineage/VERSION names (sdk.go).
//
// Everything that reaches the output is a function of the commit: the VERSION
// time comes from git (see versionTime), paths are trimmed, the archives carry
// no owner, host or build-time data, and build IDs are content hashes. Two runs
// from the same commit in different directories give the same SHA256SUMS.
//
// Usage:
//
//	release -top DIR -upstream GOROOT [-out DIR] [-work DIR] [-ports LIST] [-keep]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const usageText = `usage: release -top DIR -upstream GOROOT [flags]

Builds the fork for each port and writes to -out:
  VERSION.GOOS-GOARCH.tar.gz      binary archives (fpcheck, golineage in pkg/tool/GOOS_GOARCH)
  VERSION.src.tar.gz              the source archive
  proxy/golang.org/toolchain/@v/  list, .info, .mod, .zip: a GOPROXY tree for GOTOOLCHAIN
  proxy/fpsafe.dev/misc/@v/       the reader SDK's module, at the version misc/lineage/VERSION names
  SHA256SUMS                      for sha256sum -c

Flags:
  -top DIR          the fork's repository (holding fork, VERSION, patches/, misc/)
  -upstream GOROOT  pristine upstream Go, as ./fork upstream prints it (the bootstrap toolchain)
  -out DIR          output directory, replaced on success (default TOP/dist)
  -work DIR         build directory; kept, and a finished make.bash there is reused
                    (default: a temporary directory, removed at the end)
  -ports LIST       comma-separated GOOS/GOARCH list (default linux/amd64,linux/arm64)
  -keep             keep the temporary build directory
  -dirty            allow uncommitted changes under VERSION, fork, patches/, src/ and misc/

Exit codes: 0 released, 1 a step failed, 2 bad usage.
`

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// usageError marks bad command-line input (exit code 2).
type usageError struct{ error }

func cli(args []string, stdout, stderr io.Writer) int {
	err := run(args, stdout, stderr)
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "release: %v\n%s", err, usageText)
		return 2
	}
	fmt.Fprintf(stderr, "release: %v\n", err)
	return 1
}

// newFlags declares the flags into cfg; the usage test checks usageText names each.
func newFlags(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.top, "top", "", "")
	fs.StringVar(&cfg.upstream, "upstream", "", "")
	fs.StringVar(&cfg.out, "out", "", "")
	fs.StringVar(&cfg.work, "work", "", "")
	fs.StringVar(&cfg.ports, "ports", "linux/amd64,linux/arm64", "")
	fs.BoolVar(&cfg.keep, "keep", false, "")
	fs.BoolVar(&cfg.dirty, "dirty", false, "")
	return fs
}

func run(args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := newFlags(&cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	if cfg.top == "" || cfg.upstream == "" {
		return usageError{errors.New("-top and -upstream are required")}
	}
	ports, err := parsePorts(cfg.ports)
	if err != nil {
		return usageError{err}
	}
	r := &releaser{cfg: cfg, ports: ports, log: stderr}
	return r.release(stdout)
}

// A port is one GOOS/GOARCH pair.
type port struct{ goos, goarch string }

func (p port) dash() string  { return p.goos + "-" + p.goarch }
func (p port) under() string { return p.goos + "_" + p.goarch }

func parsePorts(list string) ([]port, error) {
	var ports []port
	for _, s := range strings.Split(list, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(s), "/")
		if !ok || goos == "" || goarch == "" || strings.ContainsAny(goarch, "/ ") {
			return nil, fmt.Errorf("-ports: %q is not GOOS/GOARCH", s)
		}
		if goos == "windows" {
			return nil, fmt.Errorf("-ports: %s: windows archives are zip files, which release does not write yet", s)
		}
		ports = append(ports, port{goos, goarch})
	}
	return ports, nil
}
