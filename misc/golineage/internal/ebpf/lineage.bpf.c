//go:build ignore

// SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0
//
// The kernel side of golineage's ebpf collector (see collector.go): on each
// cpu-clock sample of a thread of the target process, copy the user stack
// walked by frame pointers, the user registers and the words above SP (to
// repair the innermost frame), and the thread's goroutine lineage record
// found from its thread pointer as doc/lineage-abi.md, section 5, reader B
// prescribes. Every offset comes from the ABI header (version 2), read by
// user space from the executable file (the run-time fields tls_g_offset
// and record_size from memory) and set in the constants below before the
// program is loaded; nothing here knows the runtime's layout. The ABI's
// fixed constants come from golineage_abi.h, generated from the Go reader's
// (misc/lineage/include; the go:generate line in collector.go passes -I).
//
// Self-contained otherwise (no vmlinux.h or libbpf headers): the object is
// committed and must rebuild to the same bytes wherever clang 14 runs.

typedef unsigned char __u8;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;

// golineage_abi.h's types, without <stdint.h> (not available to -target bpf).
typedef __u8 uint8_t;
typedef __u32 uint32_t;
typedef __u64 uint64_t;
typedef __s64 int64_t;
#define GOLINEAGE_NO_STDINT
#include "golineage_abi.h"

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]

// Helper ids from include/uapi/linux/bpf.h (stable kernel ABI).
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static long (*bpf_get_stack)(void *ctx, void *buf, __u32 size, __u64 flags) = (void *)67;
static long (*bpf_probe_read_user)(void *dst, __u32 size, const void *src) = (void *)112;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)132;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)158;
static struct pt_regs *(*bpf_task_pt_regs)(struct task_struct *task) = (void *)175;

#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_F_USER_STACK (1ULL << 8)

// The kernel types, reduced to the fields read; CO-RE relocates the
// offsets against the running kernel's BTF.
struct pt_regs {
	unsigned long r14;
	unsigned long bp;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_struct thread;
} __attribute__((preserve_access_index));

// Sizes shared with event.go.
#define MAX_FRAMES 127 // the default kernel.perf_event_max_stack
#define STACK_WORDS 8
#define MAX_RECORD 4096
#define RECORD_TRIES GOLINEAGE_RETRIES

// A record of today's layout at the GODEBUG caps fits (1088 bytes); a
// larger record_size is copied up to MAX_RECORD, and user space checks that
// the fields it reads lie in the bytes copied.
_Static_assert(GOLINEAGE_DEFAULT_RECORD_SIZE(GOLINEAGE_MAX_DEPTH_LIMIT, GOLINEAGE_MAX_STACK_LIMIT) <= MAX_RECORD,
	       "MAX_RECORD holds a record at the GODEBUG caps");

// Event flags.
#define EV_LINEAGE 1   // g, m and the region were found
#define EV_REGION_OK 2 // region seq stable around tid and cur
#define EV_RECORD 4    // a record was copied under a stable seq, cur unchanged

struct event {
	__u32 tid;
	__u32 flags;
	__u64 ip, sp, bp, fsbase;
	__u64 words[STACK_WORDS];
	__u64 region_tid, cur, seq1, seq2;
	__s64 stack_bytes; // bpf_get_stack's result: bytes, or -errno
	__u32 record_bytes;
	__u32 pad;
	__u64 stack[MAX_FRAMES];
	// Twice MAX_RECORD: the copy is split at a page boundary (see
	// copy_record) and the verifier bounds the two parts separately.
	__u8 record[2 * MAX_RECORD];
};

// Keeps struct event in the object's BTF, where a test checks event.go's
// offsets against it.
struct event *event_layout __attribute__((unused));

// Set by user space before loading, from the target's header: each is the
// header field of its name (struct golineage_header), lineage and tls_g its
// flags GOLINEAGE_FLAG_RECORDS and GOLINEAGE_FLAG_TLS_G. They stay run-time
// values: the header's offsets, not today's GOLINEAGE_DEFAULT_* layout, are
// the ABI, and record_size and tls_g_offset are [rt] fields.
volatile const __u32 target_tgid;
volatile const __u32 lineage;   // 1: the target publishes records
volatile const __u32 tls_g;     // 1: g at fsbase+tls_g_offset; 0: g in r14
volatile const __s64 tls_g_offset;
volatile const __u32 off_g_m, off_m_region;
volatile const __u32 off_region_seq, off_region_tid, off_region_cur;
volatile const __u32 off_rec_seq, record_size;

// Read by user space.
__u64 lost; // events dropped: the ring buffer was full

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 21);
} events SEC(".maps");

static __u64 user_word(__u64 addr)
{
	__u64 v = 0;
	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr) != 0)
		return 0;
	return v;
}

// copy_record copies the n bytes of the record at addr and returns how
// many it could read. A record may end in a page the process never
// touched (the unused tail of anc[] or stack[] of the last record
// allocated): such a page is not mapped yet, the program cannot fault it
// in, and a single copy of the whole record would fail. So the part up to
// the page boundary is copied first, then the rest; user space checks that
// the fields the record says are valid lie in the bytes read (the rest of
// the buffer reads as zero, as the untouched page would).
static __u32 copy_record(struct event *e, __u64 addr, __u32 n)
{
	__u32 first = 4096 - (__u32)(addr & 4095);
	if (first > n)
		first = n;
	if (first > MAX_RECORD)
		return 0;
	if (bpf_probe_read_user(e->record, first, (const void *)addr) != 0)
		return 0;
	__u32 rest = n - first;
	if (rest == 0 || rest > MAX_RECORD)
		return first;
	if (bpf_probe_read_user(e->record + first, rest, (const void *)(addr + first)) != 0)
		return first;
	return first + rest;
}

static void copy_lineage(struct event *e, __u64 g)
{
	if (g == 0)
		return;
	__u64 m = user_word(g + off_g_m);
	__u64 region = m ? user_word(m + off_m_region) : 0;
	if (region == 0)
		return;
	e->flags |= EV_LINEAGE;
	// The region rule: tid and cur under an even, unchanged seq.
	__u64 rs1 = user_word(region + off_region_seq);
	e->region_tid = user_word(region + off_region_tid);
	e->cur = user_word(region + off_region_cur);
	if ((rs1 & 1) == 0 && user_word(region + off_region_seq) == rs1)
		e->flags |= EV_REGION_OK;
	__u32 n = record_size;
	if (n > MAX_RECORD)
		n = MAX_RECORD;
	for (int try = 0; try < RECORD_TRIES; try++) {
		// Every retry starts again from the region (section 5).
		__u64 cur = user_word(region + off_region_cur);
		e->cur = cur;
		if (cur == 0)
			return;
		__u64 s1 = user_word(cur + off_rec_seq);
		e->seq1 = s1;
		if (s1 & 1)
			continue;
		e->record_bytes = copy_record(e, cur, n);
		if (e->record_bytes == 0)
			return;
		e->seq2 = user_word(cur + off_rec_seq);
		if (e->seq2 == s1 && user_word(region + off_region_cur) == cur) {
			e->flags |= EV_RECORD;
			return;
		}
	}
}

SEC("perf_event")
int sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)(id >> 32) != target_tgid)
		return 0;
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	e->tid = (__u32)id;
	e->flags = 0;
	e->region_tid = e->cur = e->seq1 = e->seq2 = 0;
	e->record_bytes = 0;
	e->pad = 0;

	// The user registers, also when the sample hit in the kernel: those the
	// entry code saved (task_pt_regs), as bpf_get_stack's user walk uses.
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = bpf_task_pt_regs(task);
	e->ip = regs->ip;
	e->sp = regs->sp;
	e->bp = regs->bp;
	e->fsbase = task->thread.fsbase;
	if (bpf_probe_read_user(e->words, sizeof(e->words), (const void *)e->sp) != 0) {
		for (int i = 0; i < STACK_WORDS; i++)
			e->words[i] = 0;
	}
	e->stack_bytes = bpf_get_stack(ctx, e->stack, sizeof(e->stack), BPF_F_USER_STACK);

	if (lineage) {
		__u64 g = tls_g ? user_word(e->fsbase + tls_g_offset) : regs->r14;
		copy_lineage(e, g);
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
