// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * iface.c - the interfaces xrld enforces on, and the policy it pushes to
 * them: attach, remove, push, and the reload that installs a new config.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/magic.h>

#include "http/http.h"
#include "log.h"
#include "xrld.h"

/* Once a second: expired deny entries out of every interface's maps. */
static void deny_gc(void *ctx)
{
	struct xrld *d = ctx;

	for (int i = 0; i < d->n_ifs; i++)
		xrl_deny_gc(d->ifs[i].h);
}

int xrld_iface_start(struct xrld *d)
{
	return xrld_timer_add(d->loop, XRL_NSEC_PER_SEC, deny_gc, d) ? 0 : -ENOMEM;
}

struct xrld_iface *xrld_iface(struct xrld *d, const char *name)
{
	for (int i = 0; i < d->n_ifs; i++)
		if (!strcmp(d->ifs[i].name, name))
			return &d->ifs[i];
	return NULL;
}

/* One refusal sample, from the ring buffer (ctx is the struct xrld_iface):
 * to the `top` table and to penalty escalation. */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct xrld_iface *f = ctx;
	struct xrld *d = f->d;
	int ifidx = (int)(f - d->ifs);
	const struct xrl_event *e = data;

	if (size < sizeof(*e) || ifidx < 0 || ifidx >= d->n_ifs)
		return 0;
	COUNT(d->events_seen);
	xrld_top_note(d, ifidx, e);
	xrld_penalty_note(d, ifidx, f, e);
	return 0;
}

/* The loop's handler: consume what the program sampled. (A slot that a
 * removal emptied or moved is deleted from the loop first, and the loop
 * calls no handler deleted in the same round.) */
static void samples_ready(int fd, unsigned events, void *ctx)
{
	struct xrld_iface *f = ctx;

	if (f->rb)
		ring_buffer__consume(f->rb);
}

/* Read f's refusal samples from the loop: its ring buffer, registered. */
static int samples_open(struct xrld *d, struct xrld_iface *f)
{
	f->d = d;
	f->rb = ring_buffer__new(xrl_map_fd(f->h, XRL_MAP_EVENTS), on_sample, f, NULL);
	if (!f->rb)
		return -errno;
	return xrld_fd_add(d->loop, ring_buffer__epoll_fd(f->rb), EPOLLIN, samples_ready, f);
}

static void samples_close(struct xrld *d, struct xrld_iface *f)
{
	if (!f->rb)
		return;
	xrld_fd_del(d->loop, ring_buffer__epoll_fd(f->rb));
	ring_buffer__free(f->rb);
	f->rb = NULL;
}

/* The config's policy with the operator's shadow overrides on top. */
static void effective_policy(struct xrld *d, const struct xrld_config *c, struct xrl_policy *p)
{
	*p = c->policy;
	for (__u32 i = 0; i < p->n_rules; i++)
		for (int j = 0; j < d->n_override; j++)
			if (!strcmp(p->rules[i].name, d->shadow_override[j]))
				xrl_policy_set_action(p, i,
						      d->shadow_val[j] ? XRL_ACT_SHADOW : XRL_ACT_DROP);
}

#define BPFFS "/sys/fs/bpf"

void xrld_bpffs_ensure(struct xrld *d)
{
	struct statfs sf;

	if (strncmp(d->pin_root, BPFFS "/", sizeof(BPFFS)) ||
	    (!statfs(BPFFS, &sf) && sf.f_type == BPF_FS_MAGIC))
		return;
	if (mount("bpf", BPFFS, "bpf", 0, "mode=0700"))
		log_warn("bpffs is not mounted at %s and couldn't be (an interface needs it)", BPFFS);
	else
		log_info("mounted bpffs at %s (it was not there)", BPFFS);
}

int xrld_pins_claim(struct xrld *d, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int fd;

	if (d->pin_lock_fd >= 0)
		return 0;
	snprintf(path, sizeof(path), "%s", d->pin_root);
	for (char *p = path + 1; *path == '/'; p++) {
		bool end = !*p;

		if (*p != '/' && !end)
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST) {
			snprintf(err, errlen, "couldn't make the pin directory %s: %s", path,
				 strerror(errno));
			return -errno;
		}
		if (end)
			break;
		*p = '/';
	}
	fd = open(d->pin_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && !flock(fd, LOCK_EX | LOCK_NB)) {
		d->pin_lock_fd = fd; /* held for xrld's life */
		return 0;
	}
	if (errno == EWOULDBLOCK)
		snprintf(err, errlen,
			 "the pin directory %s is another running xrld's; nothing was touched "
			 "(give this one a --pin-dir of its own)",
			 d->pin_root);
	else
		snprintf(err, errlen, "couldn't take the pin directory %s: %s", d->pin_root,
			 strerror(errno));
	if (fd >= 0)
		close(fd);
	return -EBUSY;
}

int xrld_iface_attach(struct xrld *d, const char *name, enum xrl_attach_mode mode, bool from_config,
		      char *err, size_t errlen)
{
	struct xrl_open_opts o = { .ifname = name, .pin_root = d->pin_root, .mode = mode };
	static struct xrl_policy pol;
	struct xrld_iface *f;
	int rc;

	if (xrld_iface(d, name)) {
		snprintf(err, errlen, "%s is already attached", name);
		return -EEXIST;
	}
	if ((rc = xrld_pins_claim(d, err, errlen)))
		return rc;
	if (d->n_ifs >= MAX_IFACES) {
		snprintf(err, errlen, "at most %d interfaces", MAX_IFACES);
		return -E2BIG;
	}
	if (d->cfg->buckets_max)
		o.buckets_max = d->cfg->buckets_max;
	o.kernel_cookies = d->cfg->kernel_cookies;
	f = &d->ifs[d->n_ifs];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->mode = mode;
	f->from_config = from_config;
	rc = xrl_open(&o, &f->h);
	if (rc) {
		snprintf(err, errlen, "couldn't attach to %s: %s", name, strerror(-rc));
		return rc;
	}
	effective_policy(d, d->cfg, &pol);
	rc = xrl_apply_policy(f->h, &pol, err, errlen);
	if (!rc && d->cfg->event_interval_ns)
		rc = xrl_set_event_interval(f->h, d->cfg->event_interval_ns);
	if (rc) {
		xrl_close(f->h);
		return rc;
	}
	{
		char drv[32];

		f->veth = !xrl_iface_driver(name, drv, sizeof(drv)) && !strcmp(drv, "veth");
	}
	if (samples_open(d, f))
		log_warn("%s: couldn't read refusal samples", name);
	pthread_mutex_lock(&d->lock);
	d->n_ifs++;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

void xrld_iface_remove(struct xrld *d, int i, bool detach)
{
	struct xrld_iface *f = &d->ifs[i];

	pthread_mutex_lock(&d->lock);
	samples_close(d, f);
	if (detach)
		xrl_detach(f->h);
	else
		xrl_close(f->h);
	/* keep indices of the ring buffer contexts stable: re-register the rest */
	for (int j = i; j < d->n_ifs - 1; j++) {
		d->ifs[j] = d->ifs[j + 1];
		if (d->ifs[j].rb) {
			/* the ring buffer's context and the epoll entry point at the slot */
			samples_close(d, &d->ifs[j]);
			samples_open(d, &d->ifs[j]);
		}
	}
	d->n_ifs--;
	memset(d->top, 0, sizeof(*d->top) * TOP_SLOTS);
	memset(d->pen, 0, sizeof(*d->pen) * PEN_SLOTS);
	pthread_mutex_unlock(&d->lock);
}

int xrld_push_policy(struct xrld *d, char *err, size_t errlen)
{
	static struct xrl_policy pol;
	int rc;

	effective_policy(d, d->cfg, &pol);
	rc = xrl_policy_compile(&pol, err, errlen);
	if (rc)
		return rc;
	for (int i = 0; i < d->n_ifs; i++) {
		rc = xrl_apply_policy(d->ifs[i].h, &pol, err, errlen);
		if (!rc && d->cfg->event_interval_ns)
			rc = xrl_set_event_interval(d->ifs[i].h, d->cfg->event_interval_ns);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * What next changes that only a restart applies: the maps' size (made at
 * attach) and the metrics listener (bound at start) keep their running
 * values in next, so policy show shows what runs, as do the identity
 * tier's (listen, threads, ...: server/reload.c). d->reload_note names
 * them all for the one who asked (and the log).
 */
static void keep_restart_only(struct xrld *d, const struct xrld_config *old,
			      struct xrld_config *next)
{
	char *note = d->reload_note;
	size_t len = sizeof(d->reload_note);

	note[0] = '\0';
	/* 0 is the default: the same size written out is no change */
	if ((next->buckets_max ? next->buckets_max : XRL_BUCKETS_DEFAULT) !=
	    (old->buckets_max ? old->buckets_max : XRL_BUCKETS_DEFAULT)) {
		snprintf(note, len, "xdp.buckets %u",
			 next->buckets_max ? next->buckets_max : XRL_BUCKETS_DEFAULT);
		next->buckets_max = old->buckets_max;
	}
	if (strcmp(next->metrics, old->metrics)) {
		size_t o = strlen(note);

		snprintf(note + o, len - o, "%smetrics %s", o ? ", " : "",
			 next->metrics[0] ? next->metrics : "off");
		memcpy(next->metrics, old->metrics, sizeof(next->metrics));
		memcpy(next->metrics_host, old->metrics_host, sizeof(next->metrics_host));
		next->metrics_port = old->metrics_port;
	}
	/* the identity tier keeps these as they run (server/reload.c does the
	 * same to its copy), and says so in its log; the one who asked hears
	 * it here, and policy show shows what runs */
	if (old->has_http && next->has_http) {
		char h[200];
		size_t o = strlen(note);

		if (xrl_http_cfg_keep_running(&old->http, &next->http, h, sizeof(h)))
			snprintf(note + o, len - o, "%shttp %s", o ? ", " : "", h);
	}
	if (note[0])
		log_warnx("policy: %s: that takes effect at the next restart; until then what "
			  "runs stays",
			  note);
}

/*
 * Replace the running config by `next` (already parsed and valid). The new
 * policy is validated before anything is touched; an interface that cannot
 * be attached is reported and the rest goes on.
 */
static int install_config(struct xrld *d, struct xrld_config *next, const char *text, size_t len,
			  char *err, size_t errlen)
{
	static struct xrl_policy pol;
	struct xrld_config *old = d->cfg;
	int rc;

	effective_policy(d, next, &pol);
	rc = xrl_policy_compile(&pol, err, errlen);
	if (!rc)
		rc = xrld_idp_reload_check(d, next, text, len, err, errlen);
	if (rc)
		return rc;
	keep_restart_only(d, old, next);
	/* the metrics thread reads d->cfg and d->http under d->lock */
	pthread_mutex_lock(&d->lock);
	d->cfg = next;
	pthread_mutex_unlock(&d->lock);
	rc = xrld_push_policy(d, err, errlen);
	if (rc) {
		/* should not happen after validation; restore the old one */
		pthread_mutex_lock(&d->lock);
		d->cfg = old;
		pthread_mutex_unlock(&d->lock);
		xrld_push_policy(d, NULL, 0);
		return rc;
	}
	for (__u32 i = 0; i < next->n_ifaces; i++) {
		char e2[XRL_ERRLEN];

		if (xrld_iface(d, next->ifaces[i].name))
			continue;
		if (xrld_iface_attach(d, next->ifaces[i].name, next->ifaces[i].mode, true, e2,
				      sizeof(e2)))
			log_warnx("%s", e2);
	}
	for (int i = 0; i < d->n_ifs; i++) {
		bool listed = false;

		for (__u32 j = 0; j < next->n_ifaces; j++)
			listed |= !strcmp(next->ifaces[j].name, d->ifs[i].name);
		if (d->ifs[i].from_config && !listed)
			log_warnx("%s is no longer in the policy file but stays attached and "
				  "enforcing; `xrlctl detach %s` removes it",
				  d->ifs[i].name, d->ifs[i].name);
	}
	if (d->cfg->log_level >= 0 && !d->foreground)
		log_set_level(d->cfg->log_level);
	xrld_idp_reload(d, old, text, len);
	free(old);
	return 0;
}

int xrld_reload(struct xrld *d, const char *text, size_t len, const char *name, char *err,
		size_t errlen)
{
	struct xrld_config *next = calloc(1, sizeof(*next));
	char *read = NULL;
	int rc;

	if (!next)
		return -ENOMEM;
	if (text) {
		rc = xrl_config_parse(text, len, name, next, err, errlen);
	} else {
		rc = xrl_config_load_text(name, next, &read, &len, err, errlen);
		text = read;
	}
	if (!rc)
		rc = install_config(d, next, text, len, err, errlen);
	free(read);
	if (!rc)
		__atomic_store_n(&d->last_reload_time_s, (__u64)time(NULL), __ATOMIC_RELAXED);
	__atomic_store_n(&d->last_reload_ok, rc ? 0 : 1, __ATOMIC_RELAXED);
	if (rc) {
		free(next);
		COUNT(d->reload_failures);
		return rc;
	}
	COUNT(d->reloads);
	return 0;
}
