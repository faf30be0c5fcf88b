package ebpf

import (
	"encoding/binary"
	"testing"
)

func FuzzDecode(f *testing.F) {
	ok := make([]byte, eventSize)
	le := binary.LittleEndian
	le.PutUint32(ok[offTID:], 42)
	le.PutUint32(ok[offFlags:], FlagLineage|FlagRegionOK|FlagRecord)
	le.PutUint64(ok[offIP:], 0x401000)
	le.PutUint64(ok[offStackBytes:], 16)
	le.PutUint64(ok[offStack:], 0x401000)
	le.PutUint64(ok[offStack+8:], 0x402000)
	le.PutUint32(ok[offRecordBytes:], 200)
	f.Add(ok)
	f.Add(ok[:eventSize-1])
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		if len(e.Stack) > maxFrames || len(e.Record) > maxRecord {
			t.Fatalf("Decode returned %d frames, %d record bytes", len(e.Stack), len(e.Record))
		}
	})
}

func TestDecode(t *testing.T) {
	b := make([]byte, eventSize)
	le := binary.LittleEndian
	le.PutUint32(b[offTID:], 7)
	le.PutUint32(b[offFlags:], FlagRecord)
	le.PutUint64(b[offSP:], 0xc000)
	le.PutUint64(b[offWords+8*7:], 99)
	le.PutUint64(b[offStackBytes:], 16)
	le.PutUint64(b[offStack+8:], 0x402000)
	le.PutUint32(b[offRecordBytes:], 3)
	le.PutUint32(b[offTGID:], 6)
	b[offRecord+2] = 5
	e, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if e.TID != 7 || e.TGID != 6 || e.SP != 0xc000 || e.Words[7] != 99 || len(e.Stack) != 2 || e.Stack[1] != 0x402000 || len(e.Record) != 3 || e.Record[2] != 5 {
		t.Errorf("Decode = %+v", e)
	}
	errno := int64(-14)
	le.PutUint64(b[offStackBytes:], uint64(errno))
	if e, err := Decode(b); err != nil || e.StackErr != -14 || e.Stack != nil {
		t.Errorf("Decode with a stack error = %+v, %v", e, err)
	}
	le.PutUint64(b[offStackBytes:], uint64(8*maxFrames+8))
	if _, err := Decode(b); err == nil {
		t.Error("Decode accepted a stack longer than the event holds")
	}

	p := make([]byte, procEventSize)
	le.PutUint32(p[offProcTID:], 12)
	le.PutUint32(p[offProcFlags:], FlagExit)
	le.PutUint32(p[offProcTGID:], 12)
	if e, err := Decode(p); err != nil || e.TID != 12 || e.TGID != 12 || e.Flags != FlagExit || e.Stack != nil {
		t.Errorf("Decode of an exit = %+v, %v", e, err)
	}
	if _, err := Decode(p[:12]); err == nil {
		t.Error("Decode accepted a truncated process event")
	}
}
