// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// CGO_LINK_WALK is the walk over a cgo callback's C frame records that
// cgocallback runs on g0 (see cgocallbacklink.go); cgoLinkWalk runs it
// for TestCgoLinkWalk.
//
// On entry R20 is crosscall2's frame record, R22 the goroutine's frame
// pointer at its cgocall site (curg.sched.bp). The walk runs only if
// R22 != 0 and SPREG >= LO (the callback runs on g0's stack, so every
// address in [SPREG, BOUND) is stack). It follows at most
// cgoLinkMaxRecords records from R20, each strictly above the last and
// below BOUND (the g0 SP at which asmcgocall called C), and succeeds if
// the last one's saved frame pointer is R22. On exit, if it succeeded,
// R20 is unchanged (the frame pointer to save in the fake record) and R19
// is the last record; otherwise R20 is R22 and R19 is 0. It clobbers R23,
// R24, R25 and the flags, and uses the labels cgolink*.
//
// The loop is unrolled, with R23 and R24 taking turns as the record and
// the next one, so a step costs a load, a compare, a conditional compare
// and a branch. The next record's address is compared with R22 only when
// it leaves the range: R22 is on the goroutine stack, never in g0's.

// CGO_LINK_STEP loads the saved frame pointer of record FP into NEXT and
// jumps to OUT unless FP < NEXT < BOUND.
#define CGO_LINK_STEP(FP, NEXT, BOUND, OUT) \
	MOVD	(FP), NEXT; \
	CMP	FP, NEXT; \
	CCMP	HI, NEXT, BOUND, $2; \
	BHS	OUT

// CGO_LINK_STEPS7 takes seven steps from the record in R24 or, if it
// leaves the loop, jumps to cgolinkout23 or cgolinkout24 with the next
// record in R23 or R24 and the last one in the other.
#define CGO_LINK_STEPS7(BOUND) \
	CGO_LINK_STEP(R24, R23, BOUND, cgolinkout23); \
	CGO_LINK_STEP(R23, R24, BOUND, cgolinkout24); \
	CGO_LINK_STEP(R24, R23, BOUND, cgolinkout23); \
	CGO_LINK_STEP(R23, R24, BOUND, cgolinkout24); \
	CGO_LINK_STEP(R24, R23, BOUND, cgolinkout23); \
	CGO_LINK_STEP(R23, R24, BOUND, cgolinkout24); \
	CGO_LINK_STEP(R24, R23, BOUND, cgolinkout23)

// The walk takes 1 + 7 + 8*7 = cgoLinkMaxRecords (64) steps; the counter
// is set only once a chain is longer than 8 records.
#define CGO_LINK_WALK(SPREG, LO, BOUND) \
	CBZ	R22, cgolinkno; \
	CMP	LO, SPREG; \
	BLO	cgolinkno; \
	CGO_LINK_STEP(R20, R24, BOUND, cgolinkout20); \
	CGO_LINK_STEPS7(BOUND); \
	MOVD	$8, R25; \
cgolinkloop: \
	MOVD	R23, R24; \
	CGO_LINK_STEPS7(BOUND); \
	SUB	$1, R25; \
	CBNZ	R25, cgolinkloop; \
cgolinkno: \
	MOVD	R22, R20; \
	MOVD	ZR, R19; \
	B	cgolinkdone; \
cgolinkout20: \
	MOVD	R20, R23; \
cgolinkout24: \
	/* R24 is the saved frame pointer of record R23. */ \
	CMP	R22, R24; \
	BNE	cgolinkno; \
	MOVD	R23, R19; \
	B	cgolinkdone; \
cgolinkout23: \
	CMP	R22, R23; \
	BNE	cgolinkno; \
	MOVD	R24, R19; \
cgolinkdone:
