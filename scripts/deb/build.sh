#!/usr/bin/env bash
# scripts/deb/build.sh BUILD - build BUILD/xrl_VERSION_ARCH.deb from a tree
# built by `make` (make deb calls it). The files are what `make install
# PREFIX=/usr` puts, staged under BUILD/deb/root; Depends comes from
# dpkg-shlibdeps over the binaries, so it names exactly the runtime
# libraries they load (scripts/install-deps.sh --runtime installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
ROOT=$B/deb/root
WORK=$B/deb/work

# the one version (scripts/version.sh): what the programs print too
ver=$(scripts/version.sh)
arch=$(dpkg --print-architecture)

rm -rf "$B/deb"
mkdir -p "$ROOT" "$WORK/debian"
make --no-print-directory install DESTDIR="$PWD/$ROOT" PREFIX=/usr \
	SYSTEMDUNITDIR=/lib/systemd/system >/dev/null

# dpkg-shlibdeps wants a debian/control beside it
printf 'Source: xrl\n\nPackage: xrl\nArchitecture: any\n' >"$WORK/debian/control"
deps=$(cd "$WORK" && dpkg-shlibdeps -O --ignore-missing-info \
	"$OLDPWD/$ROOT/usr/sbin/xrld" "$OLDPWD/$ROOT/usr/sbin/xrlctl" \
	"$OLDPWD/$ROOT/usr/sbin/xrl-load" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$deps" ] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$ROOT/DEBIAN"
sed -e "s/@VERSION@/$ver/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$deps/" \
	scripts/deb/control.in >"$ROOT/DEBIAN/control"
echo /etc/xrl/policy.yaml >"$ROOT/DEBIAN/conffiles"
install -m 0755 scripts/deb/postinst scripts/deb/prerm scripts/deb/postrm "$ROOT/DEBIAN/"
out=$B/xrl_${ver}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$out" >/dev/null
echo "$out"
