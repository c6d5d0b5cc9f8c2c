// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * privs.c - least privilege for xrld: capabilities and a per-thread
 * seccomp filter, with raw syscalls (no libcap, no libseccomp).
 *
 * Linux keeps capabilities, the bounding set, no_new_privs and seccomp
 * filters per thread, and a new thread starts with its creator's. So xrld
 * drops what it no longer needs in the main thread before it starts any
 * other thread (all of them inherit the smaller set), and each of the
 * identity tier's threads, which parse what clients send, confines itself
 * further when it starts: no capability at all, and no bpf(), ptrace(),
 * process_vm_writev() or execve(). Such a thread still shares the process's
 * memory: this stops a parser bug from reaching the kernel's BPF interface
 * or a new program, not an attacker who has taken over the thread's code
 * and then writes the main thread's memory (directly, or through
 * /proc/self/mem, which a filter on syscall numbers cannot tell from any
 * other file). docs/design.md has the model.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <linux/seccomp.h>

#include "privs.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT		 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

static int capset_mask(__u64 eff, __u64 prm)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {
		{ .effective = (__u32)eff, .permitted = (__u32)prm },
		{ .effective = (__u32)(eff >> 32), .permitted = (__u32)(prm >> 32) },
	};

	if (syscall(SYS_capset, &hdr, d))
		return -errno;
	return 0;
}

int xrl_caps_get(__u64 *eff, __u64 *prm)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &hdr, d))
		return -errno;
	*eff = (__u64)d[1].effective << 32 | d[0].effective;
	*prm = (__u64)d[1].permitted << 32 | d[0].permitted;
	return 0;
}

/*
 * Keep only the capabilities in `keep`, for good: the bounding set loses the
 * others (no execve can bring them back), ambient and inheritable sets are
 * emptied and no_new_privs is set. Costs a syscall per capability; run once.
 */
int xrl_caps_limit(__u64 keep)
{
	__u64 eff, prm;
	int err;

	if ((err = xrl_caps_get(&eff, &prm)))
		return err;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* the bounding set needs CAP_SETPCAP, so it goes first */
	for (int c = 0; c <= CAP_LAST_CAP; c++) {
		if (keep & (1ULL << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL && errno != EPERM)
			return -errno;
	}
	return capset_mask(keep & prm, keep & prm);
}

#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
/* Both filters begin so: another architecture is killed, x32 numbers (bit
 * 30, which reach the same calls; none is ours) refused, then what reaches
 * BPF maps, other processes or new programs. */
#define FILTER_HEAD \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, XRL_AUDIT_ARCH, 1, 0), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS), LOAD_NR, \
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM), DENY_NR(__NR_bpf), \
		DENY_NR(__NR_ptrace), DENY_NR(__NR_process_vm_writev), DENY_NR(__NR_execve), \
		DENY_NR(__NR_execveat), DENY_NR(__NR_init_module), DENY_NR(__NR_finit_module)

/* no_new_privs, no capability, then the filter (n instructions at f) for
 * the calling thread (no SECCOMP_FILTER_FLAG_TSYNC), which the threads it
 * creates inherit. */
static int load_filter(struct sock_filter *f, size_t n)
{
	struct sock_fprog prog = { .len = (unsigned short)n, .filter = f };
	int err;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if ((err = capset_mask(0, 0)))
		return err;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return -errno;
	return 0;
}
#define DENY_NR(n) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
/* Syscall n refused (EPERM) when its argument arg, tested by op (BPF_JEQ,
 * BPF_JSET) against k, says so; allowed otherwise. Five instructions. */
#define DENY_ARG(n, arg, op, k) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 4), \
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg])), \
		BPF_JUMP(BPF_JMP | (op) | BPF_K, (k), 0, 1), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/*
 * The calling thread: no capabilities, and the syscalls that reach BPF
 * maps, other processes or new programs answer EPERM. Threads it creates
 * inherit both. Other threads of the process are untouched.
 */
int xrl_thread_confine(void)
{
	struct sock_filter f[] = {
		FILTER_HEAD,
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return load_filter(f, sizeof(f) / sizeof(f[0]));
}

/*
 * The identity process (xrld's child, before its first thread): what
 * xrl_thread_confine denies, and the calls that reach other processes or
 * change what this one is: signals but to its own threads (a uid such as
 * nobody may be shared), process_vm_readv, perf_event_open, the keyring,
 * mounts, namespaces (unshare, setns, clone flags; clone3 answers
 * ENOSYS), uid changes, io_uring, prctl's dumpable and parent-death
 * settings, and TIOCSTI. Every thread created after inherits it.
 */
int xrl_process_confine(void)
{
	const __u32 ns = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC |
			 CLONE_NEWUTS | CLONE_NEWCGROUP;
	const __u32 self = (__u32)getpid();
	struct sock_filter f[] = {
		FILTER_HEAD,
		DENY_NR(__NR_process_vm_readv),
		/* signals: to this process's own threads only */
		DENY_NR(__NR_kill),
		DENY_NR(__NR_tkill),
		DENY_NR(__NR_rt_sigqueueinfo),
		DENY_NR(__NR_rt_tgsigqueueinfo),
		DENY_NR(__NR_pidfd_open),
		DENY_NR(__NR_pidfd_send_signal),
		DENY_NR(__NR_perf_event_open),
		DENY_NR(__NR_add_key),
		DENY_NR(__NR_request_key),
		DENY_NR(__NR_keyctl),
		DENY_NR(__NR_mount),
		DENY_NR(__NR_unshare),
		DENY_NR(__NR_setns),
		DENY_NR(__NR_setuid),
		DENY_NR(__NR_setresuid),
		DENY_NR(__NR_setreuid),
		DENY_NR(__NR_setgid),
		DENY_NR(__NR_setresgid),
		DENY_NR(__NR_setregid),
		DENY_NR(__NR_io_uring_setup),
		DENY_NR(__NR_io_uring_enter),
		DENY_NR(__NR_io_uring_register),
		/* clone3's flags are in memory a filter cannot read: ENOSYS,
		 * and glibc creates threads with clone */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		/* clone: threads, never a namespace */
		DENY_ARG(__NR_clone, 0, BPF_JSET, ns),
		/* tgkill: this process's threads (abort, pthread_kill) */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* prctl: not dumpable again, and the parent-death signal stays */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_DUMPABLE, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_PDEATHSIG, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		/* ioctl: no typing into a terminal it inherited */
		DENY_ARG(__NR_ioctl, 1, BPF_JEQ, TIOCSTI),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return load_filter(f, sizeof(f) / sizeof(f[0]));
}

/*
 * The calling thread gives up its capabilities, nothing else: for threads
 * that still read maps with bpf() on descriptors xrld holds (which needs no
 * capability), such as the metrics server's.
 */
int xrl_thread_drop_caps(void)
{
	return capset_mask(0, 0);
}
