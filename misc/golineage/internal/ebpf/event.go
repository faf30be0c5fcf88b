package ebpf

import (
	"encoding/binary"
	"fmt"
)

// The layout of struct event in lineage.bpf.c.
const (
	maxFrames  = 127
	stackWords = 8
	maxRecord  = 4096

	offStack  = 160
	offRecord = offStack + 8*maxFrames
	eventSize = offRecord + 2*maxRecord // the program's buffer is twice the largest record
)

// ringBytes is the size of the program's ring buffer (max_entries of
// events), and RingEvents how many samples it holds.
const (
	ringBytes  = 1 << 21
	RingEvents = ringBytes / (eventSize + 8) // each record has an 8-byte header
)

// The layout of struct proc_event.
const procEventSize = 16

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
	if len(b) >= 8 && le.Uint32(b[4:])&(FlagExec|FlagExit) != 0 {
		if len(b) < procEventSize {
			return nil, fmt.Errorf("ebpf process event truncated (%d of %d bytes)", len(b), procEventSize)
		}
		return &Event{TID: le.Uint32(b), Flags: le.Uint32(b[4:]), TGID: le.Uint32(b[8:])}, nil
	}
	if len(b) < eventSize {
		return nil, fmt.Errorf("ebpf event truncated (%d of %d bytes)", len(b), eventSize)
	}
	u64 := func(off int) uint64 { return le.Uint64(b[off:]) }
	e := &Event{TID: le.Uint32(b[0:]), Flags: le.Uint32(b[4:]),
		PC: u64(8), SP: u64(16), FP: u64(24), FSBase: u64(32),
		RegionTID: u64(104), Cur: u64(112), Seq1: u64(120), Seq2: u64(128)}
	for i := range e.Words {
		e.Words[i] = u64(40 + 8*i)
	}
	n := int64(u64(136))
	switch {
	case n < 0:
		e.StackErr = n
	case n > 8*maxFrames || n%8 != 0:
		return nil, fmt.Errorf("ebpf event: stack of %d bytes", n)
	default:
		e.Stack = make([]uint64, n/8)
		for i := range e.Stack {
			e.Stack[i] = u64(offStack + 8*i)
		}
	}
	e.TGID = le.Uint32(b[148:])
	e.Labels = u64(152)
	rb := le.Uint32(b[144:])
	if rb > maxRecord {
		return nil, fmt.Errorf("ebpf event: record of %d bytes", rb)
	}
	if e.Flags&FlagRecord != 0 {
		e.Record = b[offRecord : offRecord+int(rb)]
	}
	return e, nil
}
