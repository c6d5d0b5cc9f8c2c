#!/usr/bin/env bash
# scripts/deb/clean-check.sh [DEB] - the Debian package on a clean machine.
#
# A minimal Debian 12 (debootstrap --variant=minbase, from Debian's mirror)
# stands in for a fresh front-end host. Into it: the runtime set only
# (scripts/install-deps.sh --runtime's packages, by apt), then the package
# (dpkg -i: its Depends must be met by exactly that set). Then, inside it:
# xrld --version (the package's Version), the group xrl and the user xrl
# (not in it) made, xrld --check of the shipped policy, the unit's
# ExecStart by hand in a network namespace whose interface is eth0 (it must
# come up, in shadow), dpkg -r (nothing of the package left but its
# conffile and the accounts, no program attached) and dpkg -P (the
# accounts it made go too). Root; about 3 minutes, most of it the
# download. The README names it; `make test` runs tests/e2e/test_deb.sh on
# this machine instead.
#
# Exit: 0 pass, 1 fail, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/../.."

DEB=${1:-}
if [ -z "$DEB" ]; then
	DEB=$(scripts/deb/build.sh build | tail -n 1)
fi
[ -f "$DEB" ] || { echo "clean-check: no package $DEB" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "clean-check: run as root" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "clean-check: needs debootstrap" >&2; exit 2; }

ROOT=$(mktemp -d /tmp/xrl-clean.XXXXXX)
NS=xrl-clean-$$
fails=0
ok()   { printf 'clean-check:   ok   %s\n' "$*"; }
bad()  { printf 'clean-check:   FAIL %s\n' "$*"; fails=$((fails + 1)); }
in_root() { nsenter --net="/run/netns/$NS" -- chroot "$ROOT" "$@"; }
cleanup() {
	set +e
	pkill -f "chroot $ROOT" 2>/dev/null
	for m in sys/fs/bpf sys proc; do umount -l "$ROOT/$m" 2>/dev/null; done
	ip netns del "$NS" 2>/dev/null
	rm -rf "$ROOT"
}
trap cleanup EXIT

echo "clean-check: debootstrap a minimal bookworm into $ROOT"
debootstrap --variant=minbase bookworm "$ROOT" http://deb.debian.org/debian >/dev/null
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
runtime=$(sed -n '/^RUNTIME=(/,/^)/p' scripts/install-deps.sh | tr -s ' \t\n()' ' ' | sed 's/RUNTIME=//')
echo "clean-check: the runtime set:$runtime"
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	$runtime >/dev/null
cp "$DEB" "$ROOT/tmp/xrl.deb"
if chroot "$ROOT" dpkg -i /tmp/xrl.deb >/dev/null 2>&1; then
	ok "dpkg -i on the runtime set only: its dependencies are met"
else
	bad "dpkg -i: $(chroot "$ROOT" dpkg -i /tmp/xrl.deb 2>&1 | tail -n 3)"
fi
v=$(chroot "$ROOT" /usr/sbin/xrld --version 2>&1)
[ "$v" = "xrld $(dpkg-deb -f "$DEB" Version)" ] && ok "xrld --version is the package's: $v" ||
	bad "xrld --version: $v, the package: $(dpkg-deb -f "$DEB" Version)"
gid=$(chroot "$ROOT" getent group xrl | cut -d: -f3)
[ -n "$gid" ] && ok "the group xrl made (gid $gid)" || bad "no group xrl"
ugid=$(chroot "$ROOT" id -g xrl 2>/dev/null || echo none)
[ "$ugid" != none ] && [ "$ugid" != "$gid" ] && ok "the user xrl made, its group not xrl" ||
	bad "the user xrl: group $ugid (xrl is $gid)"
c=$(chroot "$ROOT" /usr/sbin/xrld --check /etc/xrl/policy.yaml 2>&1) &&
	ok "xrld --check of the shipped policy" || bad "xrld --check: $c"
grep -q ', shadow$' <<<"$c" && ! grep -q ', drop$' <<<"$c" &&
	ok "every rule of the shipped policy is in shadow" || bad "the shipped policy drops: $c"

# the unit's ExecStart by hand: an eth0 in a namespace, bpffs and /proc inside
ip netns add "$NS"
ip -n "$NS" link add eth0 type veth peer name eth0p
ip -n "$NS" link set eth0 up
ip -n "$NS" link set eth0p up
mount -t proc proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys"
mountpoint -q "$ROOT/sys/fs/bpf" || mount -t bpf bpf "$ROOT/sys/fs/bpf"
mkdir -p "$ROOT/run/xrl"
exec_start=$(sed -n 's/^ExecStart=//p' "$ROOT/lib/systemd/system/xrld.service")
in_root $exec_start >"$ROOT/tmp/xrld.log" 2>&1 &
up=no
for _ in $(seq 100); do
	in_root /usr/sbin/xrlctl status >/dev/null 2>&1 && { up=yes; break; }
	sleep 0.1
done
[ $up = yes ] && ok "the unit's ExecStart came up ($exec_start)" ||
	bad "xrld did not come up: $(tail -n 5 "$ROOT/tmp/xrld.log")"
ps=$(in_root /usr/sbin/xrlctl policy show 2>&1 || true)
grep -q 'syn: .*, shadow' <<<"$ps" && ok "running in shadow" || bad "not in shadow: $ps"
ip -n "$NS" link show dev eth0 | grep -q 'prog/xdp' && ok "attached on eth0" || bad "not attached"

files=$(chroot "$ROOT" dpkg -L xrl | while read -r f; do [ ! -f "$ROOT$f" ] || echo "$f"; done)
in_root dpkg -r xrl >/dev/null 2>&1 && ok "dpkg -r" || bad "dpkg -r failed"
ip -n "$NS" link show dev eth0 | grep -q 'prog/xdp' && bad "a program is left on eth0" ||
	ok "no program left on eth0"
left=$(for f in $files; do [ ! -e "$ROOT$f" ] || echo "$f"; done | tr '\n' ' ')
[ "$left" = "/etc/xrl/policy.yaml " ] && ok "dpkg -r left only the conffile" ||
	bad "dpkg -r left: $left"
chroot "$ROOT" getent group xrl >/dev/null && ok "dpkg -r kept the group xrl" || bad "dpkg -r deleted the group xrl"
chroot "$ROOT" dpkg -P xrl >/dev/null 2>&1
[ -e "$ROOT/etc/xrl" ] && bad "dpkg -P left /etc/xrl" || ok "dpkg -P removed /etc/xrl"
chroot "$ROOT" getent group xrl >/dev/null || chroot "$ROOT" getent passwd xrl >/dev/null &&
	bad "dpkg -P left the accounts it made" || ok "dpkg -P deleted the group and user it made"
pgrep -f "$ROOT" >/dev/null && bad "a process of the package still runs" || ok "nothing left running"

[ $fails -eq 0 ] && { echo "clean-check: PASS"; exit 0; }
echo "clean-check: FAIL ($fails)"
exit 1
