// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package lineageabi

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func loadBias(exe string, f *elf.File) (uintptr, error) {
	// The lineage ABI's rule (section 2): a mapping of the same file,
	// matched by device and inode (not by path, which /proc/self/maps
	// prints unquoted), whose file offset lies in a PT_LOAD segment gives
	// bias = (map_start - map_offset) - (p_vaddr - p_offset).
	fi, err := os.Stat(exe)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("no device and inode for %s", exe)
	}
	dev := uint64(st.Dev)
	wantDev := fmt.Sprintf("%02x:%02x", (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff)
	wantIno := strconv.FormatUint(uint64(st.Ino), 10)
	m, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer m.Close()
	s := bufio.NewScanner(m)
	for s.Scan() {
		fl := strings.Fields(s.Text())
		if len(fl) < 6 || fl[3] != wantDev || fl[4] != wantIno {
			continue
		}
		off, err1 := strconv.ParseUint(fl[2], 16, 64)
		start, err2 := strconv.ParseUint(strings.Split(fl[0], "-")[0], 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && off >= p.Off&^0xfff && off < p.Off+p.Filesz {
				return uintptr((start - off) - (p.Vaddr - p.Off)), nil
			}
		}
	}
	return 0, fmt.Errorf("executable not in /proc/self/maps")
}
