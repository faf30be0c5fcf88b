package target

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// NSTIDs translates the thread ids that the kernel gives a reader outside
// a process's PID namespace (perf and BPF samples, /proc of the host) into
// those the process's own namespace gives them: what its runtime records
// (a lineage region's tid is the thread's gettid()). Outside a namespace
// of its own the two are the same.
type NSTIDs struct {
	pid int
	ns  bool
	m   map[int]int
}

// NewNSTIDs returns the translation for process pid (a pid of the reader's
// namespace).
func NewNSTIDs(pid int) *NSTIDs {
	n := &NSTIDs{pid: pid}
	if ids, err := nspid(fmt.Sprintf("/proc/%d/status", pid)); err == nil && len(ids) > 1 {
		n.ns, n.m = true, map[int]int{}
	}
	return n
}

// InNamespace reports whether the process has a PID namespace of its own.
func (n *NSTIDs) InNamespace() bool { return n.ns }

// Of returns thread tid's id in the process's namespace, or tid itself
// where they are the same or the thread is gone.
func (n *NSTIDs) Of(tid int) int {
	if !n.ns {
		return tid
	}
	if v, ok := n.m[tid]; ok {
		return v
	}
	ids, err := nspid(fmt.Sprintf("/proc/%d/task/%d/status", n.pid, tid))
	if err != nil || len(ids) == 0 {
		return tid
	}
	if len(n.m) > 1<<16 {
		clear(n.m) // threads come and go: bound what is remembered
	}
	n.m[tid] = ids[len(ids)-1]
	return ids[len(ids)-1]
}

// nspid parses the NSpid line of a status file: the id in each namespace,
// outermost first.
func nspid(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(l, []byte("NSpid:")); ok {
			var ids []int
			for _, f := range bytes.Fields(rest) {
				id, err := strconv.Atoi(string(f))
				if err != nil {
					return nil, fmt.Errorf("%s: NSpid %q", path, rest)
				}
				ids = append(ids, id)
			}
			return ids, nil
		}
	}
	return nil, fmt.Errorf("%s: no NSpid line", path)
}
