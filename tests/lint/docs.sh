#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# docs.sh - docs that cannot drift: every YAML block of README.md,
# docs/*.md and the manual pages (and every docs/examples/*.yaml) passes
# `xrld --check`, or is marked as a fragment, a deliberate error or
# skipped; every xrlctl and xrld command line in them parses by the
# programs' own --help. The conventions and what is checked:
# tests/lint/docs.py.
#
# First the checker on made-up pages (Markdown and a manual page) whose
# every mistake it must name at its line, and whose right parts it must
# pass; then on the real docs.
#
# Needs python3 and the built xrld and xrlctl ($BUILD, default build/).
# Usage: tests/lint/docs.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}
for p in xrld xrlctl; do
	[ -x "$B/$p" ] || { echo "docs: $B/$p is missing: run make first" >&2; exit 1; }
done
check_docs() {
	python3 tests/lint/docs.py --xrld "$B/xrld" --xrlctl "$B/xrlctl" "$@"
}

T=$(mktemp -d /tmp/xrl-docs-lint.XXXXXX)
trap 'rm -rf "$T"' EXIT
cat >"$T/page.md" <<'PAGE'
A whole policy with a mistake:

```yaml
xdp:
  rules:
    - name: syn
      rate: 1000
      burst: 1
```

A fragment, right, then wrong:

<!-- xrl-check: fragment xdp.rules -->
```yaml
    - name: web
      rate: 20/s
      burst: 40
```

<!-- xrl-check: fragment xdp.rules -->
```yaml
    - name: web
      rate: 20/s
      burts: 40
```

An error shown as it is, then one shown wrong:

<!-- xrl-check: error below -->
```yaml
penalty: { strikes: 0, window: 60s, base: 60s, max: 1h }
```

```
policy.yaml:1:21: penalty.strikes: expected a whole number of strikes, 1 or more, got '0'
```

<!-- xrl-check: error below -->
```yaml
penalty: { strikes: 0, window: 61s, base: 60s, max: 1h }
```

```
policy.yaml:1:21: penalty.strikes
```

<!-- xrl-check: error "no such message" -->
```yaml
log_level: loud
```

<!-- xrl-check: skip -->
```yaml
not: checked
```

<!-- xrl-check: skip: not a policy -->
```yaml
not: checked
```

```yaml
    - name: unmarked
```

<!-- xrl-check: fragment http.rules -->

and a marker with no block.

```sh
xrlctl deny add 198.51.100.0/24 --ttl 10m   # right
xrlctl deny add 10.0.0.1/8
sudo xrlctl stats --watch 2 | head && xrlctl stats --watch
xrld -n policy.yaml
```

Prose may name `xrlctl stats --watch`, `xrlctl vouch add|del PREFIX` and
`xrlctl vouch add PREFIX [--ttl D]`, not `xrlctl shadow syn maybe`,
nor `xrlctl frob`, nor `xrld --config x --check y`.
PAGE
# and a manual page: a synopsis, an example policy, a shell example, prose
cat >"$T/page.8" <<'PAGE'
.TH PAGE 8
.SH SYNOPSIS
.SY xrld
.B \-\-config
.I FILE
.OP \-\-daemon
.YS
.nf
.RB "xrlctl " shadow " \fIRULE\fR " on | off
.RB "xrlctl " "vouch add" " \fIPREFIX\fR [" \-\-tll " \fIDURATION\fR]"
.fi
.SH EXAMPLE
.EX
xdp:
  rules:
    \- name: a
      rate: 1/s
.EE
.EX
xrlctl deny add 10.0.0.0/8 \-\-ttl 0s
.EE
Then
.B xrlctl cookies web sometimes
and
.BR "xrlctl shadow" .
PAGE
check_docs "$T/page.md" "$T/page.8" >"$T/out" 2>&1
rc=$?
fails=0
# expect WHAT AT TEXT [PAGE]: a failure reported at the line of PAGE
# (page.md) that holds AT, saying TEXT
expect() {
	local ln
	local page=${4:-page.md} ln
	ln=$(grep -nF -- "$2" "$T/$page" | head -n 1 | cut -d: -f1)
	if grep -F "FAIL $T/$page:$ln:" "$T/out" | grep -qF -- "$3"; then
		printf '  ok   %s\n' "$1"
	else
		printf '  FAIL %s: want "%s:%s: ... %s"\n' "$1" "$page" "$ln" "$3"
		fails=$((fails + 1))
	fi
}
expect "a whole policy's error, at the line and column xrld says" "rate: 1000" "13: xrld --check refuses the policy (the block from line 4): xdp.rules[0].rate"
expect "a fragment's error, at its line in the page" "burts: 40" "7: xrld --check refuses the fragment (under xdp.rules"
expect "an error shown cut short" "window: 61s" 'does not say "policy.yaml:1:21: penalty.strikes"'
expect "an error marked with the wrong message" "log_level: loud" 'does not say "no such message"'
expect "skip without a reason" "xrl-check: skip -->" "skip needs a reason"
expect "an unmarked fragment" "- name: unmarked" "expected a mapping"
expect "a marker with no block" "fragment http.rules" "no block after it"
expect "a prefix with host bits set" "10.0.0.1/8" "has host bits set"
expect "an option without its value, in a block" "| head &&" "--watch needs SECONDS"
expect "an option xrld --help does not show" "xrld -n" "unknown option '-n'"
expect "a word out of on|off" "syn maybe" "want on or off, got 'maybe'"
expect "an unknown verb" "xrlctl frob" "unknown verb 'frob'"
expect "xrld's usages taken together" "--check y" "no usage of xrld takes --config --check"
expect "a manual page's synopsis with an option xrld lacks" ".SY xrld" "unknown option '--daemon'" page.8
expect "an option misspelt in a synopsis" "tll" "has no option '--tll'" page.8
expect "a manual page's example policy" "name: a" "missing 'burst'" page.8
expect "a manual page's shell example" "ttl 0s" "'0s' must be above zero" page.8
expect "a bold mention in a manual page" "sometimes" "want on or auto or off" page.8
n=$(grep -c '^  FAIL' "$T/out")
if [ "$n" -eq 18 ] && [ "$rc" -eq 1 ]; then
	printf '  ok   nothing else fails (the right parts pass), exit 1\n'
else
	printf '  FAIL %s failures and exit %s, want 18 and 1\n' "$n" "$rc"
	fails=$((fails + 1))
fi
if [ "$fails" -gt 0 ]; then
	echo "docs: the checker itself failed $fails check(s); on the made-up page it said:"
	sed 's/^/    /' "$T/out"
	exit 1
fi
echo "docs: the checker names each mistake of a made-up page; now the docs"

check_docs README.md docs/*.md docs/examples/*.yaml docs/man/*.[0-9]
