package target

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const ntArmTLS = 0x401 // NT_ARM_TLS regset: TPIDR_EL0

func getRegs(tid int) (Regs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return Regs{}, err
	}
	regs := Regs{PC: r.Pc, SP: r.Sp, FP: r.Regs[29], LR: r.Regs[30]}
	var tls uint64
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&tls))}
	iov.SetLen(8)
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(tid), ntArmTLS, uintptr(unsafe.Pointer(&iov)), 0, 0); e == 0 {
		regs.TLS = tls
	}
	return regs, nil
}
