#!/usr/bin/env bash
# Regenerate vmlinux/<arch>/vmlinux.h from the running kernel's BTF.
# The committed header is what the build uses, so builds do not depend on
# the build host's kernel; regenerate when a newer kernel type is needed.
set -euo pipefail
cd "$(dirname "$0")"
arch=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
btf=${1:-/sys/kernel/btf/vmlinux}
[ -r "$btf" ] || { echo "gen.sh: no BTF at $btf (kernel built without CONFIG_DEBUG_INFO_BTF?)" >&2; exit 1; }
mkdir -p "$arch"
bpftool btf dump file "$btf" format c > "$arch/vmlinux.h.tmp"
mv "$arch/vmlinux.h.tmp" "$arch/vmlinux.h"
echo "wrote vmlinux/$arch/vmlinux.h from $btf ($(uname -r))"
