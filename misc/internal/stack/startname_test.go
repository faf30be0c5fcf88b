package stack

import (
	"slices"
	"testing"
)

// TestCalls decodes calls of both architectures: direct calls with their
// targets, calls through a register without.
func TestCalls(t *testing.T) {
	amd64 := []byte{
		0x55,                         // PUSHQ BP
		0xe8, 0x10, 0x00, 0x00, 0x00, // CALL +0x10
		0xff, 0xd2, // CALL DX
		0xe8, 0xf0, 0xff, 0xff, 0xff, // CALL -0x10
	}
	want := []call{{pc: 0x1001, target: 0x1016, direct: true}, {pc: 0x1006}, {pc: 0x1008, target: 0xffd, direct: true}}
	if got := calls("amd64", 0x1000, amd64); !slices.Equal(got, want) {
		t.Errorf("amd64: %+v, want %+v", got, want)
	}
	arm64 := []byte{
		0xfd, 0x7b, 0xbf, 0xa9, // STP (R29, R30), -16(RSP)!
		0x08, 0x00, 0x00, 0x94, // BL +0x20
		0x20, 0x00, 0x3f, 0xd6, // BLR R1
		0xff, 0xff, 0xff, 0x97, // BL -4
	}
	want = []call{{pc: 0x1004, target: 0x1024, direct: true}, {pc: 0x1008}, {pc: 0x100c, target: 0x1008, direct: true}}
	if got := calls("arm64", 0x1000, arm64); !slices.Equal(got, want) {
		t.Errorf("arm64: %+v, want %+v", got, want)
	}
}
