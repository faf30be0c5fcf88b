package bincheck

import (
	"encoding/binary"
	"testing"

	"fpsafe.dev/misc/internal/gobin"
)

func TestDecodeAMD64(t *testing.T) {
	for _, tc := range []struct {
		code []byte
		fp   fpEffect
		sp   spEffect
		st   bool
		flow flow
	}{
		{[]byte{0x48, 0xc7, 0xc5, 0, 0, 0, 0}, fpClear, spNone, false, flowNext}, // MOVQ $0, BP
		{[]byte{0x31, 0xed}, fpClear, spNone, false, flowNext},                   // XORL BP, BP
		{[]byte{0x48, 0x89, 0xe5}, fpFromSP, spNone, false, flowNext},            // MOVQ SP, BP
		{[]byte{0x55}, fpNone, spNone, true, flowNext},                           // PUSHQ BP
		{[]byte{0x5d}, fpRestore, spNone, false, flowNext},                       // POPQ BP
		{[]byte{0x48, 0x8b, 0x6b, 0x38}, fpLoad, spNone, false, flowNext},        // MOVQ 0x38(BX), BP
		{[]byte{0x48, 0x8b, 0x66, 0x38}, fpNone, spSwitch, false, flowNext},      // MOVQ 0x38(SI), SP
		{[]byte{0x48, 0x83, 0xec, 0x10}, fpNone, spAdjust, false, flowNext},      // SUBQ $16, SP
		{[]byte{0x48, 0x89, 0xf4}, fpNone, spFromReg, false, flowNext},           // MOVQ SI, SP
		{[]byte{0x48, 0x89, 0x6c, 0x24, 0x08}, fpNone, spNone, true, flowNext},   // MOVQ BP, 8(SP)
		{[]byte{0xe8, 0, 0, 0, 0}, fpNone, spNone, false, flowCall},              // CALL
		{[]byte{0xff, 0xd0}, fpNone, spNone, false, flowCall},                    // CALL AX
		{[]byte{0xff, 0xe0}, fpNone, spNone, false, flowIndirect},                // JMP AX
		{[]byte{0x74, 0x02}, fpNone, spNone, false, flowCondJump},                // JE
		{[]byte{0xc3}, fpNone, spNone, false, flowRet},                           // RET
	} {
		in, err := decodeAMD64(tc.code, 0x1000)
		if err != nil {
			t.Fatalf("% x: %v", tc.code, err)
		}
		if in.fp != tc.fp || in.sp != tc.sp || in.fpSt != tc.st || in.flow != tc.flow {
			t.Errorf("% x (%s): fp=%d sp=%d st=%v flow=%d, want %d %d %v %d", tc.code, in.text, in.fp, in.sp, in.fpSt, in.flow, tc.fp, tc.sp, tc.st, tc.flow)
		}
	}
}

func TestDecodeARM64(t *testing.T) {
	for _, tc := range []struct {
		word uint32
		fp   fpEffect
		sp   spEffect
		st   bool
		flow flow
	}{
		{0xd280001d, fpClear, spNone, false, flowNext},   // MOVD $0, R29
		{0xaa1f03fd, fpClear, spNone, false, flowNext},   // MOVD ZR, R29
		{0x910003fd, fpFromSP, spNone, false, flowNext},  // MOVD RSP, R29
		{0xd10023fd, fpFromSP, spNone, false, flowNext},  // SUB $8, RSP, R29
		{0xa9007bfd, fpNone, spNone, true, flowNext},     // STP (R29, R30), (RSP)
		{0xa9407bfd, fpRestore, spNone, false, flowNext}, // LDP (RSP), (R29, R30)
		{0xf940001d, fpLoad, spNone, false, flowNext},    // MOVD (R0), R29
		{0x9100003f, fpNone, spFromReg, false, flowNext}, // MOVD R1, RSP
		{0x94000000, fpNone, spNone, false, flowCall},    // BL
		{0xd63f0060, fpNone, spNone, false, flowCall},    // BLR R3
		{0xd61f0060, fpNone, spNone, false, flowIndirect},
		{0xb4000040, fpNone, spNone, false, flowCondJump}, // CBZ R0
		{0xd65f03c0, fpNone, spNone, false, flowRet},
	} {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], tc.word)
		in, err := decodeARM64(b[:], 0x1000)
		if err != nil {
			t.Fatalf("%#x: %v", tc.word, err)
		}
		if in.fp != tc.fp || in.sp != tc.sp || in.fpSt != tc.st || in.flow != tc.flow {
			t.Errorf("%#08x (%s): fp=%d sp=%d st=%v flow=%d, want %d %d %v %d", tc.word, in.text, in.fp, in.sp, in.fpSt, in.flow, tc.fp, tc.sp, tc.st, tc.flow)
		}
	}
}

// analyse runs the stack-switch analysis over amd64 machine code as if it
// were a spwrite function named name.
func analyse(t *testing.T, name string, code ...[]byte) []Finding {
	t.Helper()
	var all []byte
	for _, c := range code {
		all = append(all, c...)
	}
	b := &gobin.Binary{Arch: "amd64"}
	f := &gobin.Func{Name: name, Entry: 0x1000, End: 0x1000 + uint64(len(all))}
	insns, err := decodeAll(all, f.Entry, decodeAMD64)
	if err != nil {
		t.Fatal(err)
	}
	a := &analysis{b: b, f: f, insns: insns, fp: amd64BP, decode: decodeAMD64}
	a.run()
	return a.findings
}

func TestStackSwitchLink(t *testing.T) {
	var (
		loadDI   = []byte{0x48, 0x8b, 0x7e, 0x38} // MOVQ 0x38(SI), DI (gobuf.sp)
		reloadDI = []byte{0x48, 0x8b, 0x7e, 0x40} // MOVQ 0x40(SI), DI
		leaBP    = []byte{0x48, 0x8d, 0x6f, 0xf0} // LEAQ -0x10(DI), BP
		subDI    = []byte{0x4c, 0x29, 0xc7}       // SUBQ R8, DI
		switchSP = []byte{0x48, 0x89, 0xfc}       // MOVQ DI, SP
		callDX   = []byte{0xff, 0xd2}             // CALL DX
		ret      = []byte{0xc3}
	)
	for _, tc := range []struct {
		name  string
		code  [][]byte
		found bool
	}{
		// The fork's cgocallback: BP points into the new stack, computed
		// from the register SP is then loaded from.
		{"linked before the switch", [][]byte{loadDI, leaBP, subDI, switchSP, callDX, ret}, false},
		// Upstream's: BP still points at the old stack.
		{"old frame pointer", [][]byte{loadDI, switchSP, callDX, ret}, true},
		// BP was computed from a value DI no longer holds.
		{"base register reloaded", [][]byte{loadDI, leaBP, reloadDI, switchSP, callDX, ret}, true},
	} {
		got := analyse(t, "test.switch", tc.code...)
		if (len(got) > 0) != tc.found {
			t.Errorf("%s: findings %v, want found=%v", tc.name, got, tc.found)
		}
	}
}
