//go:build ignore

// SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0
//
// The kernel side of golineage's ebpf collector (see collector.go): on each
// cpu-clock sample of a thread of a target process, copy the user stack
// walked by frame pointers, the user registers and the words above SP (to
// repair the innermost frame), and the thread's goroutine lineage record
// found from its thread pointer as doc/lineage-abi.md, section 5, reader B
// prescribes. The targets are the entries of the targets map, keyed by
// tgid: one program and one perf event per CPU serve any number of
// processes, each with its own executable's offsets. Every offset comes
// from the ABI header (version 2), read by user space from the executable
// file (the run-time fields tls_g_offset and record_size from memory) and
// written to the process's entry; nothing here knows the runtime's
// layout. The ABI's fixed constants come from golineage_abi.h, generated
// from the Go reader's (misc/lineage/include; the go:generate line in
// collector.go passes -I).
//
// Two raw tracepoint programs (attached by name: no tracefs needed),
// attached only when user space asks, report the processes that exec (any)
// and exit (targets only), so that a node-wide reader learns of them as
// they happen instead of polling /proc.
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
#define __type(name, val) typeof(val) *name

// Helper ids from include/uapi/linux/bpf.h (stable kernel ABI).
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static long (*bpf_get_stack)(void *ctx, void *buf, __u32 size, __u64 flags) = (void *)67;
static long (*bpf_probe_read_user)(void *dst, __u32 size, const void *src) = (void *)112;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)132;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)158;
static struct pt_regs *(*bpf_task_pt_regs)(struct task_struct *task) = (void *)175;

#define BPF_MAP_TYPE_HASH 1
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
#define EV_EXEC 256    // a proc_event: the process exec'd
#define EV_EXIT 512    // a proc_event: the target's main thread exited

struct event {
	__u32 tid;
	__u32 flags;
	__u64 ip, sp, bp, fsbase;
	__u64 words[STACK_WORDS];
	__u64 region_tid, cur, seq1, seq2;
	__s64 stack_bytes; // bpf_get_stack's result: bytes, or -errno
	__u32 record_bytes;
	__u32 tgid;
	__u64 labels; // the record's goroutine's g.labels, read with the record
	__u64 stack[MAX_FRAMES];
	// Twice MAX_RECORD: the copy is split at a page boundary (see
	// copy_record) and the verifier bounds the two parts separately.
	__u8 record[2 * MAX_RECORD];
};

// What the tracepoint programs send: a process that exec'd or exited. Its
// tid and flags are where struct event has them, so that user space tells
// the two apart by the flags.
struct proc_event {
	__u32 tid;
	__u32 flags; // EV_EXEC or EV_EXIT
	__u32 tgid;
	__u32 pad;
};

// Keep struct event and struct proc_event in the object's BTF, from which
// bpf2go generates the Go types event.go decodes them by.
struct event *event_layout __attribute__((unused));
struct proc_event *proc_event_layout __attribute__((unused));

// A target process, as user space writes it from its header: each field is
// the header field of its name (struct golineage_header), flags holds
// TARGET_LINEAGE for GOLINEAGE_FLAG_RECORDS and TARGET_TLS_G for
// GOLINEAGE_FLAG_TLS_G. They are run-time values: the header's offsets, not
// today's GOLINEAGE_DEFAULT_* layout, are the ABI, and record_size and
// tls_g_offset are [rt] fields. With TARGET_LABELS, off_g_labels is the
// registry's field of that name (the g's pprof label set).
#define TARGET_LINEAGE 1 // the target publishes records
#define TARGET_TLS_G 2   // g at fsbase+tls_g_offset; else in r14
#define TARGET_LABELS 4  // read the record's goroutine's g.labels
struct target {
	__u32 flags;
	__u32 off_g_m, off_m_region;
	__u32 off_region_seq, off_region_tid, off_region_cur;
	__u32 off_rec_seq, record_size;
	__s64 tls_g_offset;
	__u32 off_rec_g, off_g_labels;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); // tgid, in the initial PID namespace
	__type(value, struct target);
} targets SEC(".maps");

// Read by user space.
__u64 lost;      // events dropped: the ring buffer was full
__u64 lost_proc; // proc events dropped

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
	// 64-bit arithmetic throughout: the verifier must see the bound checked
	// on the very register passed as the size, and a 32-bit value would be
	// truncated into another one after its check.
	__u64 first = 4096 - (addr & 4095);
	if (first > n)
		first = n;
	if (first > MAX_RECORD)
		return 0;
	if (bpf_probe_read_user(e->record, first, (const void *)addr) != 0)
		return 0;
	__u64 rest = (__u64)n - first;
	if (rest == 0 || rest > MAX_RECORD)
		return first;
	if (bpf_probe_read_user(e->record + first, rest, (const void *)(addr + first)) != 0)
		return first;
	return first + rest;
}

static void copy_lineage(struct event *e, const struct target *t, __u64 g)
{
	if (g == 0)
		return;
	__u64 m = user_word(g + t->off_g_m);
	__u64 region = m ? user_word(m + t->off_m_region) : 0;
	if (region == 0)
		return;
	e->flags |= EV_LINEAGE;
	// The region rule: tid and cur under an even, unchanged seq.
	__u64 rs1 = user_word(region + t->off_region_seq);
	e->region_tid = user_word(region + t->off_region_tid);
	e->cur = user_word(region + t->off_region_cur);
	if ((rs1 & 1) == 0 && user_word(region + t->off_region_seq) == rs1)
		e->flags |= EV_REGION_OK;
	__u32 n = t->record_size;
	if (n > MAX_RECORD)
		n = MAX_RECORD;
	for (int try = 0; try < RECORD_TRIES; try++) {
		// Every retry starts again from the region (section 5).
		__u64 cur = user_word(region + t->off_region_cur);
		e->cur = cur;
		if (cur == 0)
			return;
		__u64 s1 = user_word(cur + t->off_rec_seq);
		e->seq1 = s1;
		if (s1 & 1)
			continue;
		e->record_bytes = copy_record(e, cur, n);
		if (e->record_bytes == 0)
			return;
		// The labels of the goroutine the record is of (not of g, which
		// may be g0), as the runtime's CPU profiler takes m.curg's: read
		// before seq2, so that the record's g is the one checked.
		e->labels = 0;
		if (t->flags & TARGET_LABELS) {
			__u64 rg = user_word(cur + t->off_rec_g);
			if (rg)
				e->labels = user_word(rg + t->off_g_labels);
		}
		e->seq2 = user_word(cur + t->off_rec_seq);
		if (e->seq2 == s1 && user_word(region + t->off_region_cur) == cur) {
			e->flags |= EV_RECORD;
			return;
		}
	}
}

SEC("perf_event")
int sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(id >> 32);
	const struct target *t = bpf_map_lookup_elem(&targets, &tgid);
	if (!t)
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
	e->tgid = tgid;
	e->labels = 0;

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

	if (t->flags & TARGET_LINEAGE) {
		__u64 g = (t->flags & TARGET_TLS_G) ? user_word(e->fsbase + t->tls_g_offset) : regs->r14;
		copy_lineage(e, t, g);
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static void send_proc(__u64 id, __u32 flags)
{
	struct proc_event *p = bpf_ringbuf_reserve(&events, sizeof(*p), 0);
	if (!p) {
		__sync_fetch_and_add(&lost_proc, 1);
		return;
	}
	p->tid = (__u32)id;
	p->flags = flags;
	p->tgid = (__u32)(id >> 32);
	p->pad = 0;
	bpf_ringbuf_submit(p, 0);
}

// Any process that exec'd: user space decides whether its new executable
// is one to profile. The exec'ing thread is the process's only one now.
SEC("raw_tracepoint/sched_process_exec")
int proc_exec(void *ctx)
{
	send_proc(bpf_get_current_pid_tgid(), EV_EXEC);
	return 0;
}

// A target's main thread exited: the process is gone, or a zombie whose
// other threads end soon. Other threads' exits and other processes' are
// not sent.
SEC("raw_tracepoint/sched_process_exit")
int proc_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(id >> 32);
	if ((__u32)id != tgid || !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	send_proc(id, EV_EXIT);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
