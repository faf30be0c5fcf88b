package fpchain

import "testing"

func TestInFrameRecordCode(t *testing.T) {
	amd64 := []byte{
		0x55,             // +0 PUSHQ BP
		0x48, 0x89, 0xe5, // +1 MOVQ SP, BP
		0x48, 0x83, 0xec, 0x10, // +4 SUBQ $16, SP
		0x90,                   // +8 NOP
		0x48, 0x83, 0xc4, 0x10, // +9 ADDQ $16, SP
		0x5d, // +13 POPQ BP
		0xc3, // +14 RET
	}
	arm64 := []byte{
		0x1f, 0x20, 0x03, 0xd5, // +0 NOP
		0xfd, 0x23, 0x00, 0xd1, // +4 SUB $8, RSP, R29
		0x1f, 0x20, 0x03, 0xd5, // +8 NOP
		0xc0, 0x03, 0x5f, 0xd6, // +12 RET
	}
	split := []byte{
		0x49, 0x3b, 0x66, 0x10, // +0 CMPQ SP, 16(R14)
		0x76, 0x07, // +4 JBE +13
		0x55,             // +6 PUSHQ BP
		0x48, 0x89, 0xe5, // +7 MOVQ SP, BP
		0x90,                         // +10 NOP
		0x5d,                         // +11 POPQ BP
		0xc3,                         // +12 RET
		0xe8, 0x00, 0x00, 0x00, 0x00, // +13 CALL morestack
		0xeb, 0xec, // +18 JMP +0
	}
	arm64Split := []byte{
		0x90, 0x0b, 0x40, 0xf9, // +0 MOVD 16(R28), R16
		0xff, 0x63, 0x30, 0xeb, // +4 CMP R16, RSP
		0xc9, 0x00, 0x00, 0x54, // +8 BLS 6(PC) (+32)
		0xfe, 0x0f, 0x1e, 0xf8, // +12 MOVD.W R30, -32(RSP)
		0xfd, 0x83, 0x1f, 0xf8, // +16 MOVD R29, -8(RSP)
		0xfd, 0x23, 0x00, 0xd1, // +20 SUB $8, RSP, R29
		0x1f, 0x20, 0x03, 0xd5, // +24 NOP
		0xc0, 0x03, 0x5f, 0xd6, // +28 RET
		0x00, 0x00, 0x00, 0x94, // +32 CALL morestack
		0xfa, 0xff, 0xff, 0x17, // +36 JMP +0
	}
	const entry = 0x1000
	for _, tc := range []struct {
		arch string
		code []byte
		off  uint64
		want bool
	}{
		{"amd64", amd64, 0, false},
		{"amd64", amd64, 1, false},
		{"amd64", amd64, 4, true},
		{"amd64", amd64, 8, true},
		{"amd64", amd64, 14, false},
		{"amd64", []byte{0x90, 0xc3}, 0, false}, // frameless
		// Padding between POPQ BP and RET (seen at runtime.unlock2+0x11f).
		{"amd64", []byte{0x55, 0x48, 0x89, 0xe5, 0x5d, 0x90, 0x0f, 0x1f, 0x00, 0xc3}, 4, true},
		{"amd64", []byte{0x55, 0x48, 0x89, 0xe5, 0x5d, 0x90, 0x0f, 0x1f, 0x00, 0xc3}, 5, false},
		{"amd64", []byte{0x55, 0x48, 0x89, 0xe5, 0x5d, 0x90, 0x0f, 0x1f, 0x00, 0xc3}, 6, false},
		// The stack-growth block, laid out last, runs before the frame
		// exists (seen at main.recurse+0x131 of the stress corpus).
		{"amd64", split, 10, true},
		{"amd64", split, 11, true},
		{"amd64", split, 13, false},
		{"amd64", split, 18, false},
		{"arm64", arm64, 0, false},
		{"arm64", arm64, 4, false},
		{"arm64", arm64, 8, true},
		{"arm64", arm64, 12, false},
		{"arm64", arm64Split, 24, true},
		{"arm64", arm64Split, 28, false},
		{"arm64", arm64Split, 32, false},
		{"arm64", arm64Split, 36, false},
	} {
		got := InFrameRecord(Frame{Arch: tc.arch, PC: entry + tc.off, Entry: entry, Code: tc.code})
		if got != tc.want {
			t.Errorf("%s +%d: InFrameRecord = %v, want %v", tc.arch, tc.off, got, tc.want)
		}
	}
}

func TestInFrameRecordRegs(t *testing.T) {
	for _, tc := range []struct {
		arch   string
		spd    int32
		sp, fp uint64
		want   bool
	}{
		{"amd64", 24, 0x1000, 0x1010, true},
		{"amd64", 24, 0x1000, 0x1018, false},
		{"amd64", 8, 0x1000, 0x5000, false}, // pushed BP, not yet set
		{"amd64", 0, 0x1000, 0x0ff8, false}, // nothing pushed: BP is the caller's
		{"amd64", -1, 0x1000, 0x0ff8, false},
		{"arm64", 32, 0x2000, 0x1ff8, true},
		{"arm64", 32, 0x2000, 0x2018, false},
		{"arm64", 0, 0x2000, 0x1ff8, false},
	} {
		got := InFrameRecord(Frame{Arch: tc.arch, HaveRegs: true, SPDelta: tc.spd, SP: tc.sp, FP: tc.fp})
		if got != tc.want {
			t.Errorf("%s spd=%d sp=%#x fp=%#x: InFrameRecord = %v, want %v", tc.arch, tc.spd, tc.sp, tc.fp, got, tc.want)
		}
	}
}
