#!/usr/bin/env bash
# scripts/deb/build.sh BUILD - build BUILD/xrl_VERSION_ARCH.deb from a tree
# built by `make` (make deb calls it). The files are what `make install
# PREFIX=/usr` puts, staged under BUILD/deb/root; Depends comes from
# dpkg-shlibdeps over the binaries, so it names exactly the runtime
# libraries they load (scripts/install-deps.sh --runtime installs them).
#
# What debhelper would do for a package built with it, by hand, so that
# lintian finds nothing to report (tests/e2e/test_deb.sh checks): binaries
# stripped as dh_strip does (the XDP object of its DWARF), man pages
# gzip -9n, the copyright (scripts/deb/copyright, machine-readable) and a
# changelog in /usr/share/doc/xrl/, md5sums, and the lintian overrides
# with their reasons (scripts/deb/lintian-overrides). The package is native (built from its
# own tree, no Debian revision), so the changelog is changelog.gz (Debian
# policy 12.7; changelog.Debian.gz is a non-native package's).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
ROOT=$B/deb/root
WORK=$B/deb/work
DOC=$ROOT/usr/share/doc/xrl

# the one version (scripts/version.sh): what the programs print too
ver=$(scripts/version.sh)
arch=$(dpkg --print-architecture)
maint=$(sed -n 's/^Maintainer: //p' scripts/deb/control.in)

rm -rf "$B/deb"
mkdir -p "$ROOT" "$WORK/debian"
make --no-print-directory install DESTDIR="$PWD/$ROOT" PREFIX=/usr \
	SYSTEMDUNITDIR=/lib/systemd/system >/dev/null

# dh_strip's options for executables; the build tree keeps its symbols
strip --remove-section=.comment --remove-section=.note \
	"$ROOT/usr/sbin/xrld" "$ROOT/usr/sbin/xrlctl" "$ROOT/usr/sbin/xrl-load"
# the XDP object without its DWARF (a quarter of the size): BTF stays, which
# libbpf and iproute2 need to load it (test_deb loads the installed one)
llvm-strip -g "$ROOT/usr/lib/xrl/xrl.bpf.o"
# -n: no name or time stamp in the gzip header, so a rebuild is identical
gzip -9n "$ROOT"/usr/share/man/man*/*

install -d -m 0755 "$DOC" "$ROOT/usr/share/lintian/overrides"
install -m 0644 scripts/deb/copyright "$DOC/copyright"
install -m 0644 scripts/deb/lintian-overrides "$ROOT/usr/share/lintian/overrides/xrl"
# One entry, for this build: the history of every change is git's. Dated
# by the commit, so two builds of one commit are the same file.
if commit=$(git rev-parse --short=12 HEAD 2>/dev/null); then
	when=$(date -u -R -d "@$(git log -1 --format=%ct)")
	what="Built from commit $commit of the xrl tree; its git log has the changes."
else
	when=$(date -u -R -r VERSION)
	what="Built from an xrl tree without git history."
fi
printf 'xrl (%s) unstable; urgency=medium\n\n  * %s\n\n -- %s  %s\n' \
	"$ver" "$what" "$maint" "$when" | gzip -9n >"$DOC/changelog.gz"
chmod 0644 "$DOC/changelog.gz"

# dpkg-shlibdeps wants a debian/control beside it
printf 'Source: xrl\n\nPackage: xrl\nArchitecture: any\n' >"$WORK/debian/control"
deps=$(cd "$WORK" && dpkg-shlibdeps -O --ignore-missing-info \
	"$OLDPWD/$ROOT/usr/sbin/xrld" "$OLDPWD/$ROOT/usr/sbin/xrlctl" \
	"$OLDPWD/$ROOT/usr/sbin/xrl-load" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$deps" ] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$ROOT/DEBIAN"
# Installed-Size as dpkg-gencontrol counts it: KiB of what is installed
size=$(du -sk --apparent-size "$ROOT" | cut -f1)
sed -e "s/@VERSION@/$ver/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$deps/" \
	-e "s/@SIZE@/$size/" scripts/deb/control.in >"$ROOT/DEBIAN/control"
echo /etc/xrl/policy.yaml >"$ROOT/DEBIAN/conffiles"
# md5sums for dpkg --verify and debsums, as dh_md5sums: every file but the
# conffile (dpkg keeps its sum itself)
(cd "$ROOT" && find . -type f ! -path ./DEBIAN/\* ! -path ./etc/\* -printf '%P\0' |
	LC_ALL=C sort -z | xargs -0 md5sum) >"$ROOT/DEBIAN/md5sums"
install -m 0755 scripts/deb/postinst scripts/deb/prerm scripts/deb/postrm "$ROOT/DEBIAN/"
out=$B/xrl_${ver}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$out" >/dev/null
echo "$out"
