// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * syncookie.c - what the XDP program's cookie SYN-ACKs must offer to agree
 * with the kernel that completes the connection (bpf/xrl_cookie.h).
 */
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "log.h"
#include "xrl.h"

/*
 * The window scale the kernel gives a connection it creates from a cookie:
 * tcp_select_initial_window takes the largest of the listener's buffer,
 * tcp_rmem[2] and rmem_max and shifts it until it fits 16 bits (ilog2 - 15,
 * at most 14). A listener whose SO_RCVBUF exceeds both gets a larger one
 * than this: a known limit (docs/design.md, "SYN cookies").
 */
__u8 xrl_syn_wscale_of(__u64 tcp_rmem_max, __u64 rmem_max)
{
	__u64 space = tcp_rmem_max > rmem_max ? tcp_rmem_max : rmem_max;
	int log = -1;

	while (space) {
		space >>= 1;
		log++;
	}
	if (log <= 15)
		return 0;
	return log - 15 > 14 ? 14 : (__u8)(log - 15);
}

/* The same from this network namespace's sysctls; 7 if they can't be read. */
__u8 xrl_syn_wscale(void)
{
	unsigned long long lo, def, max = 0, rmax = 0;
	FILE *f;
	int n = 0;

	f = fopen("/proc/sys/net/ipv4/tcp_rmem", "r");
	if (f) {
		n += fscanf(f, "%llu %llu %llu", &lo, &def, &max) == 3;
		fclose(f);
	}
	f = fopen("/proc/sys/net/core/rmem_max", "r");
	if (f) {
		n += fscanf(f, "%llu", &rmax) == 1;
		fclose(f);
	}
	return n == 2 ? xrl_syn_wscale_of(max, rmax) : 7;
}

/* ---- the sysctls cookies need ------------------------------------------ */

static const struct {
	const char *name; /* as sysctl(8) spells it */
	const char *path;
	size_t off; /* of the saved value in struct xrl_sysctl_saved */
} cookie_sysctls[] = {
	{ "net.ipv4.tcp_syncookies", "/proc/sys/net/ipv4/tcp_syncookies",
	  offsetof(struct xrl_sysctl_saved, syncookies) },
	{ "net.ipv4.tcp_timestamps", "/proc/sys/net/ipv4/tcp_timestamps",
	  offsetof(struct xrl_sysctl_saved, timestamps) },
};
#define N_SYSCTLS	      (sizeof(cookie_sysctls) / sizeof(cookie_sysctls[0]))
#define XRL_COOKIE_SYSCTL_VAL 2 /* both: see bpf/xrl_cookie.h */

static int sysctl_read(const char *path, int *v)
{
	FILE *f = fopen(path, "r");
	int n, err;

	if (!f)
		return -errno;
	n = fscanf(f, "%d", v);
	err = n == 1 ? 0 : -EINVAL;
	fclose(f);
	return err;
}

static int sysctl_write(const char *path, int v)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return -errno;
	if (fprintf(f, "%d\n", v) < 0)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* This process's network namespace, as st_dev and st_ino of its file. */
static int netns_id(__u64 *dev, __u64 *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/*
 * Another interface's record under the same pin root that holds this
 * namespace's sysctls (xrld attached to two interfaces of one namespace):
 * its saved values into *out. The first holder saved the values from
 * before xrl; the last to let go restores them.
 */
static bool other_holder(const char *pin_dir, const struct xrl_sysctl_saved *me,
			 struct xrl_sysctl_saved *out)
{
	char root[PATH_MAX], path[PATH_MAX + 300];
	const char *own = strrchr(pin_dir, '/');
	struct dirent *e;
	bool found = false;
	__u32 zero = 0;
	DIR *dir;

	if (!own || own == pin_dir || (size_t)(own - pin_dir) >= sizeof(root))
		return false;
	snprintf(root, sizeof(root), "%.*s", (int)(own - pin_dir), pin_dir);
	dir = opendir(root);
	while (dir && !found && (e = readdir(dir))) {
		int fd;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, own + 1))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", root, e->d_name, XRL_MAP_SYSCTL);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		found = !bpf_map_lookup_elem(fd, &zero, out) && out->held &&
			out->netns_dev == me->netns_dev && out->netns_ino == me->netns_ino;
		close(fd);
	}
	if (dir)
		closedir(dir);
	return found;
}

/* Take the sysctls: remember what they were (unless already held), then
 * set both to 2. */
static int sysctls_take(int fd, const char *pin_dir, const char *who, struct xrl_sysctl_saved *s)
{
	struct xrl_sysctl_saved o;
	__u32 zero = 0;
	int err, v;

	if (!s->held) {
		if (pin_dir && pin_dir[0] && other_holder(pin_dir, s, &o)) {
			s->syncookies = o.syncookies;
			s->timestamps = o.timestamps;
		} else {
			for (size_t i = 0; i < N_SYSCTLS; i++) {
				err = sysctl_read(cookie_sysctls[i].path, &v);
				if (err)
					return err;
				*(__s32 *)((char *)s + cookie_sysctls[i].off) = v;
			}
		}
		s->held = 1;
		/* saved before anything changes: a crash in between still
		 * leaves the restore to the next detach */
		if (bpf_map_update_elem(fd, &zero, s, BPF_ANY))
			return -errno;
	}
	for (size_t i = 0; i < N_SYSCTLS; i++) {
		err = sysctl_read(cookie_sysctls[i].path, &v);
		if (!err && v == XRL_COOKIE_SYSCTL_VAL)
			continue;
		err = sysctl_write(cookie_sysctls[i].path, XRL_COOKIE_SYSCTL_VAL);
		if (err) {
			log_warnx("%s: couldn't set %s to %d: %s", who, cookie_sysctls[i].name,
				  XRL_COOKIE_SYSCTL_VAL, strerror(-err));
			return err;
		}
		log_info("%s: %s %d -> %d for SYN cookies (restored when no cookie rule remains, "
			 "or on detach)",
			 who, cookie_sysctls[i].name, v, XRL_COOKIE_SYSCTL_VAL);
	}
	return 0;
}

/* Let the sysctls go: the last holder in the namespace restores them,
 * each only if it still has the value xrl set (an operator's later
 * change stands). */
static int sysctls_release(int fd, const char *pin_dir, const char *who, struct xrl_sysctl_saved *s)
{
	struct xrl_sysctl_saved o;
	__u32 zero = 0;
	int err = 0, v;

	s->held = 0;
	if (bpf_map_update_elem(fd, &zero, s, BPF_ANY))
		return -errno;
	if (pin_dir && pin_dir[0] && other_holder(pin_dir, s, &o)) {
		log_info("%s: SYN-cookie sysctls left as they are: another interface's cookie rules "
			 "need them",
			 who);
		return 0;
	}
	for (size_t i = 0; i < N_SYSCTLS; i++) {
		int was = *(__s32 *)((char *)s + cookie_sysctls[i].off);

		if (sysctl_read(cookie_sysctls[i].path, &v) || v != XRL_COOKIE_SYSCTL_VAL ||
		    was == v)
			continue;
		err = sysctl_write(cookie_sysctls[i].path, was);
		if (err)
			log_warnx("%s: couldn't restore %s to %d: %s", who, cookie_sysctls[i].name,
				  was, strerror(-err));
		else
			log_info("%s: %s %d -> %d, restored (no SYN-cookie rule left)", who,
				 cookie_sysctls[i].name, v, was);
	}
	return err;
}

/*
 * Hold (want) or let go of the sysctls SYN cookies need in this network
 * namespace: net.ipv4.tcp_syncookies = 2 and tcp_timestamps = 2. fd is the
 * interface's xrl_sysctl map (pinned: the saved values outlive xrld),
 * pin_dir its pin directory (to find other interfaces' records), who the
 * name for logs. Cost: a few file reads; only on apply and detach.
 */
int xrl_cookie_sysctls(int fd, const char *pin_dir, const char *who, bool want)
{
	struct xrl_sysctl_saved s = {}, cur;
	__u32 zero = 0;
	int err;

	if (fd < 0)
		return fd;
	err = netns_id(&s.netns_dev, &s.netns_ino);
	if (err)
		return err;
	if (!bpf_map_lookup_elem(fd, &zero, &cur) && cur.held) {
		if (cur.netns_dev != s.netns_dev || cur.netns_ino != s.netns_ino) {
			log_warnx("%s: SYN-cookie sysctls were set in another network namespace; "
				  "not touching this one's",
				  who);
			return -EXDEV;
		}
		s = cur;
	}
	if (want)
		return sysctls_take(fd, pin_dir, who, &s);
	return s.held ? sysctls_release(fd, pin_dir, who, &s) : 0;
}
