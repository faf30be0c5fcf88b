// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// CGO_LINK_WALK is the walk over a cgo callback's C frame records that
// cgocallback runs on g0 (see cgocallbacklink.go); cgoLinkWalk runs it
// for TestCgoLinkWalk.
//
// On entry R12 is crosscall2's frame record, R13 the goroutine's frame
// pointer at its cgocall site (curg.sched.bp). The walk runs only if
// R13 != 0 and SPREG >= LO (the callback runs on g0's stack, so every
// address in [SPREG, BOUND) is stack). It follows at most
// cgoLinkMaxRecords records from R12, each strictly above the last and
// below BOUND (the g0 SP at which asmcgocall called C), and succeeds if
// the last one's saved frame pointer is R13. On exit, if it succeeded,
// R12 is unchanged (the frame pointer to save in the fake record) and R11
// is the last record; otherwise R12 is R13 and R11 is 0. It clobbers R8,
// R9, R10 and the flags, and uses the labels cgolink*.
//
// The loop is unrolled, with R8 and R9 taking turns as the record and the
// next one, so a step costs a load, two compares and two branches. The
// next record's address is compared with R13 only when it leaves the
// range: R13 is on the goroutine stack, never in g0's.

// CGO_LINK_STEP loads the saved frame pointer of record FP into NEXT and
// jumps to OUT unless FP < NEXT < BOUND.
#define CGO_LINK_STEP(FP, NEXT, BOUND, OUT) \
	MOVQ	(FP), NEXT; \
	CMPQ	NEXT, FP; \
	JLS	OUT; \
	CMPQ	NEXT, BOUND; \
	JCC	OUT

// CGO_LINK_STEPS7 takes seven steps from the record in R9 or, if it
// leaves the loop, jumps to cgolinkout8 or cgolinkout9 with the next
// record in R8 or R9 and the last one in the other.
#define CGO_LINK_STEPS7(BOUND) \
	CGO_LINK_STEP(R9, R8, BOUND, cgolinkout8); \
	CGO_LINK_STEP(R8, R9, BOUND, cgolinkout9); \
	CGO_LINK_STEP(R9, R8, BOUND, cgolinkout8); \
	CGO_LINK_STEP(R8, R9, BOUND, cgolinkout9); \
	CGO_LINK_STEP(R9, R8, BOUND, cgolinkout8); \
	CGO_LINK_STEP(R8, R9, BOUND, cgolinkout9); \
	CGO_LINK_STEP(R9, R8, BOUND, cgolinkout8)

// The walk takes 1 + 7 + 8*7 = cgoLinkMaxRecords (64) steps; the counter
// is set only once a chain is longer than 8 records.
#define CGO_LINK_WALK(SPREG, LO, BOUND) \
	TESTQ	R13, R13; \
	JEQ	cgolinkno; \
	CMPQ	SPREG, LO; \
	JCS	cgolinkno; \
	CGO_LINK_STEP(R12, R9, BOUND, cgolinkout12); \
	CGO_LINK_STEPS7(BOUND); \
	MOVL	$8, R10; \
cgolinkloop: \
	MOVQ	R8, R9; \
	CGO_LINK_STEPS7(BOUND); \
	DECL	R10; \
	JNE	cgolinkloop; \
cgolinkno: \
	MOVQ	R13, R12; \
	XORL	R11, R11; \
	JMP	cgolinkdone; \
cgolinkout12: \
	MOVQ	R12, R8; \
cgolinkout9: \
	/* R9 is the saved frame pointer of record R8. */ \
	CMPQ	R9, R13; \
	JNE	cgolinkno; \
	MOVQ	R8, R11; \
	JMP	cgolinkdone; \
cgolinkout8: \
	CMPQ	R8, R13; \
	JNE	cgolinkno; \
	MOVQ	R9, R11; \
cgolinkdone:
