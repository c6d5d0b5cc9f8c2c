#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# links.sh - every relative link of README.md and docs/*.md leads somewhere:
# the file it names exists, and a #fragment is the anchor of one of that
# page's headings, as GitHub makes them (lower case; punctuation but `-` and
# `_` dropped; spaces to `-`; a repeated heading gets -1, -2, ...). So a
# feature list that points into the docs cannot point at a section that was
# renamed. Links in code (fenced blocks, `spans`) and to other sites are
# not followed.
#
# First the check on a made-up page with one good and three bad links, then
# on the docs.
#
# Usage: tests/lint/links.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

check_links() {
	python3 - "$@" <<'PY'
import os, re, sys

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")

def prose(path):
    """(line number, text) of the lines outside fenced blocks, inline code cut."""
    fence = None
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        m = FENCE.match(line)
        if m:
            mark = m.group(1)[0]
            if fence is None:
                fence = mark
            elif fence == mark:
                fence = None
            continue
        if fence is None:
            yield n, re.sub(r"`[^`]*`", "", line)

def slug(text):
    text = re.sub(r"<[^>]+>", "", text)               # inline HTML
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)              # punctuation, backticks
    return text.replace(" ", "-")

anchors_of = {}
def anchors(path):
    if path not in anchors_of:
        seen, out = {}, set()
        fence = None
        for line in open(path, encoding="utf-8"):
            m = FENCE.match(line)
            if m:
                mark = m.group(1)[0]
                fence = mark if fence is None else (None if fence == mark else fence)
                continue
            h = HEADING.match(line) if fence is None else None
            if not h:
                continue
            s = slug(h.group(2))
            k = seen.get(s, 0)
            out.add(s if k == 0 else f"{s}-{k}")
            seen[s] = k + 1
        anchors_of[path] = out
    return anchors_of[path]

fails = total = 0
for page in sys.argv[1:]:
    for n, line in prose(page):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue                                  # https:, mailto:
            total += 1
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                print(f"  FAIL {page}:{n}: ({target}): no file {dest}")
                fails += 1
                continue
            if frag and dest.endswith(".md") and frag not in anchors(dest):
                print(f"  FAIL {page}:{n}: ({target}): {dest} has no heading whose anchor is #{frag}")
                fails += 1
print(f"links: {total} relative links, {fails} broken")
sys.exit(1 if fails else 0)
PY
}

T=$(mktemp -d "${TMPDIR:-/tmp}/xrl-links-lint.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/docs"
cat >"$T/docs/page.md" <<'PAGE'
# A page

## Who can earn a `penalty`?

[good](#who-can-earn-a-penalty) [gone](#who-can-earn-penalties)
[no file](missing.md) [no heading there](other.md#nowhere)
`[in code](missing.md)` and [away](https://example.org/#x)

```
[in a block](missing.md)
```
PAGE
printf '# Other\n' >"$T/docs/other.md"
out=$(check_links "$T/docs/page.md")
rc=$?
fails=0
for want in "#who-can-earn-penalties" "no file" "has no heading whose anchor is #nowhere" "3 broken"; do
	if ! grep -qF -- "$want" <<<"$out"; then
		echo "  FAIL the check on a made-up page does not say '$want'"
		fails=$((fails + 1))
	fi
done
if [ $rc -ne 1 ] || [ "$(grep -c FAIL <<<"$out")" -ne 3 ]; then
	echo "  FAIL the made-up page: want 3 broken links and exit 1, got exit $rc"
	fails=$((fails + 1))
fi
if [ $fails -gt 0 ]; then
	sed 's/^/    /' <<<"$out"
	exit 1
fi
echo "  ok   the check names each broken link of a made-up page, and only those"

check_links README.md docs/*.md
