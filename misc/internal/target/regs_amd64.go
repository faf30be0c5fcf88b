package target

import "golang.org/x/sys/unix"

func getRegs(tid int) (Regs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return Regs{}, err
	}
	return Regs{PC: r.Rip, SP: r.Rsp, FP: r.Rbp, TLS: r.Fs_base}, nil
}
