# golineage.py: a gdb command that prints every thread's stack with the
# goroutine lineage stitched below it, for a live process or a core file, in
# the manner of folly's co_bt.
#
#   (gdb) source misc/golineage/gdb/golineage.py
#   (gdb) golineage-bt
#   (gdb) golineage-ps
#   (gdb) golineage-tree
#
# golineage-ps and golineage-tree list every goroutine, from the ABI's
# registry (section 13), as `golineage ps` and `golineage tree` do.
#
# Native frames come from gdb's own unwinder. Lineage comes only from the
# goroutine lineage ABI, version 1 (doc/lineage-abi.md): the header is found
# by its magic cookie in the executable's .noptrdata (or writable PT_LOAD
# segments), every offset and size is taken from that header, and records are
# read under their sequence counters. No DWARF type information and no
# runtime-internal offsets are used; DWARF line tables only name the "created
# by" functions (as gdb names every frame). Where gdb has no symbols (a
# stripped binary: -ldflags=-s -w), frames and "created by" lines are named
# through the binary's pclntab by `golineage symbolize` (found through
# $GOLINEAGE, next to this file in the fork's goroot/bin, or in $PATH), so
# the output matches golineage stacks.

import os
import shutil
import struct
import subprocess

import gdb

# The header's own layout (doc/lineage-abi.md, section 2); every region and
# record offset comes from the header's offset table. These constants are
# checked against the Go reader (misc/internal/lineageabi) by
# misc/golineage's TestGDBConstantsMatchGo.
MAGIC = b"\x7fGoLineage\x00\x00\xa5\x5a\xc3\x3c"
VERSION = 2
HEADER_SIZE = 376
OFF_VERSION = 16  # version, header_size, ptr_size, flags: u32 each
OFF_SELF = 32  # self, regions, nregions: u64 each
OFF_MAX_DEPTH = 56  # max_depth, max_stack, record_size: u32 each
OFF_TABLE = 68  # region_size .. off_g_record: TABLE_U32 u32 fields
TABLE_U32 = 24
OFF_TEXT_BASE = 176  # text_base, blocks, nblocks, wait_reasons: u64 each
OFF_REG_TABLE = 208  # n_wait_reasons .. status_scan: REG_TABLE_U32 u32 fields
REG_TABLE_U32 = 25
OFF_STATUS_MAP = 308
FLAG_READY = 1
FLAG_REGISTRY = 16
REC_PARENT_UNKNOWN = 4
REC_CGO_CALLBACK = 8
RETRIES = 3
ANON_BASE = 1 << 63  # tree keys of ancestors without a goid


def _u32(b, off):
    return struct.unpack_from("<I", b, off)[0]


def _u64(b, off):
    return struct.unpack_from("<Q", b, off)[0]


class LineageError(Exception):
    pass


def _scan_file(path):
    """Returns (link-time address of the header, static header bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise LineageError("%s is not a 64-bit ELF file" % path)
    (e_type, e_machine, _, e_entry, e_phoff, e_shoff, _, _, e_phentsize,
     e_phnum, e_shentsize, e_shnum, e_shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    areas = []
    if e_shoff and e_shnum and e_shstrndx < e_shnum:
        secs = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
        stroff = secs[e_shstrndx][4]
        for s in secs:
            name = data[stroff + s[0]:data.index(b"\0", stroff + s[0])]
            if name == b".noptrdata" and s[1] != 8:  # not SHT_NOBITS
                areas.append((s[3], data[s[4]:s[4] + s[5]]))
    if not areas:
        for i in range(e_phnum):
            p_type, p_flags, p_off, p_vaddr, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, e_phoff + i * e_phentsize)
            if p_type == 1 and p_flags & 2 and p_filesz:
                areas.append((p_vaddr, data[p_off:p_off + p_filesz]))
    for addr, d in areas:
        i = d.find(MAGIC)
        while i >= 0:
            if (addr + i) % 8 == 0 and i + OFF_SELF <= len(d):
                Header(d[i:i + HEADER_SIZE])  # refuses another version
                return addr + i, d[i:i + HEADER_SIZE], e_entry, e_type == 3
            i = d.find(MAGIC, i + 1)
    raise LineageError("%s has no goroutine lineage ABI header (not built by the fpsafe toolchain)" % path)


class Header(object):
    def __init__(self, b):
        if b[:16] != MAGIC:
            raise LineageError("bad lineage header magic")
        self.version, self.header_size, self.ptr_size, self.flags = struct.unpack_from("<IIII", b, OFF_VERSION)
        if self.version != VERSION:
            raise LineageError("lineage ABI version %d: this reader reads version %d; rebuild the target with this fork's toolchain" % (self.version, VERSION))
        if self.header_size < HEADER_SIZE or len(b) < HEADER_SIZE:
            raise LineageError("lineage header too small")
        self.self_addr, self.regions, self.nregions = struct.unpack_from("<QQQ", b, OFF_SELF)
        self.max_depth, self.max_stack, self.record_size = struct.unpack_from("<III", b, OFF_MAX_DEPTH)
        (self.region_size, self.r_seq, self.r_tid, self.r_cur, self.r_next, self.r_mid, self.r_state,
         self.c_seq, self.c_g, self.c_goid, self.c_parent, self.c_nanc, self.c_nstk, self.c_flags, self.c_depth,
         self.c_site, self.c_anc, self.anc_size, self.a_start, self.a_gopc,
         self.c_stack, _, _, _) = struct.unpack_from("<%dI" % TABLE_U32, b, OFF_TABLE)
        self.text_base, blocks, nblocks, reasons = struct.unpack_from("<QQQQ", b, OFF_TEXT_BASE)
        self.registry = None
        if self.flags & FLAG_REGISTRY:
            r = {"blocks": blocks, "nblocks": nblocks, "reasons": reasons, "r_g": self.c_g}
            names = ("nreasons", "strsize", "blk_hdr", "b_next", "b_nrec", "b_used", "g_goid", "g_status", "g_trans",
                     "g_wait", "g_since", "g_sched_sp", "g_sched_pc", "g_sched_bp", "g_sys_sp", "g_sys_pc",
                     "g_sys_bp", "g_lo", "g_hi", "g_waiting", "s_waitlink", "s_elem", "s_c", "s_isselect", "scan")
            r.update(zip(names, struct.unpack_from("<%dI" % REG_TABLE_U32, b, OFF_REG_TABLE)))
            r["status_map"] = b[OFF_STATUS_MAP:OFF_STATUS_MAP + 16]
            self.registry = r

    def pc(self, off):
        """A site or ancestor entry's offset as a PC (0: unknown)."""
        return self.text_base + off if off else 0


class Lineage(object):
    """The lineage view of the current inferior."""

    def __init__(self):
        self.inf = gdb.selected_inferior()
        prog = gdb.current_progspace().filename
        if not prog:
            raise LineageError("no executable loaded")
        vaddr, static, entry, pie = _scan_file(prog)
        bias = 0
        if pie:
            bias = self._auxv_entry() - entry
        self.addr = vaddr + bias
        h = Header(self.read(self.addr, HEADER_SIZE))
        if not h.flags & FLAG_READY:
            raise LineageError("lineage header not initialized yet (runtime still starting)")
        if h.self_addr != self.addr:
            raise LineageError("lineage header at %#x says it is at %#x" % (self.addr, h.self_addr))
        self.h = h
        self.regions = {}
        r, n = h.regions, 0
        seen = set()
        while r and n < min(h.nregions, 1 << 16) and r not in seen:
            seen.add(r)
            reg = self._region(r)
            if reg and reg[1] != 0 and reg[0] != 0:
                self.regions[reg[0]] = r
            r = _u64(self.read(r + h.r_next, 8), 0)
            n += 1

    def _auxv_entry(self):
        out = gdb.execute("info auxv", to_string=True)
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 3 and f[1] == "AT_ENTRY":
                return int(f[-1], 16)
        raise LineageError("no AT_ENTRY in the auxiliary vector")

    def read(self, addr, n):
        try:
            return self.inf.read_memory(addr, n).tobytes()
        except gdb.MemoryError as e:
            raise LineageError("cannot read %d bytes at %#x: %s" % (n, addr, e))

    def _region(self, r):
        h = self.h
        for _ in range(RETRIES):
            b = self.read(r, h.region_size)
            s1 = _u64(b, h.r_seq)
            if s1 & 1:
                continue
            s2 = _u64(self.read(r + h.r_seq, 8), 0)
            if s1 == s2:
                return _u64(b, h.r_tid), _u32(b, h.r_state), _u64(b, h.r_cur)
        return None

    def record(self, addr):
        h = self.h
        for _ in range(RETRIES):
            s1 = _u64(self.read(addr + h.c_seq, 8), 0)
            if s1 & 1:
                continue
            b = self.read(addr, h.record_size)
            if _u64(self.read(addr + h.c_seq, 8), 0) != s1 or _u64(b, h.c_seq) != s1:
                continue
            nanc, nstk, flags = [struct.unpack_from("<H", b, o)[0] for o in (h.c_nanc, h.c_nstk, h.c_flags)]
            if nanc > h.max_depth or nstk > h.max_stack:
                raise LineageError("corrupt lineage record at %#x" % addr)
            parent = _u64(b, h.c_parent)
            rec = {"goid": _u64(b, h.c_goid), "startpc": h.pc(_u32(b, h.c_site + h.a_start)),
                   "gopc": h.pc(_u32(b, h.c_site + h.a_gopc)), "parent": parent, "flags": flags,
                   "depth": _u32(b, h.c_depth), "anc": [], "stack": []}
            for i in range(nanc):
                # Only the parent's goid is known (version 2).
                o = h.c_anc + i * h.anc_size
                rec["anc"].append((parent if i == 0 else 0, h.pc(_u32(b, o + h.a_start)), h.pc(_u32(b, o + h.a_gopc))))
            for i in range(nstk):
                rec["stack"].append(_u64(b, h.c_stack + 8 * i))
            return rec
        raise LineageError("inconsistent lineage record at %#x (changed while read)" % addr)

    def thread(self, tid):
        """Returns (goid, [(goid, parent_goid, gopc, stack)]) for thread tid."""
        r = self.regions.get(tid)
        if r is None:
            return 0, []
        reg = self._region(r)
        if reg is None or reg[2] == 0:
            return 0, []
        rec = self.record(reg[2])
        return rec["goid"], chain(rec)


STATUS_NAMES = ["idle", "runnable", "running", "syscall", "waiting", "dead", "copystack", "preempted", "leaked"]


def goroutines(lin):
    """Every goroutine of the registry: dicts with goid, parent, status,
    reason, startpc, ancestors (goids), newest first."""
    r = lin.h.registry
    if r is None:
        raise LineageError("the target publishes no goroutine registry (an older fork toolchain, or GODEBUG=lineage=0)")
    out = []
    b, n, seen = r["blocks"], 0, set()
    while b:
        if n >= r["nblocks"] or b in seen:
            raise LineageError("goroutine registry: block list longer than its count (corrupt memory?)")
        seen.add(b)
        hdr = lin.read(b, r["blk_hdr"])
        nrec, used = _u32(hdr, r["b_nrec"]), _u32(hdr, r["b_used"])
        if used > nrec:
            raise LineageError("registry block %#x: %d of %d records used" % (b, used, nrec))
        for i in range(used):
            addr = b + r["blk_hdr"] + i * lin.h.record_size
            if _u64(lin.read(addr + lin.h.c_seq, 8), 0) == 0:
                continue
            g = _u64(lin.read(addr + r["r_g"], 8), 0)
            st = _u32(lin.read(g + r["g_status"], 4), 0) & ~r["scan"]
            code = r["status_map"][st] if st < 16 else 255
            status = STATUS_NAMES[code] if code < len(STATUS_NAMES) else "unknown"
            if status in ("dead", "idle"):
                continue
            rec = lin.record(addr)
            reason = ""
            if status == "waiting":
                idx = lin.read(g + r["g_wait"], 1)[0]
                if idx < r["nreasons"]:
                    e = lin.read(r["reasons"] + idx * r["strsize"], 16)
                    p, ln = _u64(e, 0), _u64(e, 8)
                    if ln < 256:
                        reason = lin.read(p, ln).decode("utf-8", "replace")
            out.append({"goid": _u64(lin.read(g + r["g_goid"], 8), 0), "parent": rec["parent"],
                        "status": reason or status, "startpc": rec["startpc"],
                        "rec": rec, "anc": rec["anc"]})
        b = _u64(hdr, r["b_next"])
        n += 1
    return sorted(out, key=lambda g: g["goid"])


def goroutines_or_report():
    """goroutines() of the current inferior, or None after printing why not."""
    try:
        return goroutines(Lineage())
    except LineageError as e:
        print("golineage: %s" % e)
        return None


def func_name(pc):
    """Name of the function at an entry PC, through gdb or the pclntab."""
    if not pc:
        return "?"
    name = physical_function(pc)
    if name is not None:
        return print_name(name)
    fr = pclntab().frames(pc, "pc")
    return fr[-1][0] if fr else "?? pc=%#x" % pc


def goroutine_name(pc):
    """The function a goroutine's go statement names, from its start PC, as
    golineage ps names it (it looks through the compiler's wrappers); the
    start function itself when golineage cannot be run."""
    if not pc:
        return "?"
    fr = pclntab().frames(pc, "start")
    return fr[0][0] if fr else func_name(pc)


def chain(rec):
    """Lineage steps, newest first, as golineage prints them."""
    if rec["flags"] & REC_CGO_CALLBACK or rec["goid"] == 1 or rec["gopc"] == 0:
        return []
    out = [(rec["goid"], rec["parent"], rec["gopc"], rec["stack"])]
    for i, (goid, _, gopc) in enumerate(rec["anc"]):
        if gopc == 0 or root(rec, i):
            break
        out.append((goid, 0, gopc, []))  # no goid of the ancestor's creator
    return out


def root(rec, i):
    """Whether ancestor i is at depth 0 (goroutine 1, or one the runtime
    started): it has no creator to show."""
    if i == 0 and rec["parent"] == 1:
        return True
    return not rec["flags"] & REC_PARENT_UNKNOWN and i + 1 == rec["depth"]


def print_name(name):
    """Function names as Go tracebacks print them (type arguments as [...])."""
    i, j = name.find("["), name.rfind("]")
    if i < 0 or j <= i:
        return name
    interior = name[i + 1:j]
    if "[" not in interior:
        return name[:i] + "[...]" + name[j + 1:]
    depth, rbr = 1, -1
    for k, c in enumerate(interior):
        if c == "[":
            depth += 1
            if depth == 1:
                return name[:i] + "[...]" + interior[rbr + 1:k] + "[...]" + name[j + 1:]
        elif c == "]":
            depth -= 1
            if depth < 0:
                return name
            if depth == 0:
                rbr = k
    if depth == 1 and rbr == -1:
        return name[:i] + "[...]" + name[j + 1:]
    return name


def physical_function(pc):
    """Name of the (non-inlined) function containing pc, or None."""
    try:
        b = gdb.block_for_pc(pc)
    except RuntimeError:
        b = None
    name = None
    while b is not None:
        if b.function is not None:
            name = b.function.name
        b = b.superblock
    if name is None:
        m = gdb.execute("info symbol %#x" % pc, to_string=True).split()
        if m and m[0] != "No":
            name = m[0]
    return name


def _find_tool():
    env = os.environ.get("GOLINEAGE")
    if env:
        return env
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        cand = os.path.join(here, "..", "..", "..", "goroot", "bin", "golineage")
        if os.access(cand, os.X_OK):
            return cand
    except NameError:
        pass
    return shutil.which("golineage")


def _load_bias(prog):
    """Load bias of a position-independent executable (0 otherwise)."""
    try:
        with open(prog, "rb") as f:
            h = f.read(64)
    except OSError:
        return 0
    if len(h) < 32 or h[:4] != b"\x7fELF" or struct.unpack_from("<H", h, 16)[0] != 3:
        return 0
    entry = struct.unpack_from("<Q", h, 24)[0]
    out = gdb.execute("info auxv", to_string=True)
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] == "AT_ENTRY":
            return int(f[-1], 16) - entry
    return 0


class Pclntab(object):
    """Names PCs through the executable's pclntab with `golineage symbolize`,
    for binaries gdb has no symbols for. Queries are (pc, mode) with mode
    "pc" (exact), "ret" (return address), "created" (a gopc) or "start" (a
    goroutine's start PC, named as golineage ps names it); answers are
    lists of (function, file, line, offset), innermost first."""

    def __init__(self):
        self.prog = gdb.current_progspace().filename
        self.tool = _find_tool() if self.prog else None
        self.bias = _load_bias(self.prog) if self.tool else 0
        self.cache = {}
        self.why = None

    def prefetch(self, queries):
        missing = sorted(set(q for q in queries if q not in self.cache))
        if not missing:
            return
        for q in missing:
            self.cache[q] = []
        if not self.tool:
            return
        inp = "".join("%#x %s\n" % q for q in missing).encode()
        try:
            p = subprocess.run([self.tool, "symbolize", "-bias", "%#x" % self.bias, self.prog],
                               input=inp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            self.why, self.tool = "golineage symbolize: %s" % e, None
            return
        if p.returncode != 0:
            self.why, self.tool = "golineage symbolize: %s" % p.stderr.decode(errors="replace").strip(), None
            return
        for q, line in zip(missing, p.stdout.decode(errors="replace").split("\n")):
            f = line.split("\t")
            if len(f) >= 4:
                self.cache[q] = [(f[i], f[i + 1], int(f[i + 2]), f[i + 3]) for i in range(0, len(f) - 3, 4)]

    def frames(self, pc, mode):
        if (pc, mode) not in self.cache:
            self.prefetch([(pc, mode)])
        return self.cache[(pc, mode)]


    def unwind(self, frame):
        """The frame-pointer walk of golineage stacks from frame's registers,
        with memory served from the inferior; the printed text, or None."""
        if not self.tool:
            return None
        arch = frame.architecture().name()
        try:
            if "aarch64" in arch:
                regs = [int(frame.read_register(r)) for r in ("pc", "sp", "x29", "x30")]
            else:
                regs = [int(frame.read_register(r)) for r in ("pc", "sp", "rbp")] + [0]
        except (gdb.error, ValueError):
            return None
        regs = [r & 0xffffffffffffffff for r in regs]
        inf = gdb.selected_inferior()
        try:
            p = subprocess.Popen([self.tool, "unwind", "-bias", "%#x" % self.bias, self.prog],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 universal_newlines=True)
        except OSError as e:
            self.why, self.tool = "golineage unwind: %s" % e, None
            return None
        text = []
        try:
            p.stdin.write("%#x %#x %#x %#x\n" % tuple(regs))
            p.stdin.flush()
            inframes = False
            for line in p.stdout:
                if inframes:
                    if line == "end\n":
                        break
                    text.append(line)
                elif line.startswith("read "):
                    _, a, n = line.split()
                    try:
                        data = inf.read_memory(int(a, 16), int(n)).tobytes().hex()
                    except gdb.MemoryError:
                        data = "fault"
                    p.stdin.write(data + "\n")
                    p.stdin.flush()
                elif line == "frames\n":
                    inframes = True
            p.stdin.close()
            err = p.stderr.read()
        finally:
            if p.wait() != 0 and not text:
                self.why = "golineage unwind: %s" % err.strip()
        return "".join(text).rstrip("\n") if text else None


_pclntab = None


def pclntab():
    global _pclntab
    if _pclntab is None or _pclntab.prog != gdb.current_progspace().filename:
        _pclntab = Pclntab()
    return _pclntab


def created_by(gopc):
    """'created by F at FILE:LINE' for a go statement's return address."""
    pc = gopc - 1  # a return address: look up the call
    name = physical_function(pc)
    sal = gdb.find_pc_line(pc)
    if name is None or sal.symtab is None:
        fr = pclntab().frames(gopc, "created")
        if fr:
            return "created by %s at %s:%d" % fr[0][:3]
    name = name or ("?? pc=%#x" % gopc)
    if sal.symtab is not None:
        return "created by %s at %s:%d" % (print_name(name), sal.symtab.fullname(), sal.line)
    return "created by %s at ?:0" % print_name(name)


def frame_lines(indent, pc_list):
    out = []
    for i, pc in enumerate(pc_list):
        look = pc - 1
        sal = gdb.find_pc_line(look)
        name = physical_function(look)
        if name is None:
            fr = pclntab().frames(pc, "ret")
            if fr:
                for fn, file, line, off in fr:
                    out.append("%s%s(...)\n%s\t%s:%d%s" % (indent, fn, indent, file, line, " " + off if off else ""))
                continue
            name = "?? pc=%#x" % pc
        pos = "%s:%d" % (sal.symtab.fullname(), sal.line) if sal.symtab is not None else "?"
        out.append("%s%s(...)\n%s\t%s" % (indent, print_name(name), indent, pos))
    return out


class GoLineageBt(gdb.Command):
    """Print every thread's stack with its goroutine lineage stitched below.

Usage: golineage-bt [-native]
Below each goroutine's root frame, one "created by F at FILE:LINE in
goroutine N" line per ancestor, read through the goroutine lineage ABI, with
the creation stack when the runtime recorded one."""

    def __init__(self):
        super(GoLineageBt, self).__init__("golineage-bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        native = arg.strip() == "-native"
        lin, why = None, None
        if not native:
            try:
                lin = Lineage()
            except LineageError as e:
                why = str(e)
        if why:
            print("golineage: %s" % why)
        inf = gdb.selected_inferior()
        orig = gdb.selected_thread()
        try:
            for th in sorted(inf.threads(), key=lambda t: t.ptid[1]):
                th.switch()
                tid = th.ptid[1]
                goid, steps, note = 0, [], None
                if lin is not None:
                    try:
                        goid, steps = lin.thread(tid)
                    except LineageError as e:
                        note = "lineage: %s" % e
                head = "thread %d" % tid
                if goid:
                    head += " goroutine %d" % goid
                print(head + ":")
                newest = gdb.newest_frame()
                native = None
                if newest is not None and newest.name() is None:
                    # No symbols (stripped): gdb's unwinder has no CFI
                    # either; walk the frame pointers as golineage does.
                    native = pclntab().unwind(newest)
                frames = []
                f = newest if native is None else None
                while f is not None and len(frames) < 1024 and f.pc() != 0:
                    frames.append((f.pc(), f.name(), f.find_sal()))
                    try:
                        f = f.older()
                    except gdb.error:
                        break
                # One golineage symbolize run per thread for what gdb
                # cannot name.
                q = [(pc, "ret" if i else "pc") for i, (pc, name, _) in enumerate(frames) if name is None]
                q += [(gopc, "created") for _, _, gopc, _ in steps]
                q += [(pc, "ret") for _, _, _, stk in steps for pc in stk]
                pclntab().prefetch(q)
                if native is not None:
                    print(native)
                for i, (pc, name, sal) in enumerate(frames):
                    if name is None:
                        fr = pclntab().frames(pc, "ret" if i else "pc")
                        if fr:
                            for fn, file, line, off in fr:
                                print("%s(...)\n\t%s:%d%s" % (fn, file, line, " " + off if off else ""))
                            continue
                    pos = "%s:%d" % (sal.symtab.fullname(), sal.line) if sal.symtab is not None else "?"
                    print("%s(...)\n\t%s" % (print_name(name or ("?? pc=%#x" % pc)), pos))
                for goid_, parent, gopc, stk in steps:
                    line = created_by(gopc)
                    print(line + (" in goroutine %d" % parent if parent else ""))
                    for l in frame_lines("\t", stk):
                        print(l)
                if note:
                    print("(%s)" % note)
                if pclntab().why:
                    print("(%s)" % pclntab().why)
                    pclntab().why = None
                print("")
        finally:
            if orig is not None:
                orig.switch()


GoLineageBt()


class GoLineagePs(gdb.Command):
    """List every goroutine, running or not, from the lineage ABI's registry.

Usage: golineage-ps
One line per goroutine: goid, creator's goid, status or wait reason, and
the goroutine's function, as `golineage ps` prints them."""

    def __init__(self):
        super(GoLineagePs, self).__init__("golineage-ps", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        gs = goroutines_or_report()
        if gs is None:
            return
        pclntab().prefetch([(g["startpc"], "start") for g in gs if g["startpc"]])
        print("%-7s %-7s %-28s %s" % ("GOID", "PARENT", "STATE", "FUNCTION"))
        for g in gs:
            print("%-7d %-7d %-28s %s" % (g["goid"], g["parent"], g["status"], goroutine_name(g["startpc"])))


class GoLineageTree(gdb.Command):
    """Print every goroutine under the goroutine that created it.

Usage: golineage-tree
Creators that have exited are printed from their descendants' ancestor
entries and marked [exited], and siblings of the same shape are collapsed
("x3 main.worker [chan receive] (goroutines 7, 8, 9)"), as `golineage tree`
does."""

    def __init__(self):
        super(GoLineageTree, self).__init__("golineage-tree", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        gs = goroutines_or_report()
        if gs is None:
            return
        live = dict((g["goid"], g) for g in gs)
        exited, parent_of, kids = {}, {}, {}
        # Ancestors beyond a parent have no goid: as golineage tree does,
        # such an ancestor is the only live goroutine at depth 0 with its
        # sites, or an anonymous node (a key above every goid) shared by
        # the ancestors with the same sites as far as the records go.
        roots, anon = {}, {}
        for g in gs:
            if g["rec"]["depth"] == 0:
                roots.setdefault((g["startpc"], g["rec"]["gopc"]), []).append(g["goid"])

        def anon_id(rec, j):
            _, start, gopc = rec["anc"][j]
            if root(rec, j) and len(roots.get((start, gopc), [])) == 1:
                return roots[(start, gopc)][0]
            key = tuple(a[1:] for a in rec["anc"][j:])
            return anon.setdefault(key, ANON_BASE + len(anon))

        for g in gs:
            child = g["goid"]
            for j, (goid, startpc, _) in enumerate(g["anc"]):
                if j > 0:
                    if child in live:
                        break  # a live creator: its own record goes on
                    goid = anon_id(g["rec"], j)
                if not goid:
                    break
                if goid not in live:
                    exited[goid] = startpc
                if child not in parent_of:
                    parent_of[child] = goid
                    kids.setdefault(goid, []).append(child)
                child = goid
        pclntab().prefetch([(pc, "start") for pc in [g["startpc"] for g in gs] + list(exited.values()) if pc])

        def name(goid):
            return goroutine_name(live[goid]["startpc"] if goid in live else exited.get(goid, 0))

        def state(goid):
            return live[goid]["status"] if goid in live else "exited"

        def children(goid):
            return sorted(kids.get(goid, []), key=lambda k: (name(k), k))

        sigs = {}

        def sig(goid):
            # Siblings of the same shape (function, state, descendants) are
            # printed once with their count, as golineage tree does.
            if goid not in sigs:
                sigs[goid] = "%s [%s](%s)" % (name(goid), state(goid), ",".join(sig(k) for k in children(goid)))
            return sigs[goid]

        def group(goids):
            # Children of one or more goroutines, one group per shape, in
            # the order of the first of each.
            groups, by_sig = [], {}
            for k in sorted(goids, key=lambda k: (name(k), k)):
                if sig(k) not in by_sig:
                    by_sig[sig(k)] = []
                    groups.append(by_sig[sig(k)])
                by_sig[sig(k)].append(k)
            return groups

        def walk(goids, depth):
            g = goids[0]
            ids = [k for k in goids if k < ANON_BASE]
            listed = ", ".join(str(k) for k in ids[:3]) + (", ..." if len(ids) > 3 else "")
            if len(goids) > 1 and ids:
                print("%sx%d %s [%s] (goroutines %s)" % ("  " * depth, len(goids), name(g), state(g), listed))
            elif len(goids) > 1:
                print("%sx%d %s [%s]" % ("  " * depth, len(goids), name(g), state(g)))
            elif ids:
                print("%sgoroutine %d [%s] %s" % ("  " * depth, g, state(g), name(g)))
            else:
                print("%sgoroutine [%s] %s" % ("  " * depth, state(g), name(g)))
            for grp in group([k for i in goids for k in kids.get(i, [])]):
                walk(grp, depth + 1)

        for root in sorted(set(list(live) + list(exited)) - set(parent_of)):
            walk([root], 0)


GoLineagePs()
GoLineageTree()
