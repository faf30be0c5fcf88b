// Package boundary lists the functions where a frame-pointer chain crosses
// from one context to another, shared by the source and binary checks.
// Names are as in the pclntab: package path, dot, name; static (<>) symbols
// without the <> suffix.
package boundary

// CABIEntries are functions entered from C code or the kernel.
var CABIEntries = map[string]string{
	"crosscall2":                  "entered from C by cgo callbacks",
	"runtime.sigtramp":            "signal handler entry",
	"runtime.cgoSigtramp":         "signal handler entry (cgo)",
	"runtime.sigprofNonGoWrapper": "SIGPROF on a thread not created by Go",
	"_rt0_amd64_lib":              "c-archive/c-shared initialisation, called from the dynamic loader",
	"_rt0_arm64_lib":              "c-archive/c-shared initialisation, called from the dynamic loader",
}

// DocumentedLinks are stack switches whose new-stack frames deliberately link
// to the frames of the old stack, with the reason that is safe.
var DocumentedLinks = map[string]string{
	"runtime.systemstack":         "g0 frames link to the goroutine's frames, which cannot move while it runs on the system stack",
	"runtime.asmcgocall":          "C frames on g0 link to the goroutine's frames at the cgo call; a goroutine's stack is not moved during a cgo call",
	"runtime.nanotime1":           "vDSO call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"runtime.walltime":            "vDSO call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"runtime.vgetrandom1":         "vDSO call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"racecall":                    "race runtime call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"runtime.racecallatomic":      "race runtime call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"time.now":                    "vDSO call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"runtime.switchToCrashStack0": "fatal-error path: the crash stack links to the failing goroutine's frames, which are not freed before the process exits",
}

// Switches are further functions that switch stacks or start threads;
// they are checked even where the assembler did not mark them SPWRITE.
var Switches = map[string]string{
	"runtime.clone":       "thread creation: the child runs on a new stack",
	"runtime.mcall":       "switches to g0",
	"runtime.morestack":   "switches to g0",
	"runtime.gogo":        "switches to a goroutine",
	"runtime.cgocallback": "switches from g0 to the goroutine",
	"runtime.asmcgocall":  "switches to g0 for a C call",
	"runtime.systemstack": "switches to g0",
}

// RootCallees establish their own chain root, so calling them with a live
// frame pointer is fine.
var RootCallees = map[string]bool{
	"runtime.morestack":        true,
	"runtime.morestack_noctxt": true,
}

// NoReturn functions never return to their caller: a path ends at a call to
// one of them (the RET after it is "not reached").
var NoReturn = map[string]bool{
	"runtime.abort":               true,
	"runtime.badmcall":            true,
	"runtime.badmcall2":           true,
	"runtime.badmorestackg0":      true,
	"runtime.badmorestackgsignal": true,
	"runtime.badsystemstack":      true,
	"runtime.mstart0":             true,
	"runtime.goexit1":             true,
	"runtime.throw":               true,
	"runtime.fatal":               true,
	"runtime.exit":                true,
	"runtime.exitThread":          true,
}
