package target

import (
	"encoding/binary"
	"fmt"
	"os"
)

const atEntry = 9 // AT_ENTRY

// AuxvEntry returns AT_ENTRY from a raw auxiliary vector (64-bit).
func AuxvEntry(auxv []byte) (uint64, bool) {
	for i := 0; i+16 <= len(auxv); i += 16 {
		k, v := binary.LittleEndian.Uint64(auxv[i:]), binary.LittleEndian.Uint64(auxv[i+8:])
		if k == 0 {
			break
		}
		if k == atEntry {
			return v, true
		}
	}
	return 0, false
}

// LoadBias returns the executable's load bias (runtime minus link-time
// address) from the auxiliary vector; 0 for a position-dependent executable.
func LoadBias(auxv []byte, linkEntry uint64, pie bool) (uint64, error) {
	if !pie {
		return 0, nil
	}
	e, ok := AuxvEntry(auxv)
	if !ok {
		return 0, fmt.Errorf("no AT_ENTRY in the auxiliary vector: cannot relocate a position-independent executable")
	}
	return e - linkEntry, nil
}

// ReadAuxv reads /proc/PID/auxv.
func ReadAuxv(pid int) ([]byte, error) { return os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid)) }
