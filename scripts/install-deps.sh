#!/usr/bin/env bash
# Install the Debian packages xrl needs. Debian packages only.
#
#   scripts/install-deps.sh            build, test, demo and benchmark (the lab):
#                                      compilers, -dev libraries, and every
#                                      command a script or test calls
#   scripts/install-deps.sh --runtime  only the shared libraries xrld and xrlctl
#                                      load: what a front-end host needs
#   scripts/install-deps.sh --check [--runtime]
#                                      list what is missing; exit 1 if anything is
#
# Idempotent: installs only what is missing, and runs apt-get update only
# when something is. Services that Debian starts on install (nginx,
# redis-server, prometheus) are not started: the tests start their own on
# free ports (promtool checks /metrics and the alerting rules;
# test_prometheus.sh runs a prometheus of its own in a lab namespace), and a
# front end must not gain a web server by installing a rate limiter.
set -euo pipefail

RUNTIME=(
	libbpf1 libxdp1 libelf1 zlib1g libyaml-0-2
	libmicrohttpd12 libhiredis0.14 libjansson4 libssl3
)
LAB=(
	make gcc clang llvm pkg-config libclang-rt-dev
	libbpf-dev libxdp-dev xdp-tools bpftool libelf-dev zlib1g-dev
	libcmocka-dev libyaml-dev libmicrohttpd-dev libhiredis-dev libjansson-dev libssl-dev
	redis-server nginx wrk
	iproute2 iputils-ping procps util-linux curl python3 tcpdump libcap2-bin ethtool
	nftables iptables gnuplot-nox dpkg-dev caddy prometheus python3-yaml xxd debootstrap
	universal-ctags graphviz
	lintian man-db binutils
)

usage() {
	echo "usage: scripts/install-deps.sh [--check] [--runtime]" >&2
	exit 2
}

check=0 runtime=0
for a in "$@"; do
	case $a in
	--check) check=1 ;;
	--runtime) runtime=1 ;;
	-h|--help) usage ;;
	*) echo "install-deps: unknown argument '$a'" >&2; usage ;;
	esac
done
if [ $runtime -eq 1 ]; then PKGS=("${RUNTIME[@]}"); else PKGS=("${RUNTIME[@]}" "${LAB[@]}"); fi

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done

if [ $check -eq 1 ]; then
	[ "${#missing[@]}" -eq 0 ] && { echo "install-deps: nothing missing"; exit 0; }
	echo "install-deps: missing ${missing[*]}"
	exit 1
fi
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root to install ${missing[*]}" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d 101: maintainer scripts may not start services (only ours,
# and only when there was none)
prc=/usr/sbin/policy-rc.d
own_prc=0
if [ ! -e "$prc" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$prc"
	chmod 0755 "$prc"
	own_prc=1
	trap 'rm -f "$prc"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ $own_prc -eq 1 ] && rm -f "$prc"
exit 0
