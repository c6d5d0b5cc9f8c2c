// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_verify.c - xrl_event_proven against real sockets on loopback.
 *
 * A refusal sample proves its source only when its 4-tuple is a connection
 * the host completed a handshake for. One real connection is made on
 * 127.0.0.1 (and on ::1); samples are built as the XDP program would write
 * them for a packet of that connection (source = the client), and for
 * packets a spoofer could send: a SYN of the same tuple, an ACK from another
 * port, another address, to a listening port with no connection, UDP.
 * No root needed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "verify.h"

struct conn {
	int lfd, cfd, afd;
	struct sockaddr_storage srv, cli;
};

/* A listener on an ephemeral port of the loopback address of `family`,
 * and one connection accepted from it. */
static int conn_open(struct conn *c, int family)
{
	socklen_t len = sizeof(c->srv);

	memset(c, 0, sizeof(*c));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&c->srv;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&c->srv;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
	}
	c->lfd = socket(family, SOCK_STREAM, 0);
	if (c->lfd < 0 ||
	    bind(c->lfd, (struct sockaddr *)&c->srv,
		 family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) ||
	    listen(c->lfd, 4) || getsockname(c->lfd, (struct sockaddr *)&c->srv, &len))
		return -errno;
	c->cfd = socket(family, SOCK_STREAM, 0);
	if (c->cfd < 0 || connect(c->cfd, (struct sockaddr *)&c->srv, len))
		return -errno;
	len = sizeof(c->cli);
	if (getsockname(c->cfd, (struct sockaddr *)&c->cli, &len))
		return -errno;
	c->afd = accept(c->lfd, NULL, NULL);
	return c->afd < 0 ? -errno : 0;
}

static void conn_close(struct conn *c)
{
	close(c->afd);
	close(c->cfd);
	close(c->lfd);
}

/* The sample of a packet from the client to the server, as the program
 * writes it (addresses and ports in network order). */
static void sample(const struct conn *c, struct xrl_event *e, __u8 flags)
{
	memset(e, 0, sizeof(*e));
	e->proto = IPPROTO_TCP;
	e->has_ports = 1;
	e->tcp_flags = flags;
	if (c->srv.ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)&c->srv, *k = (const void *)&c->cli;

		e->family = XRL_AF_INET;
		e->src[0] = k->sin_addr.s_addr;
		e->dst[0] = s->sin_addr.s_addr;
		e->sport = k->sin_port;
		e->dport = s->sin_port;
	} else {
		const struct sockaddr_in6 *s = (const void *)&c->srv, *k = (const void *)&c->cli;

		e->family = XRL_AF_INET6;
		memcpy(e->src, &k->sin6_addr, 16);
		memcpy(e->dst, &s->sin6_addr, 16);
		e->sport = k->sin6_port;
		e->dport = s->sin6_port;
	}
}

static void check_family(int family)
{
	struct xrl_event e;
	struct conn c;
	int rc = conn_open(&c, family);

	if (rc == -EADDRNOTAVAIL && family == AF_INET6) {
		print_message("no ::1 here: IPv6 case not run\n");
		return;
	}
	assert_int_equal(rc, 0);

	sample(&c, &e, 0x10 /* ACK */);
	assert_int_equal(xrl_event_proven(&e), 1); /* the connection's own ACK */
	sample(&c, &e, 0x18 /* PSH|ACK */);
	assert_int_equal(xrl_event_proven(&e), 1);
	sample(&c, &e, 0x02 /* SYN */);
	assert_int_equal(xrl_event_proven(&e), 0); /* a SYN proves nothing */
	sample(&c, &e, 0x10);
	e.sport = htons((__u16)(ntohs(e.sport) + 1));
	assert_int_equal(xrl_event_proven(&e), 0); /* another port: the listener only */
	sample(&c, &e, 0x10);
	if (family == AF_INET)
		e.src[0] = htonl(0x7f000009); /* 127.0.0.9, never connected */
	else
		e.src[3] ^= htonl(0x100);
	assert_int_equal(xrl_event_proven(&e), 0);
	sample(&c, &e, 0x10);
	e.proto = IPPROTO_UDP;
	assert_int_equal(xrl_event_proven(&e), 0);
	sample(&c, &e, 0x10);
	e.has_ports = 0;
	assert_int_equal(xrl_event_proven(&e), 0);

	/* closed by the client first: its side lingers in TIME_WAIT, the
	 * server's in CLOSE_WAIT: a handshake was made, still proven */
	close(c.cfd);
	c.cfd = -1;
	usleep(20000);
	sample(&c, &e, 0x11 /* FIN|ACK */);
	assert_int_equal(xrl_event_proven(&e), 1);
	conn_close(&c);
}

static void test_proven_v4(void **state)
{
	(void)state;
	check_family(AF_INET);
}

static void test_proven_v6(void **state)
{
	(void)state;
	check_family(AF_INET6);
}

static void test_bad_family(void **state)
{
	struct xrl_event e = {
		.family = 9, .proto = IPPROTO_TCP, .has_ports = 1, .tcp_flags = 0x10
	};

	(void)state;
	assert_int_equal(xrl_event_proven(&e), -EAFNOSUPPORT);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(test_proven_v4),
	cmocka_unit_test(test_proven_v6),
	cmocka_unit_test(test_bad_family),
};

int main(void)
{
	return cmocka_run_group_tests(tests, NULL, NULL);
}
