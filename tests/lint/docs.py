#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""docs.py - the docs cannot drift from the programs (tests/lint/docs.sh).

What it checks, in README.md and docs/*.md (and docs/examples/*.yaml, and
the manual pages docs/man/*.5 and *.8, below):

- Every fenced ```yaml block is a policy `xrld --check` takes. The line
  before a block may say otherwise, in an HTML comment (not rendered):
    <!-- xrl-check: fragment xdp.rules -->   the block is what goes under
        that path (list items or keys): it is put there in an otherwise
        empty policy, which must then pass;
    <!-- xrl-check: error "MESSAGE" -->      a deliberate mistake: xrld
        --check must refuse the block with MESSAGE in its error;
    <!-- xrl-check: error below -->          the same, where the fenced
        block after it shows the error: each of its lines must be a whole
        line of what xrld says, with or without xrld's "xrld: error: " (the
        file is called policy.yaml, so a line reads "policy.yaml:5:7:
        xdp.rules[0]: ...", as xrlctl policy check says it);
    <!-- xrl-check: skip: REASON -->         not checked (a shell block
        too), with the reason said.
  A block passes when xrld --check prints "FILE: ok": what it says after
  that about this host (the SYN-cookie path it would run) is about the
  machine, not the text, and is shown as a note.
- Every xrlctl and xrld command line in a fenced sh/bash/shell/console
  block, and in an inline code span, is one the program parses. The
  grammar is read from the programs themselves (`xrlctl --help`: each
  verb's synopsis, its positionals and options; `xrld --help`: its usage
  lines), so a verb or option renamed in the code fails the docs that
  still use the old one. A command line in a block must be whole; an
  inline span may stop early (`xrlctl deny add` names a verb in prose), but
  every word it has must be right. In both, an upper-case word (RULE,
  PREFIX, D) stands for any value, `a|b` is each of a and b, and brackets
  (`[--ttl D]`) only mark what is optional. Values are checked by the
  shape each metavariable stands for (META_TYPES below: CIDR, DURATION,
  RATE, ...), as user/lib/verbs.c checks them.

A manual page has no fenced blocks: its examples (.EX/.EE) are shell
lines, or a policy when they start with one of a policy's top-level keys
(as xrld --check names them); its synopses (.SY/.YS, and .nf/.fi) are
command lines in synopsis notation, with italic words as placeholders; and
a bold run of its prose that starts with xrlctl or xrld is a mention, as
an inline span is in Markdown. A `.\\" xrl-check: ...` comment before a
block marks it as the HTML comment does.

Every failure is printed as FILE:LINE: what is wrong, with xrld's own
message for a policy; the last line sums up. Exit 0, or 1 on any failure.

Usage: tests/lint/docs.py --xrld PATH --xrlctl PATH FILE...
"""
import argparse
import ipaddress
import os
import re
import shlex
import subprocess
import sys
import tempfile

MARK = re.compile(r"^\s*<!--\s*xrl-check:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")
SHELL_LANGS = {"sh", "bash", "shell", "console", "shell-session", "sh-session"}
YAML_LANGS = {"yaml", "yml"}
PROGS = {"xrlctl", "xrld"}
# An upper-case word stands for a value the reader fills in.
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_.|-]*(\.\.\.)?$|^<[^>]+>$|^\.\.\.$")

failures = []
notes = []


def fail(where, msg):
    failures.append(f"{where}: {msg}")


# ---- values, as user/lib/policy.c and user/lib/verbs.c read them ----------

UNITS = "ns|us|ms|s|sec|second|m|min|minute|h|hour|d|day"
DECIMAL = r"(?:\d+(?:\.\d{0,6})?|\.\d{1,6})"
DURATION = re.compile(rf"^({DECIMAL})({UNITS})$")
RATE = re.compile(rf"^({DECIMAL})/({DECIMAL})?({UNITS})$")


def v_any(s):
    return None


def v_prefix(s, vouch=False):
    try:
        net = ipaddress.ip_network(s, strict=True)
    except ValueError as e:
        return f"'{s}' is not an address prefix xrl takes ({e})"
    if vouch and net.prefixlen < (24 if net.version == 4 else 48):
        return f"'{s}': a vouch covers one /24 (IPv4) or /48 (IPv6); this is wider"
    return None


def v_matched(rx, what, zero):
    """A value checker: s must match rx (else "is not WHAT"), and zero(m)
    names what may not be zero in it."""
    def check(s):
        m = rx.match(s)
        if not m:
            return f"'{s}' is not {what}"
        why = zero(m)
        return f"'{s}'{why}" if why else None
    return check


v_duration = v_matched(DURATION, "a duration (want e.g. 2s, 500ms, 10m, 1h, 1d)",
                       lambda m: " must be above zero" if float(m.group(1)) == 0 else None)
v_rate = v_matched(RATE, "a rate (want COUNT/PERIOD: 100/s, 10/min, 1/6s)",
                   lambda m: ": neither the count nor the period may be zero"
                   if float(m.group(1)) == 0 or (m.group(2) is not None and float(m.group(2)) == 0)
                   else None)


def v_count(s):
    if not re.match(r"^\+?\d+$", s) or int(s) < 1:
        return f"'{s}' is not a positive whole number"
    return None


def v_seconds(s):
    try:
        ok = float(s) > 0
    except ValueError:
        ok = False
    return None if ok else f"'{s}' is not a positive number of seconds"


# What each metavariable of the synopses stands for. A verb that brings a
# new one fails here until it is named: say what its values look like.
META_TYPES = {
    "IFACE": v_any, "IF": v_any, "NAME": v_any, "RULE": v_any, "KEY": v_any,
    "KEY|HASH": v_any, "FILE": v_any, "PATH": v_any, "DIR": v_any,
    "CIDR": v_prefix, "PREFIX": lambda s: v_prefix(s, vouch=True),
    "DURATION": v_duration, "RATE": v_rate, "N": v_count, "SECONDS": v_seconds,
}


def check_value(meta, s):
    """None if s may stand where the synopsis says META, else why not."""
    if PLACEHOLDER.match(s):
        return None
    if "|" in meta and meta.lower() == meta:
        words = meta.split("|")
        return None if s in words else f"want {' or '.join(words)}, got '{s}'"
    if meta not in META_TYPES:
        return f"the checker does not know what {meta} stands for (teach META_TYPES)"
    return META_TYPES[meta](s)


# ---- the grammars, read from the programs' --help --------------------------

def run_help(prog):
    p = subprocess.run([prog, "--help"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"docs: {prog} --help exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def synopsis_tokens(text):
    """'a [--x M] B' as (token, optional) pairs, brackets taken off."""
    out, depth = [], 0
    for t in text.split():
        opens = len(t) - len(t.lstrip("["))
        depth += opens
        closes = len(t) - len(t.rstrip("]"))
        out.append((t.strip("[]"), depth > 0))
        depth -= closes
    return out


class Verb:
    def __init__(self, words, pos, opts, required=()):
        self.words, self.pos, self.opts = words, pos, opts
        self.required = set(required)  # options shown without brackets

    def synopsis(self):
        return " ".join(self.words + self.pos +
                        [f"{o} {m}" if o in self.required else f"[{o} {m}]" if m else f"[{o}]"
                         for o, m in self.opts.items()])


def is_meta(t):
    return bool(PLACEHOLDER.match(t)) or "|" in t


def parse_verb_line(line):
    """One verb row of `xrlctl --help`: '  SYNOPSIS  help' (the synopsis
    padded to 40 columns, or followed by one space when longer)."""
    body = line[2:]
    parts = re.split(r"\s{2,}", body, maxsplit=1)
    toks = parts[0].split()
    words = [toks[0]]
    i = 1
    # a second plain word is the verb's own (deny add) when the synopsis
    # stands alone in its column, or when arguments follow it; else it
    # starts the help of a long synopsis
    if i < len(toks) and re.match(r"^[a-z][a-z0-9-]*$", toks[i]) and (
            len(parts) > 1 or (i + 1 < len(toks) and (is_meta(toks[i + 1]) or toks[i + 1].startswith("[-")))):
        words.append(toks[i])
        i += 1
    pos, opts, required = [], {}, []
    while i < len(toks):
        t = toks[i]
        if t.startswith("--") and i + 1 < len(toks) and is_meta(toks[i + 1]):
            opts[t] = toks[i + 1]  # a required option: no brackets
            required.append(t)
            i += 2
        elif t.startswith("[-") and t.endswith("]"):
            opts[t[1:-1]] = None  # a flag: no value (deny add --force)
            i += 1
        elif t.startswith("[-") and i + 1 < len(toks) and toks[i + 1].endswith("]"):
            opts[t[1:]] = toks[i + 1][:-1]
            i += 2
        elif not opts and is_meta(t):
            pos.append(t)
            i += 1
        else:
            break  # the help text of a synopsis longer than its column
    return Verb(words, pos, opts, required)


class Xrlctl:
    def __init__(self, prog):
        text = run_help(prog)
        lines = text.splitlines()
        first = re.match(r"^usage: xrlctl (.*) VERB \.\.\.$", lines[0])
        if not first:
            sys.exit(f"docs: can't read xrlctl --help's first line: {lines[0]!r}")
        self.globals = {}
        toks = synopsis_tokens(first.group(1))
        for k, (t, _) in enumerate(toks):
            if t.startswith("-"):
                nxt = toks[k + 1][0] if k + 1 < len(toks) else ""
                self.globals[t] = nxt if nxt and not nxt.startswith("-") else None
        self.verbs = [parse_verb_line(l) for l in lines if l.startswith("  ") and l[2:3] != " "]
        if not self.verbs:
            sys.exit("docs: xrlctl --help lists no verbs")
        self.words = {v.words[0] for v in self.verbs}

    def usage(self, word):
        return " | ".join(v.synopsis() for v in self.verbs if v.words[0] == word)

    def find(self, args):
        """The verb args start with (as user/lib/verbs.c's find_verb), and
        how many words it took."""
        for v in self.verbs:
            if v.words[0] != args[0]:
                continue
            if len(v.words) == 1:
                return v, 1
            if len(args) > 1 and args[1] == v.words[1]:
                return v, 2
        return None, 0

    def check(self, args, whole):
        """None, or why args are not an xrlctl command line."""
        i = 0
        while i < len(args) and args[i].startswith("-"):
            a = args[i]
            name, eq, val = a.partition("=")
            if a in ("--help", "-h", "--version", "--json"):
                i += 1
                continue
            if name not in self.globals:
                return f"unknown option '{a}' (xrlctl {' '.join(self.globals)} VERB ...)"
            meta = self.globals[name]
            if meta and not eq:
                i += 1
                if i >= len(args):
                    return f"{name} needs {meta}" if whole else None
            i += 1
        special = [a for a in args if a in ("--help", "-h", "--version")]
        rest = [a for a in args[i:] if a not in ("--json", "--help", "-h")]
        if not rest:
            return None if (special or not whole) else "no verb"
        if PLACEHOLDER.match(rest[0]):
            return None  # xrlctl [options] VERB ...: the general form
        if rest[0] not in self.words:
            return f"unknown verb '{rest[0]}'"
        v, used = self.find(rest)
        if not v:
            if len(rest) == 1 and (not whole or special):
                return None
            return f"no verb '{' '.join(rest[:2])}' (usage: {self.usage(rest[0])})"
        return self.check_args(v, rest[used:], whole and not special)

    def check_args(self, v, args, whole):
        npos = 0
        k = 0
        while k < len(args):
            a = args[k]
            if a in v.opts and v.opts[a] is None:
                k += 1
                continue
            if a in v.opts:
                if k + 1 >= len(args):
                    return f"{a} needs {v.opts[a]} (usage: {v.synopsis()})" if whole else None
                why = check_value(v.opts[a], args[k + 1])
                if why:
                    return f"{a}: {why}"
                k += 2
                continue
            if a.startswith("-") and len(a) > 1 and not PLACEHOLDER.match(a):
                return f"'{v.synopsis().split(' [')[0]}' has no option '{a}' (usage: {v.synopsis()})"
            if npos >= len(v.pos):
                return f"unexpected argument '{a}' (usage: {v.synopsis()})"
            why = check_value(v.pos[npos], a)
            if why:
                return f"{v.pos[npos]}: {why}"
            npos += 1
            k += 1
        if whole and npos < len(v.pos):
            return f"missing {' '.join(v.pos[npos:])} (usage: {v.synopsis()})"
        missing = [o for o in v.opts if o in v.required and o not in args]
        if whole and missing:
            return f"missing {' '.join(missing)} (usage: {v.synopsis()})"
        return None


class Xrld:
    def __init__(self, prog):
        self.forms = []
        for line in run_help(prog).splitlines():
            m = re.match(r"^(?:usage:)?\s*xrld\s+(.*)$", line)
            if not m:
                continue
            form = {}  # option -> (META or None, optional)
            toks = synopsis_tokens(m.group(1))
            for k, (t, opt) in enumerate(toks):
                if t.startswith("-"):
                    nxt = toks[k + 1][0] if k + 1 < len(toks) else ""
                    meta = nxt if nxt and not nxt.startswith("-") and PLACEHOLDER.match(nxt) else None
                    form[t] = (meta, opt)
            self.forms.append((m.group(1), form))
        if not self.forms:
            sys.exit("docs: xrld --help shows no usage")
        self.known = {o: f[o][0] for _, f in self.forms for o in f}

    def usage(self):
        return " | ".join(f"xrld {u}" for u, _ in self.forms)

    def check(self, args, whole):
        used = {}
        k = 0
        while k < len(args):
            a = args[k]
            if a in ("--help", "-h"):
                return None
            name, eq, val = a.partition("=")
            if re.match(r"^-[a-zA-Z]{2,}$", a):  # -vv: short flags together
                names = ["-" + c for c in a[1:]]
            else:
                names = [name]
            for n in names:
                if n not in self.known:
                    if not n.startswith("-"):
                        return f"xrld takes no argument '{a}' (usage: {self.usage()})"
                    return f"unknown option '{n}' (usage: {self.usage()})"
                meta = self.known[n]
                if meta and not eq:
                    if k + 1 >= len(args):
                        if whole:
                            return f"{n} needs {meta}"
                        used[n] = None
                        break
                    k += 1
                used[n] = meta
            k += 1
        if not used:
            return "no option: xrld needs --config or --check" if whole else None
        for _, form in self.forms:
            if not all(o in form for o in used):
                continue
            if whole and not all(opt or o in used for o, (_, opt) in form.items()):
                continue
            return None
        return f"no usage of xrld takes {' '.join(used)} so (usage: {self.usage()})"


# ---- reading the docs -------------------------------------------------------

class Block:
    def __init__(self, path, start, lang, lines, mark, mark_line):
        self.path, self.start, self.lang, self.lines = path, start, lang, lines
        self.mark, self.mark_line = mark, mark_line


def read_markdown(path):
    """The fenced blocks of a Markdown file, and its prose with every block
    and HTML comment blanked out (so line numbers stay)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, prose = [], []
    i = 0
    last_mark = None  # (text, line) of a marker line waiting for its block
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            mk = MARK.match(lines[i])
            if mk:
                if last_mark:
                    fail(f"{path}:{last_mark[1]}", "an xrl-check marker with no block after it")
                last_mark = (mk.group(1), i + 1)
            elif lines[i].strip() and last_mark:
                fail(f"{path}:{last_mark[1]}", "an xrl-check marker with no block after it")
                last_mark = None
            prose.append(lines[i])
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        j = i + 1
        body = []
        close = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        while j < len(lines) and not close.match(lines[j]):
            ln = lines[j]
            body.append(ln[len(indent):] if ln.startswith(indent) else ln.lstrip())
            j += 1
        mark, mark_line = (last_mark or (None, None))
        blocks.append(Block(path, i + 2, lang, body, mark, mark_line))
        last_mark = None
        prose.extend([""] * (j + 1 - i))
        i = j + 1
    if last_mark:
        fail(f"{path}:{last_mark[1]}", "an xrl-check marker with no block after it")
    text = "\n".join(prose)
    text = re.sub(r"<!--.*?-->", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return blocks, text


def code_spans(text):
    """(line, content) of each inline code span (CommonMark: a run of
    backticks up to the next run of the same length, within a paragraph)."""
    for m in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", text, flags=re.S):
        content = m.group(2)
        if "\n\n" in content:
            continue
        line = text.count("\n", 0, m.start()) + 1
        c = content.replace("\n", " ").replace("\\|", "|").strip()
        yield line, c


# ---- checking a policy ------------------------------------------------------

def run_check(xrld, yaml_text, tmpdir, name):
    """xrld --check on the text as policy.yaml, in a directory of its own
    (so xrld's messages name the file as the docs do)."""
    d = os.path.join(tmpdir, name)
    os.mkdir(d)
    f = "policy.yaml"
    with open(os.path.join(d, f), "w", encoding="utf-8") as out:
        out.write(yaml_text)
    p = subprocess.run([os.path.abspath(xrld), "--check", f], capture_output=True, text=True, cwd=d)
    ok = p.stdout.startswith(f"{f}: ok\n")
    return ok, p, f


def where_in_doc(msg, tmpfile, block, path_depth, dedent):
    """Where xrld's 'xrld: error: TMP:L:C: what' is in the doc, and what:
    ('DOC:LINE:COL', what), or (None, msg) when it names no place. A
    fragment sits path_depth lines down and 2*path_depth columns in."""
    m = re.search(r"(?<![\w/.-])" + re.escape(tmpfile) + r":(\d+):(\d+): (.*)", msg, flags=re.S)
    if not m:
        return None, msg
    line = block.start + int(m.group(1)) - 1 - path_depth
    col = int(m.group(2)) - 2 * path_depth + dedent
    return f"{block.path}:{line}:{col}", m.group(3)


def wrap(lines, path):
    """The fragment put under the dotted path of an empty policy."""
    keys = path.split(".")
    ind = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    head = [("  " * d) + k + ":" for d, k in enumerate(keys)]
    body = [("  " * len(keys)) + l[ind:] if l.strip() else "" for l in lines]
    return "\n".join(head + body) + "\n", len(keys), ind


def check_yaml(xrld, b, after, tmpdir, counts):
    where = f"{b.path}:{b.start}"
    name = f"{os.path.basename(b.path)}-{b.start}"
    mark = b.mark or ""
    depth, dedent = 0, 0
    text = "\n".join(b.lines) + "\n"
    want_err = None
    whole_lines = False  # error below: the shown lines are xrld's, whole
    if mark.startswith("skip"):
        if not re.match(r"^skip:\s*\S", mark):
            fail(f"{b.path}:{b.mark_line}", "skip needs a reason: <!-- xrl-check: skip: REASON -->")
        counts["skipped"] += 1
        return
    if mark.startswith("fragment"):
        m = re.match(r"^fragment\s+([a-z_]+(?:\.[a-z_]+)*)$", mark)
        if not m:
            fail(f"{b.path}:{b.mark_line}", "fragment needs where it goes: <!-- xrl-check: fragment xdp.rules -->")
            return
        text, depth, dedent = wrap(b.lines, m.group(1))
        counts["fragments"] += 1
    elif mark == "error below":
        if not after or after.lang in YAML_LANGS | SHELL_LANGS:
            fail(f"{b.path}:{b.mark_line}", "error below, but no block of xrld's output follows")
            return
        want_err = [l.strip() for l in after.lines if l.strip()]
        whole_lines = True
        counts["errors"] += 1
    elif mark.startswith("error"):
        m = re.match(r'^error\s+"(.+)"$', mark)
        if not m:
            fail(f"{b.path}:{b.mark_line}", 'error needs its message: <!-- xrl-check: error "MESSAGE" --> or error below')
            return
        want_err = [m.group(1)]
        counts["errors"] += 1
    elif mark:
        fail(f"{b.path}:{b.mark_line}", f"unknown xrl-check marker '{mark}' (fragment PATH, error \"MESSAGE\", skip: REASON)")
        return
    else:
        counts["whole"] += 1
    ok, p, tmp = run_check(xrld, text, tmpdir, name)
    raw = (p.stderr or p.stdout).strip()
    at, said = where_in_doc(raw, tmp, b, depth, dedent)
    if want_err is not None:
        if ok:
            fail(where, "marked as a deliberate error, but xrld --check takes it")
        lines = raw.splitlines()
        lines += [re.sub(r"^xrld: (error: )?", "", l) for l in lines]
        for w in want_err:
            if not ok and not (w in lines if whole_lines else w in raw):
                fail(where, f"xrld --check refuses it, but does not say \"{w}\"; it says: {raw}")
        return
    if not ok:
        kind = f"the fragment (under {mark.split()[1]}" if depth else "the policy ("
        fail(at or where, f"xrld --check refuses {kind}{', ' if depth else ''}the block from line {b.start}): {said}")
    elif p.returncode != 0:
        notes.append(f"{where}: valid; xrld --check adds about this host: {raw}")


# ---- checking command lines -------------------------------------------------

def simple_commands(line):
    """The simple commands of one shell line, each a list of words (leading
    sudo, env and VAR=value taken off)."""
    lex = shlex.shlex(line, posix=True, punctuation_chars="();<>|&")
    lex.whitespace_split = True
    toks = list(lex)
    cmds, cur = [], []
    k = 0
    while k < len(toks):
        t = toks[k]
        if t and set(t) <= set("();|&"):
            cmds.append(cur)
            cur = []
        elif t and set(t) <= set("<>&"):
            if cur and cur[-1].isdigit():
                cur.pop()  # 2>FILE: the 2 is a descriptor
            k += 1  # and the redirection's target
        else:
            cur.append(t)
        k += 1
    cmds.append(cur)
    out = []
    for c in cmds:
        while c and (c[0] in ("sudo", "env", "exec", "time", "nohup") or re.match(r"^[A-Za-z_]\w*=", c[0])):
            c = c[1:]
        if c:
            out.append(c)
    return out


def expand(args):
    """Each reading of args with 'a|b' taken as a and as b (upper-case
    placeholders such as KEY|HASH stay whole)."""
    outs = [[]]
    for a in args:
        a = a.replace("[", "").replace("]", "")
        if a.endswith("...") and a != "...":
            a = a[:-3]  # -v... : repeatable
        if not a or a == "...":
            continue
        alts = a.split("|") if ("|" in a and not PLACEHOLDER.match(a)) else [a]
        outs = [o + [x] for o in outs for x in alts if x]
    return outs


def check_command(progs, words, where, whole, counts, seen):
    prog = os.path.basename(words[0])
    if prog not in PROGS:
        return
    counts[prog] += 1
    for args in expand(words[1:]):
        why = progs[prog].check(args, whole)
        if why and (where, why) not in seen:
            seen.add((where, why))
            fail(where, f"`{' '.join(words)}`: {why}")


def check_shell_block(progs, b, counts, seen):
    if (b.mark or "").startswith("skip"):
        counts["skipped"] += 1
        return
    if b.mark:
        fail(f"{b.path}:{b.mark_line}", f"marker '{b.mark}' on a shell block (only skip: REASON)")
    k = 0
    while k < len(b.lines):
        start = k
        line = b.lines[k]
        while line.endswith("\\") and k + 1 < len(b.lines):
            k += 1
            line = line[:-1] + " " + b.lines[k]
        k += 1
        if b.lang == "console":
            m = re.match(r"^\s*[$#]\s+(.*)$", line)
            if not m:
                continue  # output
            line = m.group(1)
        try:
            cmds = simple_commands(line)
        except ValueError as e:
            if re.search(r"\bxrl(ctl|d)\b", line):
                fail(f"{b.path}:{b.start + start}", f"can't read the shell line ({e}): {line.strip()}")
            continue
        for c in cmds:
            check_command(progs, c, f"{b.path}:{b.start + start}", True, counts, seen)


def split_words(text):
    """text's words as a shell splits them, or at spaces when it is not
    quoted whole (an apostrophe in prose)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def check_spans(progs, path, text, counts, seen):
    for line, c in code_spans(text):
        if not re.match(r"^(sudo\s+)?(\S*/)?(xrlctl|xrld)\s+\S", c):
            continue
        # one command in synopsis notation: a '|' is an alternative, not a pipe
        words = split_words(c)
        while words and words[0] == "sudo":
            words = words[1:]
        check_command(progs, words, f"{path}:{line}", False, counts, seen)


# ---- manual pages ---------------------------------------------------------

ROFF_ESC = [("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\(em", "-"), ("\\(en", "-"),
            ("\\e", "\\"), ("\\&", ""), ("\\ ", " "), ("\\|", ""), ("\\^", ""), ("\\%", "")]
ALTERNATING = {"BR": "BR", "RB": "RB", "IR": "IR", "RI": "RI", "BI": "BI", "IB": "IB"}


def roff_args(rest):
    """A request's arguments: words, or "quoted" with "" for a quote."""
    out, k = [], 0
    while k < len(rest):
        if rest[k] in " \t":
            k += 1
            continue
        if rest[k] == '"':
            j, a = k + 1, ""
            while j < len(rest):
                if rest[j] == '"':
                    if rest[j + 1:j + 2] == '"':
                        a += '"'
                        j += 2
                        continue
                    break
                a += rest[j]
                j += 1
            out.append(a)
            k = j + 1
        else:
            j = k
            while j < len(rest) and rest[j] not in " \t":
                j += 2 if rest[j] == "\\" else 1
            out.append(rest[k:j])
            k = j
    return out


def roff_segments(text, font="R"):
    """(text, font) runs of roff text, \\f escapes followed."""
    segs = []
    for part in re.split(r"(\\f(?:\(..|\[[^]]*\]|.))", text):
        m = re.match(r"\\f(?:\((..)|\[([^]]*)\]|(.))", part)
        if m:
            f = (m.group(1) or m.group(2) or m.group(3) or "R")[0]
            font = "R" if f in "RP" else f
            continue
        for a, b in ROFF_ESC:
            part = part.replace(a, b)
        if part:
            segs.append((part, font))
    return segs


def roff_line(line):
    """A line of a page as (text, font) runs; None for a request that
    writes no text."""
    if not line.startswith((".", "'")):
        return roff_segments(line)
    m = re.match(r"^[.'](\S+)\s*(.*)$", line)
    if not m:
        return None
    req, rest = m.group(1), m.group(2)
    if req in ("B", "I"):
        return roff_segments(rest.replace('"', ""), req)
    if req in ALTERNATING:
        fonts = ALTERNATING[req]
        segs = []
        for k, a in enumerate(roff_args(rest)):
            segs += roff_segments(a, fonts[k % 2])
        return segs
    if req == "OP":
        a = roff_args(rest)
        return [("[", "R")] + roff_segments(a[0], "B") + \
            ([(" ", "R")] + roff_segments(" ".join(a[1:]), "I") if len(a) > 1 else []) + [("]", "R")]
    return None


def plain(segs, mark_italic):
    """The text of runs; italic words as <word> (a placeholder) when asked."""
    out = ""
    for t, f in segs:
        if f == "I" and mark_italic:
            t = re.sub(r"[^\s\[\]|.]+", lambda m: f"<{m.group(0)}>", t)
        out += t
    return out


def policy_keys(xrld, tmpdir):
    """The top-level keys of a policy, as xrld --check lists them when it
    is given something else."""
    ok, p, _ = run_check(xrld, "- x\n", tmpdir, "top-level-keys")
    m = re.search(r"expected a mapping \(([^)]*)\)", p.stderr)
    if ok or not m:
        sys.exit(f"docs: can't learn the policy's top-level keys from xrld --check: {p.stderr.strip()}")
    return {k.strip() for k in m.group(1).split(",")}


def read_roff(path, top_keys):
    """A manual page's examples (.EX/.EE) and synopses (.nf/.fi, .SY/.YS)
    as blocks, and the bold runs of its prose that start with xrlctl or
    xrld as (line, text) mentions."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, mentions = [], []
    k = 0
    mark = None
    while k < len(lines):
        ln = lines[k]
        mk = re.match(r'^\.\\"\s*xrl-check:\s*(.*?)\s*$', ln)
        if mk:
            mark = (mk.group(1), k + 1)
            k += 1
            continue
        end = {".EX": ".EE", ".nf": ".fi", ".SY": ".YS"}.get(ln.split(" ")[0])
        if end:
            kind = ln.split(" ")[0]
            j = k + 1
            body = []
            if kind == ".SY":
                body = [ln.split(" ", 1)[1] if " " in ln else ""]
            while j < len(lines) and lines[j].split(" ")[0] != end:
                segs = roff_line(lines[j])
                body.append(plain(segs, kind != ".EX") if segs is not None else "")
                j += 1
            if kind == ".SY":
                body = [" ".join(t.strip() for t in body if t.strip())]
            text = [t for t in body if t.strip()]
            # a page's example is a policy when it starts with a policy's key
            first = re.match(r"^([a-z_]+):(\s|$)", text[0]) if text else None
            looks_yaml = bool(first and first.group(1) in top_keys) or \
                bool(mark and mark[0].startswith(("fragment", "error")))
            lang = "yaml" if looks_yaml else ("sh" if kind == ".EX" else "synopsis")
            m_text, m_line = mark or (None, None)
            blocks.append(Block(path, k + 2 if kind != ".SY" else k + 1, lang, body, m_text, m_line))
            mark = None
            k = j + 1
            continue
        mark = None
        segs = roff_line(ln) or []
        bold = ""
        for t, f in segs + [("", "R")]:
            if f == "B":
                bold += t
                continue
            if re.match(r"^(xrlctl|xrld)\s+\S", bold.strip()):
                mentions.append((k + 1, bold.strip()))
            bold = ""
        k += 1
    return blocks, mentions


def check_synopsis_block(progs, b, counts, seen):
    """Synopsis lines (.nf, .SY): one command each in synopsis notation."""
    for n, line in enumerate(b.lines):
        line = re.sub(r"\s*\|\s*", "|", line.strip())  # native | skb: native|skb
        if not re.match(r"^(xrlctl|xrld)(\s|$)", line):
            continue
        check_command(progs, split_words(line), f"{b.path}:{b.start + n}", True, counts, seen)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--xrld", required=True)
    ap.add_argument("--xrlctl", required=True)
    ap.add_argument("files", nargs="+")
    o = ap.parse_args()
    progs = {"xrlctl": Xrlctl(o.xrlctl), "xrld": Xrld(o.xrld)}
    counts = dict(whole=0, fragments=0, errors=0, skipped=0, examples=0, xrlctl=0, xrld=0)
    seen = set()
    with tempfile.TemporaryDirectory(prefix="xrl-docs.") as tmpdir:
        top_keys = None
        for path in o.files:
            if path.endswith((".yaml", ".yml")):
                counts["examples"] += 1
                text = open(path, encoding="utf-8").read()
                b = Block(path, 1, "yaml", text.split("\n"), None, None)
                ok, p, tmp = run_check(o.xrld, text, tmpdir, "example-" + os.path.basename(path))
                raw = (p.stderr or p.stdout).strip()
                at, said = where_in_doc(raw, tmp, b, 0, 0)
                if not ok:
                    fail(at or path, f"xrld --check refuses the example: {said}")
                elif p.returncode != 0:
                    notes.append(f"{path}: valid; xrld --check adds about this host: {raw}")
                continue
            if re.search(r"\.\d$", path):
                top_keys = top_keys or policy_keys(o.xrld, tmpdir)
                blocks, mentions = read_roff(path, top_keys)
                for k, b in enumerate(blocks):
                    if b.lang == "yaml":
                        check_yaml(o.xrld, b, blocks[k + 1] if k + 1 < len(blocks) else None, tmpdir, counts)
                    elif b.lang == "sh":
                        check_shell_block(progs, b, counts, seen)
                    else:
                        check_synopsis_block(progs, b, counts, seen)
                for line, c in mentions:
                    check_command(progs, c.split(), f"{path}:{line}", False, counts, seen)
                continue
            blocks, prose = read_markdown(path)
            for k, b in enumerate(blocks):
                if b.lang in YAML_LANGS:
                    check_yaml(o.xrld, b, blocks[k + 1] if k + 1 < len(blocks) else None, tmpdir, counts)
                elif b.lang in SHELL_LANGS:
                    check_shell_block(progs, b, counts, seen)
                elif b.mark:
                    fail(f"{b.path}:{b.mark_line}", f"marker '{b.mark}' on a block that is neither yaml nor shell")
            check_spans(progs, path, prose, counts, seen)
    for n in notes:
        print(f"  note {n}")
    for f in failures:
        print(f"  FAIL {f}")
    c = counts
    print(f"docs: YAML: {c['whole']} whole, {c['fragments']} fragment, {c['errors']} deliberate "
          f"error, {c['examples']} example file, {c['skipped']} skipped; command lines: "
          f"{c['xrlctl']} xrlctl, {c['xrld']} xrld; "
          + (f"{len(failures)} failed" if failures else "all pass"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
