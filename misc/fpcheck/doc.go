// Command fpcheck verifies that frame-pointer chains in Go programs end or
// link correctly: statically in assembly source (an analysis driver, also
// usable as go vet -vettool), in built binaries, and dynamically.
//
// Usage:
//
//	fpcheck [-json] [-test] PACKAGES             analyse the assembly of PACKAGES
//	go vet -vettool=$(which fpcheck) PACKAGES
//	fpcheck binary [-json] [-v] [-d FUNC] FILE...  check Go ELF binaries (amd64, arm64)
//	fpcheck run [-timeout D] [-q] -- CMD ARGS
//	fpcheck perf [-json] [-o DIR] [-F HZ] [-timeout D] -- CMD ARGS
//	fpcheck perf [-json] -i FILE                   check a recorded perf script
//	fpcheck sframe [-json] [-n N] [-d FUNC] BINARY... check a binary's SFrame table
//
// Exit status: 0 clean, 1 findings, 2 usage error (bad flags or
// arguments), 3 failure (a package that does not load, a bad file, not ELF,
// not Go, unsupported architecture, perf missing or refused, a program that
// crashed, timed out or printed no report, a binary without an SFrame table
// or with one that does not decode).
//
// # Source mode
//
// Three analyzers (package internal/asmfp) read the .s files of each package,
// package runtime included, for amd64 and arm64, following every path
// through each TEXT block (labels, n(PC) branches, macros from #define and
// #include'd headers, #ifdef GOOS_/GOARCH_):
//
//   - fptopframe: a TOPFRAME function, or a function entered from C or the
//     kernel (crosscall2, sigtramp, cgoSigtramp, sigprofNonGoWrapper,
//     _rt0_*_lib), calls before clearing the frame pointer or setting it to a
//     deliberate link; a C entry changes the frame pointer before saving it
//     (it is callee-saved in the C ABI).
//   - fpstackswitch: after SP is loaded from memory or from a register not
//     derived from SP, a call is made before the frame pointer is written.
//   - fpclobber: x/tools' framepointer check (a frameless function writes
//     the frame pointer before reading it), also in package runtime; a clear
//     or link after which the function never returns (a context switch) and
//     a reload of a saved gobuf.bp are accepted.
//
// Accepted patterns: clear before the call (MOVQ $0, BP / XORL BP, BP /
// MOVD $0, R29 / MOVD ZR, R29); save the callee-saved registers, then clear;
// a deliberate link, either a load of the frame pointer from memory after
// the switch or a "// fpcheck:link <why>" comment on the TEXT line, the
// switch or the call. The runtime's own deliberate links (systemstack,
// asmcgocall, the vDSO calls, racecall, the crash stack) are listed, with
// reasons, in fpsafe.dev/misc/internal/fpchain, shared with binary and perf
// mode.
//
// Source and binary mode reduce each instruction to its effect on the frame
// and stack pointers and follow every path with one model of the rules
// (fpsafe.dev/misc/fpcheck/internal/fprule). They differ only in what each can
// see: the source has the fpcheck:link annotations, the machine code the
// assembler's prologues and the callees' code.
//
// # Binary mode
//
// fpcheck binary finds the pclntab (.gopclntab, or by its magic) and the
// text base (moduledata, found as the word pointing at the pclntab, or its
// relocation in PIE binaries), so stripped binaries work. It decodes the
// machine code of every TOPFRAME function, every function entered from C,
// and every function that writes SP (the SPWRITE flag, plus runtime.clone),
// and applies the same three rules on every path of the decoded control-flow
// graph. Two shapes count as writing the frame pointer on a new stack: a
// write after the switch (from the new SP, or a deliberate clear or load),
// and a frame pointer computed before the switch from the very register the
// new SP is then loaded from (the fork's amd64 cgocallback, which points BP
// at the frame record it built from curg.sched). A call to a leaf that never
// stores the frame pointer (arm64's load_g, save_g) needs no cleared frame
// pointer. One line per finding (function+offset, address, rule,
// instruction), then a table of the checked functions.
//
// # Dynamic modes
//
// fpcheck run appends fpunwindcheck=2 to GODEBUG, copies the program's
// output, and parses the runtime's report (see internal/runcheck): a line
// per mismatch with the first differing frame symbolized, a table per site,
// the total. A Go binary whose runtime has no such setting (no
// "fpunwindcheck" string in the binary, e.g. built by upstream Go) is named
// as such, and so is a fork-built program that reads no profile or trace
// (no runtime.fpunwindcheckReport): the fork links the check only into
// programs that can read what it checks.
//
// fpcheck perf -i FILE checks a perf script recorded earlier (perf script
// -F comm,tid,ip,sym,dso, as -o keeps it) instead of running a program.
//
// fpcheck perf runs perf record -e cpu-clock --call-graph fp, then perf
// script, and checks each user-space chain (see internal/perfcheck): Go frames
// are symbolized through the binary's pclntab, others through perf's ELF
// symbols; every Go return address must follow a call instruction (except
// goexit+PCQuantum, systemstack_switch+8 that gosave_systemstack_switch
// saves for a goroutine in a cgo call, and the PCs injected by asyncPreempt
// and sigpanic); no
// loop; the outermost frame must be a documented root (fpchain.Roots:
// runtime.goexit, mstart, rt0_go, mcall, morestack, sigtramp, cgoSigtramp,
// sigprofNonGoWrapper, crosscall2 and cgocallback for C-created threads,
// _rt0_*, and for C threads _start, __libc_start_main, start_thread, clone,
// clone3). Chains whose leaf is C code are counted but not judged: C built
// without frame pointers leaves the register to its own use. The report also
// counts every sample with an unsymbolizable or looping frame anywhere,
// split by whose frame pointer perf's walk started from: Go's (zero on the
// fork's stress corpus, 645 of about 9,800 on upstream's), C's in the
// program (its cgo C, or a frameless Go leaf such as _cgo_topofstack that
// C called), or C's in a non-Go shared library such as libc or ld.so. No Go
// change can make a walk from C's frame pointer valid.
//
// # SFrame mode
//
// fpcheck sframe decodes a binary's .sframe (SFrame version 3, read with
// fpsafe.dev/misc/internal/sframe, which is written from the specification
// and not from the linker's writer) from its PT_GNU_SFRAME segment, and
// checks it against the pclntab and the prologues (internal/sframecheck).
// For every instruction the pclntab's SP-delta table describes, in every
// function: an FDE and a row cover it (the FDE starting at the entry, or at
// an earlier function's entry when it covers the functions after its
// first, and ending at the end of a function's code or padding); the CFA
// is SP plus the
// SP delta (plus 8 on amd64, for the return address; plus 16 on arm64 in
// asyncPreempt and debugCallV2, whose calls the signal handler injects), or
// the frame pointer plus the record's offset where the register points at
// the function's own frame record; the return address is at CFA-8 on
// amd64, on arm64 in LR until the frame is allocated and then in the
// frame record the prologue stored (SP adjustments around a call later do
// not move it); the caller's frame pointer is either untracked while the
// register still holds it, or at the slot the prologue saved it to (CFA-16
// on amd64, by PUSHQ BP or by a MOVQ BP, off(SP) after the frame is
// allocated; just below the saved LR on arm64) once it is saved, and must
// be tracked where the register has been overwritten since. An arm64 RET
// through a register other than LR (asyncPreempt's RET (R27)) must be
// outermost: no rule can name that register. Stack roots
// (goexit, mstart, rt0_go, _rt0_*) must be outermost (return address
// undefined) at every instruction, signal handler entries (sigtramp,
// cgoSigtramp) must carry the FDE's signal bit; the bit is accepted on
// fpchain.SignalFrames only. An outermost rule is accepted in the other
// documented roots, in functions that switch stacks and in signal frames,
// and nowhere else. A table found only as a section, outside a
// PT_GNU_SFRAME segment, is a finding too. The report counts functions,
// instructions, instructions without coverage and disagreeing ones, and
// lists the first N ranges of each (-n).
//
// # Tests
//
// The tests call cli in process; only go vet -vettool runs a built fpcheck.
// Every output format has a golden file, testdata/NAME.golden, rewritten by
// go test -update: binary reports (text, -v, -json) and perf reports (text,
// -json) of programs built by upstream (the release VERSION names; reproducibly, so the files
// hold on any machine), run reports over a fake program, and the
// analyzers' diagnostics as text, JSON and go vet prints them, and sframe
// reports (text, -json) of a program built by upstream carrying a
// section that the test encodes from its pclntab (internal/sframe/
// sframetest) with planted errors: a missing FDE, a wrong CFA, a stack root
// not outermost, a missing signal bit, a frame pointer claimed saved after
// the epilogue.
// TestRootsMatchRuntime checks the shared list of roots and links
// (fpsafe.dev/misc/internal/fpchain) against the runtime under test.
//
// go test ./... in this module runs the analyzers' analysistest suites (both
// architectures), go vet -vettool over a planted violation, binary mode over
// programs built by this toolchain and by upstream (cgo, stripped,
// PIE, arm64), fpcheck run over a fake program and over the stress corpus in
// testdata/stress (skipped, with the reason, when the toolchain's runtime
// lacks GODEBUG=fpunwindcheck), and fpcheck perf over the stress corpus. The
// perf test asserts zero violations, and that callback samples reach the
// goroutine's frames above the cgo call, only when fpcheck binary is clean on
// the stress binary (the toolchain has the boundary fixes); otherwise it
// reports what it found.
package main
