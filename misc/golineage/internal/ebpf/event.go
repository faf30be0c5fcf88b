package ebpf

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// The layout of struct event and struct proc_event in lineage.bpf.c, taken
// from lineageEvent and lineageProcEvent, the Go types bpf2go generated
// from the object's BTF: Decode reads each field where the compiler put it.
const (
	maxFrames  = len(lineageEvent{}.Stack)
	stackWords = len(lineageEvent{}.Words)
	maxRecord  = len(lineageEvent{}.Record) / 2 // the program's buffer is twice the largest record (see copy_record)

	eventSize = int(unsafe.Sizeof(lineageEvent{}))

	offTID         = int(unsafe.Offsetof(lineageEvent{}.Tid))
	offFlags       = int(unsafe.Offsetof(lineageEvent{}.Flags))
	offIP          = int(unsafe.Offsetof(lineageEvent{}.Ip))
	offSP          = int(unsafe.Offsetof(lineageEvent{}.Sp))
	offBP          = int(unsafe.Offsetof(lineageEvent{}.Bp))
	offFSBase      = int(unsafe.Offsetof(lineageEvent{}.Fsbase))
	offWords       = int(unsafe.Offsetof(lineageEvent{}.Words))
	offRegionTID   = int(unsafe.Offsetof(lineageEvent{}.RegionTid))
	offCur         = int(unsafe.Offsetof(lineageEvent{}.Cur))
	offSeq1        = int(unsafe.Offsetof(lineageEvent{}.Seq1))
	offSeq2        = int(unsafe.Offsetof(lineageEvent{}.Seq2))
	offStackBytes  = int(unsafe.Offsetof(lineageEvent{}.StackBytes))
	offRecordBytes = int(unsafe.Offsetof(lineageEvent{}.RecordBytes))
	offTGID        = int(unsafe.Offsetof(lineageEvent{}.Tgid))
	offLabels      = int(unsafe.Offsetof(lineageEvent{}.Labels))
	offStack       = int(unsafe.Offsetof(lineageEvent{}.Stack))
	offRecord      = int(unsafe.Offsetof(lineageEvent{}.Record))

	// struct proc_event has its tid and flags where struct event has them
	// (TestEventLayout), so that Decode tells the two apart by the flags.
	procEventSize = int(unsafe.Sizeof(lineageProcEvent{}))
	offProcTID    = int(unsafe.Offsetof(lineageProcEvent{}.Tid))
	offProcFlags  = int(unsafe.Offsetof(lineageProcEvent{}.Flags))
	offProcTGID   = int(unsafe.Offsetof(lineageProcEvent{}.Tgid))
)

// Decode reads each field with the width its type has in lineageEvent and
// lineageProcEvent: a change of one in lineage.bpf.c fails to compile here.
func _(e *lineageEvent, p *lineageProcEvent) {
	var _, _, _, _ uint32 = e.Tid, e.Flags, e.RecordBytes, e.Tgid
	var _, _, _, _, _ uint64 = e.Ip, e.Sp, e.Bp, e.Fsbase, e.Labels
	var _, _, _, _ uint64 = e.RegionTid, e.Cur, e.Seq1, e.Seq2
	var _ int64 = e.StackBytes
	var _ [stackWords]uint64 = e.Words
	var _ [maxFrames]uint64 = e.Stack
	var _ [2 * maxRecord]byte = e.Record
	var _, _, _ uint32 = p.Tid, p.Flags, p.Tgid
}

// ringBytes is the size of the program's ring buffer (max_entries of
// events), and RingEvents how many samples it holds.
const (
	ringBytes  = 1 << 21
	RingEvents = ringBytes / (eventSize + 8) // each record has an 8-byte header
)

// Event flags, as the program sets them.
const (
	FlagLineage  = 1 << 0 // g, m and the thread's region were found
	FlagRegionOK = 1 << 1 // the region's seq was stable around its tid and cur
	FlagRecord   = 1 << 2 // a record was copied under an unchanged seq and cur

	// An event with one of these is not a sample: only TID, TGID and
	// Flags are set (Config.Procs).
	FlagExec = 1 << 8 // the process TGID exec'd
	FlagExit = 1 << 9 // the main thread of the target TGID exited
)

// Event is one sample the program took, or a process's exec or exit.
type Event struct {
	TID, TGID, Flags   uint32
	PC, SP, FP, FSBase uint64             // the thread's user registers
	Words              [stackWords]uint64 // the words at SP upward (zero if unreadable)
	RegionTID, Cur     uint64             // the region's tid and the record address copied
	Labels             uint64             // the record's goroutine's pprof label set (g.labels), if Target.Labels
	Seq1, Seq2         uint64             // the record's seq before and after the copy
	Stack              []uint64           // return addresses by frame pointers, PC first
	StackErr           int64              // bpf_get_stack's error (a negative errno), or 0
	Record             []byte             // the record bytes that could be read (see copy_record), if copied
}

// Decode parses one ring-buffer record. The slices of the result alias b.
func Decode(b []byte) (*Event, error) {
	le := binary.LittleEndian
	if len(b) >= offFlags+4 && le.Uint32(b[offFlags:])&(FlagExec|FlagExit) != 0 {
		if len(b) < procEventSize {
			return nil, fmt.Errorf("ebpf process event truncated (%d of %d bytes)", len(b), procEventSize)
		}
		return &Event{TID: le.Uint32(b[offProcTID:]), Flags: le.Uint32(b[offProcFlags:]), TGID: le.Uint32(b[offProcTGID:])}, nil
	}
	if len(b) < eventSize {
		return nil, fmt.Errorf("ebpf event truncated (%d of %d bytes)", len(b), eventSize)
	}
	u64 := func(off int) uint64 { return le.Uint64(b[off:]) }
	e := &Event{TID: le.Uint32(b[offTID:]), Flags: le.Uint32(b[offFlags:]),
		PC: u64(offIP), SP: u64(offSP), FP: u64(offBP), FSBase: u64(offFSBase),
		RegionTID: u64(offRegionTID), Cur: u64(offCur), Seq1: u64(offSeq1), Seq2: u64(offSeq2)}
	for i := range e.Words {
		e.Words[i] = u64(offWords + 8*i)
	}
	n := int64(u64(offStackBytes))
	switch {
	case n < 0:
		e.StackErr = n
	case n > int64(8*maxFrames) || n%8 != 0:
		return nil, fmt.Errorf("ebpf event: stack of %d bytes", n)
	default:
		e.Stack = make([]uint64, n/8)
		for i := range e.Stack {
			e.Stack[i] = u64(offStack + 8*i)
		}
	}
	e.TGID = le.Uint32(b[offTGID:])
	e.Labels = u64(offLabels)
	rb := le.Uint32(b[offRecordBytes:])
	if rb > uint32(maxRecord) {
		return nil, fmt.Errorf("ebpf event: record of %d bytes", rb)
	}
	if e.Flags&FlagRecord != 0 {
		e.Record = b[offRecord : offRecord+int(rb)]
	}
	return e, nil
}
