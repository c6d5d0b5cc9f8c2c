#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# scripts/version.sh - the one version of xrl, printed on stdout: what
# `xrld --version`, `xrlctl --version` and `xrl-load --version` print (the
# Makefile writes it into xrl_version.h) and the Debian package's Version
# (scripts/deb/build.sh). Every one of them calls this script, so they
# cannot disagree.
#
#   0.1.0                    the commit that set VERSION to 0.1.0, clean
#   0.1.0+git364.ee94f9a     364 commits after it, at commit ee94f9a
#   0.1.0+git364.ee94f9a.dirty  the same with uncommitted changes
#   0.1.0                    outside git (a tarball): VERSION alone
#
# VERSION names the release the tree is based on, and the count is of the
# commits since VERSION last changed: that is what `git describe` would
# count from a tag v0.1.0 on that commit, without needing the tag. The
# result is a valid Debian version of a native package (digits first; only
# alphanumerics, "." and "+"), and dpkg orders it as it should: 0.1.0 <
# 0.1.0+git1.* < 0.1.0+git364.* < 0.2.0 (the next bump of VERSION).
#
# A shallow clone without the commit that last changed VERSION counts
# from its oldest commit instead: fetch the history for a package.
set -eu
cd "$(dirname "$0")/.."

base=$(tr -d ' \t\n' <VERSION)
case $base in
[0-9]*) ;;
*) echo "version.sh: VERSION '$base' must start with a digit" >&2; exit 1 ;;
esac
if ! git rev-parse --verify -q HEAD >/dev/null 2>&1; then
	echo "$base"
	exit 0
fi
since=$(git log -1 --format=%H -- VERSION)
n=0
[ -z "$since" ] || n=$(git rev-list --count "$since..HEAD")
v=$base
[ "$n" -eq 0 ] || v=$base+git$n.$(git rev-parse --short HEAD)
# a stat-only change (a touched file) is not a change
git update-index -q --refresh >/dev/null 2>&1 || true
if ! git diff-index --quiet HEAD -- 2>/dev/null; then
	[ "$n" -ne 0 ] || v=$base+git0.$(git rev-parse --short HEAD)
	v=$v.dirty
fi
echo "$v"
