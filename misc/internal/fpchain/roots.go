// Package fpchain is the one list of where a frame-pointer chain may end or
// cross from one stack or ABI to another in a Go program (linux/amd64,
// linux/arm64), and the one answer to whether a function's own frame
// record is in place at a PC. fpcheck's checkers (assembly source, machine
// code, perf call chains) and golineage's unwinder all use it;
// TestRootsMatchRuntime in misc/fpcheck checks the lists against the
// runtime the fork builds. doc/fp-boundaries.md explains each entry.
//
// Names are as in the pclntab: package path, dot, name; static (<>)
// symbols without the <> suffix.
package fpchain

// A Root is a function at which a user-space frame-pointer chain may end.
type Root struct {
	Why string
	// TopFrame: the runtime marks it TOPFRAME (on the architectures listed
	// in Arch, or all); its own unwinder stops there too.
	TopFrame bool
	// Arch limits the root to one architecture ("" for both).
	Arch string
	// Cgo limits the root to binaries that use cgo ("yes": crosscall2 and
	// cgocallback come with runtime/cgo) or that do not ("no": a cgo binary
	// is entered by C's _start, not the runtime's _rt0_*); "" for both.
	Cgo string
	// C: a C library function, not in the Go binary's pclntab.
	C bool
}

// Roots are the functions at which a chain may end, with why it ends there.
var Roots = map[string]Root{
	"runtime.goexit":              {Why: "bottom of every goroutine", TopFrame: true},
	"runtime.mstart":              {Why: "thread root of Go-created threads (clears the frame pointer)", TopFrame: true},
	"runtime.rt0_go":              {Why: "process entry (clears the frame pointer)", TopFrame: true},
	"runtime.sigtramp":            {Why: "signal handler entry", TopFrame: true},
	"runtime.mcall":               {Why: "switch to g0 that clears the frame pointer"},
	"runtime.morestack":           {Why: "switch to g0 that clears the frame pointer"},
	"runtime.cgoSigtramp":         {Why: "signal handler entry (cgo)", Arch: "amd64"},
	"runtime.sigprofNonGoWrapper": {Why: "SIGPROF on a thread not created by Go"},
	"crosscall2":                  {Why: "C-to-Go entry on a thread without a goroutine above (C-created thread)", Cgo: "yes"},
	"runtime.cgocallback":         {Why: "C-to-Go entry on a thread without a goroutine above", Cgo: "yes"},
	"_rt0_amd64":                  {Why: "process entry", Arch: "amd64", Cgo: "no"},
	"_rt0_arm64":                  {Why: "process entry", Arch: "arm64", Cgo: "no"},
	"_rt0_amd64_linux":            {Why: "process entry", Arch: "amd64", Cgo: "no"},
	"_rt0_arm64_linux":            {Why: "process entry", Arch: "arm64", Cgo: "no"},
	"main":                        {Why: "C's call into Go at process start in a binary linked by the system linker (libc calls main, which jumps to rt0_go)", Cgo: "yes"},
	"_start":                      {Why: "C process entry", C: true},
	"__libc_start_main":           {Why: "C process entry", C: true},
	"__libc_start_call_main":      {Why: "C process entry", C: true},
	"start_thread":                {Why: "C thread root (glibc)", C: true},
	"clone":                       {Why: "C thread root (glibc)", C: true},
	"clone3":                      {Why: "C thread root (glibc)", C: true},
}

// IsRoot reports whether a chain may end at the function named name.
func IsRoot(name string) bool {
	_, ok := Roots[name]
	return ok
}

// StackRoots are the roots that end every goroutine's or Go-created
// thread's stack, in the order a walker should test them.
var StackRoots = []string{"runtime.goexit", "runtime.mstart", "runtime.rt0_go"}

// SignalEntries are the signal trampolines: a return address into one of
// them means the frames below it run in a handler the kernel entered, with
// the interrupted registers in the signal frame.
var SignalEntries = []string{"runtime.sigtramp", "runtime.cgoSigtramp"}

// SignalFrames are the functions an unwind table may mark as signal
// frames: the handler entries, sigprofNonGoWrapper (SIGPROF's handler on
// threads Go did not create, entered from the kernel like them), and the
// signal-return trampoline the kernel plants as a handler's return address
// (sa_restorer), past which the interrupted context is in the signal frame.
var SignalFrames = append(SignalEntries[:len(SignalEntries):len(SignalEntries)],
	"runtime.sigprofNonGoWrapper", "runtime.sigreturn__sigaction")

// InjectedCalls are the functions the runtime's signal handler makes a
// thread call without a call instruction (pushCall). On arm64 it first
// pushes 16 bytes holding the interrupted LR, so the caller's SP is 16
// bytes above the function's entry SP; gentraceback knows that space.
var InjectedCalls = []string{"runtime.asyncPreempt", "runtime.debugCallV2"}

// CEntries are functions entered from C code or the kernel: they follow
// the C ABI, in which the frame pointer is callee-saved.
var CEntries = map[string]string{
	"crosscall2":                  "entered from C by cgo callbacks",
	"runtime.sigtramp":            "signal handler entry",
	"runtime.cgoSigtramp":         "signal handler entry (cgo)",
	"runtime.sigprofNonGoWrapper": "SIGPROF on a thread not created by Go",
	"_rt0_amd64_lib":              "c-archive/c-shared initialisation, called from the dynamic loader",
	"_rt0_arm64_lib":              "c-archive/c-shared initialisation, called from the dynamic loader",
}

// Links are stack switches whose new-stack frames deliberately link to the
// frames of the old stack, with the reason that is safe.
var Links = map[string]string{
	"runtime.systemstack":         "g0 frames link to the goroutine's frames, which cannot move while it runs on the system stack",
	"runtime.asmcgocall":          "C frames on g0 link to the goroutine's frames at the cgo call; the goroutine's stack moves only in a callback, and then copystack adjusts the C record that links to it",
	"runtime.nanotime1":           "vDSO call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"runtime.walltime":            "vDSO call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"runtime.vgetrandom1":         "vDSO call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"racecall":                    "race runtime call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"runtime.racecallatomic":      "race runtime call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"time.now":                    "vDSO call on g0 links to the calling goroutine's frames, which cannot move during the call",
	"runtime.switchToCrashStack0": "fatal-error path: the crash stack links to the failing goroutine's frames, which are not freed before the process exits",
}

// CgoCallbackLink is the one link the runtime decides at run time. In a cgo
// callback, cgocallback's fake frame record (return PC Marker+8, a return
// marker) links either to the goroutine's frames at the cgocall site, or,
// when cgocallbackg has verified that C's frame records form a chain that
// ends exactly at asmcgocall's record, to crosscall2's record and the C
// frames, which then end at End (asmcgocall). See doc/fp-boundaries.md and
// the runtime's cgocallbacklink.go.
var CgoCallbackLink = struct {
	Entry, Marker, End, Why string
}{
	Entry:  "runtime.cgocallback",
	Marker: "runtime.systemstack_switch",
	End:    "runtime.asmcgocall",
	Why:    "the callback's frames link through C's frames to asmcgocall's record when cgocallbackg verified them, else to the cgocall site",
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
// one of them.
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

// IsReturnMarker reports whether offset off into the function named name
// is a return address the runtime plants without a call: gogo makes
// goexit+PCQuantum the return address of a goroutine's first frame, and
// gosave_systemstack_switch saves systemstack_switch+8 as the PC of a
// goroutine that switched to g0 (for asmcgocall), which cgocallback's frame
// record links to.
func IsReturnMarker(arch, name string, off uint64) bool {
	switch name {
	case "runtime.goexit":
		return off == pcQuantum(arch)
	case "runtime.systemstack_switch":
		return off == 8
	}
	return false
}

func pcQuantum(arch string) uint64 {
	if arch == "arm64" {
		return 4
	}
	return 1
}
