# golineage.py: a gdb command that prints every thread's stack with the
# goroutine lineage stitched below it, for a live process or a core file, in
# the manner of folly's co_bt.
#
#   (gdb) source misc/golineage/gdb/golineage.py
#   (gdb) golineage-bt
#
# Native frames come from gdb's own unwinder. Lineage comes only from the
# goroutine lineage ABI, version 1 (doc/lineage-abi.md): the header is found
# by its magic cookie in the executable's .noptrdata (or writable PT_LOAD
# segments), every offset and size is taken from that header, and records are
# read under their sequence counters. No DWARF type information and no
# runtime-internal offsets are used; DWARF line tables only name the "created
# by" functions (as gdb names every frame).

import struct

import gdb

MAGIC = b"\x7fGoLineage\x00\x00\xa5\x5a\xc3\x3c"
HEADER_V1 = 208
RETRIES = 3


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
            if (addr + i) % 8 == 0 and i + HEADER_V1 <= len(d):
                return addr + i, d[i:i + HEADER_V1], e_entry, e_type == 3
            i = d.find(MAGIC, i + 1)
    raise LineageError("%s has no goroutine lineage ABI header (not built by the fpsafe toolchain)" % path)


class Header(object):
    def __init__(self, b):
        if b[:16] != MAGIC:
            raise LineageError("bad lineage header magic")
        self.version, self.header_size, self.ptr_size, self.flags = struct.unpack_from("<IIII", b, 16)
        if self.version != 1:
            raise LineageError("lineage ABI version %d not supported (this reader knows 1)" % self.version)
        if self.header_size < HEADER_V1:
            raise LineageError("lineage header too small")
        self.self_addr, self.regions, self.nregions = struct.unpack_from("<QQQ", b, 32)
        (self.max_depth, self.max_stack, self.record_size, self.region_size,
         self.r_seq, self.r_tid, self.r_cur, self.r_next, self.r_mid, self.r_state,
         self.c_seq, self.c_goid, self.c_startpc, self.c_gopc, self.c_parent,
         self.c_nanc, self.c_nstk, self.c_flags, self.c_depth, self.c_anc,
         self.anc_size, self.a_goid, self.a_startpc, self.a_gopc,
         self.c_stack) = struct.unpack_from("<25I", b, 56)


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
        h = Header(self.read(self.addr, HEADER_V1))
        if not h.flags & 1:
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
            nanc, nstk, flags = _u32(b, h.c_nanc), _u32(b, h.c_nstk), _u32(b, h.c_flags)
            if nanc > h.max_depth or nstk > h.max_stack:
                raise LineageError("corrupt lineage record at %#x" % addr)
            rec = {"goid": _u64(b, h.c_goid), "startpc": _u64(b, h.c_startpc), "gopc": _u64(b, h.c_gopc),
                   "parent": _u64(b, h.c_parent), "flags": flags, "anc": [], "stack": []}
            for i in range(nanc):
                o = h.c_anc + i * h.anc_size
                rec["anc"].append((_u64(b, o + h.a_goid), _u64(b, o + h.a_startpc), _u64(b, o + h.a_gopc)))
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


def chain(rec):
    """Lineage steps, newest first, as golineage prints them."""
    if rec["flags"] & 8 or rec["goid"] == 1 or rec["gopc"] == 0:
        return []
    out = [(rec["goid"], rec["parent"], rec["gopc"], rec["stack"])]
    anc = rec["anc"]
    for i, (goid, _, gopc) in enumerate(anc):
        if goid == 1 or gopc == 0:
            break
        parent = anc[i + 1][0] if i + 1 < len(anc) else 0
        out.append((goid, parent, gopc, []))
    return out


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


def created_by(gopc):
    """'created by F at FILE:LINE' for a go statement's return address."""
    pc = gopc - 1  # a return address: look up the call
    name = physical_function(pc) or ("?? pc=%#x" % gopc)
    sal = gdb.find_pc_line(pc)
    if sal.symtab is not None:
        return "created by %s at %s:%d" % (print_name(name), sal.symtab.fullname(), sal.line)
    return "created by %s at ?:0" % print_name(name)


def frame_lines(indent, pc_list):
    out = []
    for i, pc in enumerate(pc_list):
        look = pc - 1
        sal = gdb.find_pc_line(look)
        name = physical_function(look) or ("?? pc=%#x" % pc)
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
                f = gdb.newest_frame()
                depth = 0
                while f is not None and depth < 1024 and f.pc() != 0:
                    sal = f.find_sal()
                    pos = "%s:%d" % (sal.symtab.fullname(), sal.line) if sal.symtab is not None else "?"
                    name = f.name() or ("?? pc=%#x" % f.pc())
                    print("%s(...)\n\t%s" % (print_name(name), pos))
                    try:
                        f = f.older()
                    except gdb.error:
                        break
                    depth += 1
                for goid_, parent, gopc, stk in steps:
                    line = created_by(gopc)
                    print(line + (" in goroutine %d" % parent if parent else ""))
                    for l in frame_lines("\t", stk):
                        print(l)
                if note:
                    print("(%s)" % note)
                print("")
        finally:
            if orig is not None:
                orig.switch()


GoLineageBt()
