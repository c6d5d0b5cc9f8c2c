/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * privs.h - least privilege: capabilities and per-thread confinement.
 */
#ifndef XRL_PRIVS_H
#define XRL_PRIVS_H

#include <linux/capability.h>
#include <linux/types.h>

#if defined(__x86_64__)
#define XRL_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define XRL_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "privs.c: add this architecture's AUDIT_ARCH_*"
#endif

#define XRL_CAP(c) (1ULL << (c))

/* Effective and permitted capabilities of the calling thread. */
int xrl_caps_get(__u64 *eff, __u64 *prm);
/* Keep only `keep` (a mask of XRL_CAP(CAP_...)), for good; sets no_new_privs. */
int xrl_caps_limit(__u64 keep);
/* The calling thread: no capabilities; bpf, ptrace, exec, module loading
 * and process_vm_writev answer EPERM. */
int xrl_thread_confine(void);
/* The identity process, before its first thread: the same and more
 * (other processes, uid changes, mounts, namespaces, keys). */
int xrl_process_confine(void);
/* The calling thread: no capabilities (it may still call bpf()). */
int xrl_thread_drop_caps(void);

#endif /* XRL_PRIVS_H */
