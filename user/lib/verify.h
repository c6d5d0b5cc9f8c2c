/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * verify.h - did a refused packet prove its source (verify.c)?
 */
#ifndef XRL_VERIFY_H
#define XRL_VERIFY_H

#include <stdbool.h>
#include <linux/types.h>

#include "xrl_abi.h"

/* 1: the sampled packet is a TCP segment (not a SYN) of a connection the
 * host has established or is closing; 0: not proven; -errno: couldn't ask. */
int xrl_event_proven(const struct xrl_event *e);

#endif /* XRL_VERIFY_H */
