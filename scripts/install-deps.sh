#!/usr/bin/env bash
# Install the Debian packages xrl needs to build, test, demo and benchmark.
# Idempotent: installs only what is missing, and runs apt-get update only
# when something is. Debian packages only.
set -euo pipefail

PKGS=(
	make gcc clang llvm pkg-config libclang-rt-dev
	libbpf-dev libxdp-dev xdp-tools bpftool libelf-dev zlib1g-dev
	libcmocka-dev libyaml-dev libmicrohttpd-dev libhiredis-dev libjansson-dev libssl-dev
	redis-server nginx wrk
	iproute2 iputils-ping procps util-linux curl python3 tcpdump libcap2-bin
	nftables iptables gnuplot-nox
)

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (sudo) to install packages" >&2
	exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done

if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
