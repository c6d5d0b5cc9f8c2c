#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# docs_img.sh - the docs' diagrams cannot drift from their sources: every
# docs/img/NAME.svg is what docs/img/NAME.dot renders to
# (scripts/docs-img.sh --check: rendered again and compared where this
# graphviz is the one that drew it, else the digest and the labels).
#
# First the check on a copy of the tree whose .dot was changed after its
# image was drawn, which it must refuse; then on the real one.
#
# Usage: tests/lint/docs_img.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

T=$(mktemp -d "${TMPDIR:-/tmp}/xrl-docs-img-lint.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/scripts" "$T/docs/img"
cp scripts/docs-img.sh "$T/scripts/"
cp docs/img/*.dot docs/img/*.svg "$T/docs/img/"
first=$(ls "$T"/docs/img/*.dot | head -n 1)
# a node the image has never shown
sed -i 's/^}$/\tstale_node [label="a node drawn after the image"]\n}/' "$first"
if out=$(bash "$T/scripts/docs-img.sh" --check 2>&1); then
	echo "  FAIL a .dot changed after its image passed the check:"
	echo "$out" | sed 's/^/    /'
	exit 1
fi
echo "  ok   a .dot changed after its image is refused"

bash scripts/docs-img.sh --check
