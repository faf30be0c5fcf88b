package lineageabi

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the generated C header (golineage_abi.h)")

// TestCHeaderFresh fails when the committed C header is not what CHeader
// generates from this package's constants: run go generate here (or this
// test with -update) after changing them.
func TestCHeaderFresh(t *testing.T) {
	want := CHeader()
	if *update {
		if err := os.WriteFile(CHeaderPath, want, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(CHeaderPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what CHeader generates: run go generate in misc/internal/lineageabi and commit the result", CHeaderPath)
	}
}

// TestCHeaderNames: every header field has its offset and size define, and
// no two fields share a C name.
func TestCHeaderNames(t *testing.T) {
	h := string(CHeader())
	seen := map[string]bool{}
	for i, name := range cFieldNames() {
		if seen[name] {
			t.Errorf("two header fields named %s in C", name)
		}
		seen[name] = true
		f := HeaderFields[i]
		for _, d := range []string{
			fmt.Sprintf("#define GOLINEAGE_HDR_OFF_%s %d", strings.ToUpper(name), f.Off),
			fmt.Sprintf("#define GOLINEAGE_HDR_SIZE_%s %d\n", strings.ToUpper(name), f.Size),
		} {
			if !strings.Contains(h, d) {
				t.Errorf("the C header has no %q", d)
			}
		}
	}
}

// fieldValue is the value of the named u32 header field in a header's
// bytes.
func fieldValue(t *testing.T, raw []byte, name string) uint32 {
	t.Helper()
	for _, f := range HeaderFields {
		if f.Name == name && f.Size == 4 {
			return binary.LittleEndian.Uint32(raw[f.Off:])
		}
	}
	t.Fatalf("no u32 header field %s", name)
	return 0
}

// TestCHeaderLayoutToday checks the header's GOLINEAGE_DEFAULT_* values
// against a fork-built program: the file's offset table, and the run-time
// off_rec_stack and record_size in memory against the macros' formulas.
func TestCHeaderLayoutToday(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds and runs a program")
	}
	a, mem, bias := startTarget(t)
	for _, l := range runtimeLayout {
		if got := fieldValue(t, a.Static.raw, l.name); got != uint32(l.val) {
			t.Errorf("%s is %d in the target's header, the C header's GOLINEAGE_DEFAULT_%s says %d", l.name, got, strings.ToUpper(l.name), l.val)
		}
	}
	v, err := a.Load(mem, bias)
	if err != nil {
		t.Fatal(err)
	}
	h := v.H
	if want := 64 + 8*h.MaxDepth; h.OffRecStack != want {
		t.Errorf("off_rec_stack %d at max_depth %d, GOLINEAGE_DEFAULT_OFF_REC_STACK gives %d", h.OffRecStack, h.MaxDepth, want)
	}
	if want := 64 + 8*h.MaxDepth + 8*h.MaxStack; h.RecordSize != want {
		t.Errorf("record_size %d at max_depth %d, max_stack %d; GOLINEAGE_DEFAULT_RECORD_SIZE gives %d", h.RecordSize, h.MaxDepth, h.MaxStack, want)
	}
}

// needTool returns the path of a C compiler, skipping the test without one
// (failing under CI=true: .ci/tools lists gcc and clang).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (.ci/tools lists it)", name)
		}
		t.Skipf("skipping: %s is not installed", name)
	}
	return p
}

// cReader is a small C reader: it finds the lineage header in an
// executable's .noptrdata as section 2 says and prints some of its fields,
// one "name value" a line; then, given a process of that executable and
// its load bias, it reads the header from the process's memory and lists
// its goroutines from the registry (section 13), "g goid parent status"
// a line. checks holds _Static_asserts generated from the Go constants.
const cReader = `#define _XOPEN_SOURCE 700
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "golineage_abi.h"

%s

static int mem;

static int rd(void *p, size_t n, uint64_t addr) {
	return pread(mem, p, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

static uint64_t u64(uint64_t addr) {
	uint64_t v = 0;
	rd(&v, sizeof v, addr);
	return v;
}

static uint32_t u32(uint64_t addr) {
	uint32_t v = 0;
	rd(&v, sizeof v, addr);
	return v;
}

/* goroutines lists the registry of the process whose header is at addr. */
static int goroutines(uint64_t addr) {
	struct golineage_header h;
	if (rd(&h, sizeof h, addr) != 0) { perror("reading the header"); return 1; }
	if (!(h.flags & GOLINEAGE_FLAG_READY) || !(h.flags & GOLINEAGE_FLAG_REGISTRY) || h.self != addr) {
		fprintf(stderr, "header not ready (flags %%#x, self %%#llx)\n", h.flags, (unsigned long long)h.self);
		return 1;
	}
	uint64_t b = u64(addr + GOLINEAGE_HDR_OFF_BLOCKS);
	uint64_t nblocks = u64(addr + GOLINEAGE_HDR_OFF_NBLOCKS);
	for (uint64_t n = 0; b != 0 && n < nblocks; n++) {
		uint32_t used = u32(b + h.off_block_used);
		for (uint32_t i = 0; i < used && i <= u32(b + h.off_block_nrec); i++) {
			uint64_t rec = b + h.block_header_size + (uint64_t)i * h.record_size;
			for (int try = 0; try < GOLINEAGE_RETRIES; try++) {
				uint64_t seq = u64(rec + h.off_rec_seq);
				if (seq == 0 || (seq & 1))
					break;
				uint64_t g = u64(rec + h.off_rec_g), goid = u64(rec + h.off_rec_goid);
				uint64_t parent = u64(rec + h.off_rec_parent_goid);
				uint32_t st = u32(g + h.off_g_status) & ~h.status_scan;
				unsigned code = st < sizeof h.status_map ? h.status_map[st] : GOLINEAGE_STATUS_UNKNOWN;
				if (u64(rec + h.off_rec_seq) != seq)
					continue;
				if (u64(g + h.off_g_goid) != goid || code == GOLINEAGE_STATUS_DEAD || code == GOLINEAGE_STATUS_IDLE)
					break;
				printf("g %%llu %%llu %%u\n", (unsigned long long)goid, (unsigned long long)parent, code);
				break;
			}
		}
		b = u64(b + h.off_block_next);
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 2 && argc != 4) return 2;
	FILE *f = fopen(argv[1], "rb");
	if (!f) { perror(argv[1]); return 1; }
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(n);
	if (!b || fread(b, 1, n, f) != (size_t)n) { fprintf(stderr, "read\n"); return 1; }
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
	const char *names = (const char *)(b + sh[eh->e_shstrndx].sh_offset);
	static const unsigned char magic[] = GOLINEAGE_MAGIC_BYTES;
	for (int i = 0; i < eh->e_shnum; i++) {
		if (strcmp(names + sh[i].sh_name, ".noptrdata") != 0) continue;
		for (uint64_t off = 0; off + GOLINEAGE_HEADER_SIZE <= sh[i].sh_size; off++) {
			const unsigned char *p = b + sh[i].sh_offset + off;
			if ((sh[i].sh_addr + off) %% 8 != 0 || memcmp(p, GOLINEAGE_MAGIC, GOLINEAGE_MAGIC_SIZE) != 0 ||
			    memcmp(p, magic, sizeof magic) != 0)
				continue;
			struct golineage_header h;
			memcpy(&h, p, sizeof h);
			if (h.version != GOLINEAGE_VERSION) { fprintf(stderr, "version %%u\n", h.version); return 1; }
			printf("addr %%llu\n", (unsigned long long)(sh[i].sh_addr + off));
			printf("version %%u\nheader_size %%u\nptr_size %%u\n", h.version, h.header_size, h.ptr_size);
			printf("region_size %%u\noff_region_cur %%u\noff_rec_goid %%u\noff_rec_parent_goid %%u\n",
			       h.region_size, h.off_region_cur, h.off_rec_goid, h.off_rec_parent_goid);
			printf("off_rec_anc %%u\nanc_size %%u\noff_g_m %%u\noff_m_region %%u\noff_g_record %%u\n",
			       h.off_rec_anc, h.anc_size, h.off_g_m, h.off_m_region, h.off_g_record);
			printf("off_g_goid %%u\noff_g_status %%u\noff_g_labels %%u\nlabel_size %%u\n",
			       h.off_g_goid, h.off_g_status, h.off_g_labels, h.label_size);
			printf("status_map_2 %%u\n", h.status_map[2]);
			if (argc == 2)
				return 0;
			char path[64];
			snprintf(path, sizeof path, "/proc/%%s/mem", argv[2]);
			if ((mem = open(path, O_RDONLY)) < 0) { perror(path); return 1; }
			return goroutines(sh[i].sh_addr + off + strtoull(argv[3], 0, 0));
		}
	}
	fprintf(stderr, "no lineage header\n");
	return 1;
}
`

// cChecks are _Static_asserts of every header field's offset and size as
// the C compiler lays out struct golineage_header, and of the constants,
// against the Go values.
func cChecks() string {
	var b strings.Builder
	for i, name := range cFieldNames() {
		f := HeaderFields[i]
		fmt.Fprintf(&b, "_Static_assert(__builtin_offsetof(struct golineage_header, %s) == %d, \"%s\");\n", name, f.Off, name)
		fmt.Fprintf(&b, "_Static_assert(sizeof(((struct golineage_header *)0)->%s) == %d, \"%s size\");\n", name, f.Size, name)
	}
	for name, v := range map[string]int{"GOLINEAGE_VERSION": Version, "GOLINEAGE_HEADER_SIZE": HeaderSize,
		"GOLINEAGE_FLAG_READY": FlagReady, "GOLINEAGE_FLAG_REGISTRY": FlagRegistry, "GOLINEAGE_FLAG_TLS_G": FlagTLSG,
		"GOLINEAGE_REC_PARENT_UNKNOWN": RecParentUnknown, "GOLINEAGE_STATUS_WAITING": StatusWaiting,
		"GOLINEAGE_STATUS_UNKNOWN": StatusUnknown, "sizeof(struct golineage_header)": HeaderSize,
		"sizeof(GOLINEAGE_MAGIC) - 1": len(Magic)} {
		fmt.Fprintf(&b, "_Static_assert(%s == %d, %q);\n", name, v, name)
	}
	return b.String()
}

// TestCHeaderC compiles a C reader with the header (gcc -Wall -Werror
// -std=c11), runs it on a fork-built program (plain and PIE): the header
// fields it reads from the executable file and the goroutines it lists from
// the process's memory must be the Go reader's. It also compiles the header
// for eBPF (clang -target bpf, GOLINEAGE_NO_STDINT).
func TestCHeaderC(t *testing.T) {
	gcc := needTool(t, "gcc")
	if testing.Short() {
		t.Skip("skipping: builds and runs a program")
	}
	dir := t.TempDir()
	inc, err := filepath.Abs(filepath.Dir(CHeaderPath))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "reader.c")
	if err := os.WriteFile(src, []byte(fmt.Sprintf(cReader, cChecks())), 0o666); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "reader")
	if out, err := exec.Command(gcc, "-Wall", "-Werror", "-std=c11", "-I", inc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, flags := range [][]string{nil, {"-buildmode=pie"}} {
		t.Run(strings.Join(append([]string{"default"}, flags...), " "), func(t *testing.T) {
			checkCReader(t, bin, flags...)
		})
	}

	// The eBPF side: the header compiles without <stdint.h>.
	clang := needTool(t, "clang")
	bpf := filepath.Join(dir, "probe.bpf.c")
	if err := os.WriteFile(bpf, []byte(`typedef unsigned char uint8_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
#define GOLINEAGE_NO_STDINT
#include "golineage_abi.h"
`+cChecks()+`
int probe(struct golineage_header *h) { return h->off_rec_goid + GOLINEAGE_DEFAULT_RECORD_SIZE(8, 0); }
`), 0o666); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(clang, "-O2", "-target", "bpf", "-Wall", "-Werror", "-I", inc, "-c", "-o", filepath.Join(dir, "probe.o"), bpf).CombinedOutput(); err != nil {
		t.Fatalf("clang -target bpf: %v\n%s", err, out)
	}
}

// checkCReader runs the C reader bin on a target built with flags and
// compares what it reads with the Go reader's values.
func checkCReader(t *testing.T, bin string, flags ...string) {
	a, mem, bias := startTarget(t, flags...)
	// The target's executable file, as the kernel keeps it.
	proc := strings.TrimSuffix(mem.(procMem).f.Name(), "/mem")
	exe := proc + "/exe"
	run := func() (map[string]uint64, []string) {
		out, err := exec.Command(bin, exe, filepath.Base(proc), strconv.FormatUint(bias, 10)).Output()
		if err != nil {
			t.Fatalf("the C reader: %v", err)
		}
		got := map[string]uint64{}
		var gs []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(l, "g ") {
				gs = append(gs, l)
				continue
			}
			k, v, _ := strings.Cut(l, " ")
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("the C reader printed %q", l)
			}
			got[k] = n
		}
		return got, gs
	}
	cGoroutines := func() []string { _, gs := run(); return gs }
	got, gs := run()

	h := a.Static
	h.Flags |= FlagRegistry // a file's flags are 0 ([rt]): parse its registry offsets anyway
	r, err := parseRegistry(h, h.raw)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"addr": a.Addr, "version": uint64(h.Version), "header_size": uint64(h.HeaderSize),
		"ptr_size": uint64(h.PtrSize), "region_size": uint64(h.RegionSize), "off_region_cur": uint64(h.OffRegionCur),
		"off_rec_goid": uint64(h.OffRecGoid), "off_rec_parent_goid": uint64(h.OffRecParentGoid),
		"off_rec_anc": uint64(h.OffRecAnc), "anc_size": uint64(h.AncSize), "off_g_m": uint64(h.OffGM),
		"off_m_region": uint64(h.OffMRegion), "off_g_record": uint64(h.OffGRecord),
		"off_g_goid": uint64(r.OffGGoid), "off_g_status": uint64(r.OffGStatus), "off_g_labels": uint64(r.OffGLabels),
		"label_size": uint64(r.LabelSize), "status_map_2": uint64(r.StatusMap[2])}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: the C reader read %d (printed: %v), the Go reader %d", k, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the C reader printed %d fields, want %d", len(got), len(want))
	}
	if r.OffGStatus == 0 || h.OffGM == 0 {
		t.Errorf("the file's header holds no g offsets (off_g_status %d, off_g_m %d)", r.OffGStatus, h.OffGM)
	}

	// The goroutines: the C reader's list is the Go reader's. The target
	// is idle, but not frozen: just after "ready" its main goroutine may
	// still be running on its way into the read system call, and a
	// background GC worker may wake. So the lists are compared on a
	// snapshot that holds still: Go, C, Go again, equal all three, within
	// a few tries.
	goList := func() ([]string, int) {
		v, err := a.Load(mem, bias)
		if err != nil {
			t.Fatal(err)
		}
		ggs, _, err := v.Goroutines()
		if err != nil {
			t.Fatal(err)
		}
		var l []string
		waiting := 0
		for _, g := range ggs {
			l = append(l, fmt.Sprintf("g %d %d %d", g.Goid, g.Record.ParentGoid, g.Status))
			if g.Status == StatusWaiting {
				waiting++
			}
		}
		slices.Sort(l)
		return l, waiting
	}
	for try := 0; ; try++ {
		before, _ := goList()
		slices.Sort(gs)
		after, waiting := goList()
		if slices.Equal(gs, before) && slices.Equal(gs, after) && waiting > 0 {
			t.Logf("the C reader listed %d goroutines, %d waiting (try %d)", len(gs), waiting, try)
			return
		}
		if try == 20 {
			t.Fatalf("the C reader listed (g goid parent status)\n%s\nthe Go reader, before and after\n%s\n--\n%s",
				strings.Join(gs, "\n"), strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
		gs = cGoroutines()
	}
}
