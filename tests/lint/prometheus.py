#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""prometheus.py - checks of the alerting rules and the Grafana dashboard
that need no xrld (tests/lint/prometheus.sh runs `check`), and what the
end-to-end test asks of them against a running one (`exprs`, `names`).

  check      promtool check rules on the rules file; promtool test rules on
             its tests (run on a copy whose annotations are replaced by the
             labels they name: promtool compares annotations whole, so the
             tests say only that those labels are there); every alert has a
             severity, a summary, a description that names docs/operations.md
             and a runbook anchor that is a heading there; every alert is
             tested firing and not firing; docs/operations.md's alert table
             names exactly the file's alerts; the dashboard is JSON Grafana
             imports (schemaVersion, a datasource variable, ids, gridPos) and
             every query in it parses (promtool check rules on each, wrapped
             in a recording rule); every metric a rule or a query names is a
             family xrld writes (its source, user/xrld and user/http).
  exprs      a JSON list of [where, expr]: each rule's and each dashboard
             query's expression, Grafana's variables replaced, for
             Prometheus's query API.
  names      the metric names the rules and the dashboard use, one a line.

Exit: 0 when every check passed, 1 if not, 77 when promtool is missing.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RULES = "scripts/prometheus/xrl.rules.yml"
RULES_TEST = "tests/prometheus/xrl.rules.test.yml"
DASHBOARD = "scripts/grafana/xrl.json"
RUNBOOK = "docs/operations.md"
SEVERITIES = ("critical", "warning", "info")
MIN_SCHEMA = 36  # Grafana 9.4; 39 is Grafana 10.4 and 11.0

# Grafana's own variables, as a query would see them; the dashboard's are
# regexes matched with =~, so ".*" stands for "All"
GRAFANA_VARS = {
    "__rate_interval": "1m",
    "__interval": "30s",
    "__range": "1h",
    "__range_s": "3600",
}

fails = 0


def ok(what):
    print("  ok   " + what)


def fail(what):
    global fails
    fails += 1
    print("  FAIL " + what)


def check(cond, what):
    (ok if cond else fail)(what)
    return cond


def load_rules():
    with open(os.path.join(TOP, RULES)) as f:
        return yaml.safe_load(f)


def alerts(rules):
    return [r for g in rules["groups"] for r in g["rules"] if "alert" in r]


def load_dashboard():
    with open(os.path.join(TOP, DASHBOARD)) as f:
        return json.load(f)


def grafana_subst(expr):
    """Grafana's variables replaced: its own by durations, the dashboard's
    ($job, ${instance}, ${interface:regex}) by ".*"."""
    def one(m):
        name = m.group(1) or m.group(2)
        return GRAFANA_VARS.get(name, ".*")
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", one, expr)


def dashboard_queries(d):
    """[where, expr] for every target of every panel (rows' panels too) and
    every query variable (label_values(SELECTOR, label): its selector)."""
    out = []

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(d.get("panels", [])):
        for t in p.get("targets", []):
            if t.get("expr"):
                out.append(["panel %r %s" % (p.get("title"), t.get("refId")), t["expr"]])
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q, re.S)
        if m:
            out.append(["variable %s" % v["name"], m.group(1)])
        elif q.strip():
            out.append(["variable %s" % v["name"], q])
    return out


def all_exprs():
    out = [["alert %s" % r["alert"], r["expr"]] for r in alerts(load_rules())]
    out += [[w, grafana_subst(e)] for w, e in dashboard_queries(load_dashboard())]
    return out


KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "bool", "offset", "inf", "nan"}


def metric_names(expr):
    """The metric names an expression selects. PromQL without a parser: strings,
    label matchers, ranges and grouping lists taken out, function names (an
    identifier before "(") and keywords skipped; what is left names series."""
    e = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', '""', expr)
    e = re.sub(r"\{[^}]*\}", "{}", e)
    e = re.sub(r"\[[^\]]*\]", "[]", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", e):
        w = m.group(1)
        if m.group(2) or w.lower() in KEYWORDS or re.fullmatch(r"\d+\w*", w):
            continue
        names.add(w)
    return names


def source_families():
    """Every family name xrld's metric writers hold as a string literal (process_*
    included, written by user/lib/procstat.c)."""
    fams = set()
    files = glob.glob(os.path.join(TOP, "user/xrld/*.c"))
    files += glob.glob(os.path.join(TOP, "user/http/**/*.c"), recursive=True)
    files.append(os.path.join(TOP, "user/lib/procstat.c"))  # the client libraries' process_*
    for fn in files:
        with open(fn) as f:
            for line in f:
                if line.lstrip().startswith("#"):
                    continue
                fams.update(re.findall(r'"((?:xrl|process)_[a-z0-9_]*[a-z0-9])[{" ]', line))
    return fams


def exported(name, fams):
    if name in fams:
        return True
    for suf in ("_bucket", "_sum", "_count"):
        if name.endswith(suf) and name[: -len(suf)] in fams:
            return True
    return False


def slug(heading):
    """A heading's anchor, as GitHub makes it."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def runbook_anchors():
    with open(os.path.join(TOP, RUNBOOK)) as f:
        return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", f.read(), re.M)}


def runbook_alert_table():
    """The alert names in the first column of the table under "### Alerts"."""
    with open(os.path.join(TOP, RUNBOOK)) as f:
        text = f.read()
    m = re.search(r"^### Alerts\n(.*?)(?=^#)", text, re.M | re.S)
    if not m:
        return None
    return re.findall(r"^\| `(Xrl\w+)` \|", m.group(1), re.M)


def promtool(*args):
    r = subprocess.run(["promtool", *args], capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def check_rules(tmp):
    print("rules: " + RULES)
    rc, out = promtool("check", "rules", os.path.join(TOP, RULES))
    check(rc == 0, "promtool check rules %s" % RULES) or print(out)

    rules = load_rules()
    al = alerts(rules)
    names = [r["alert"] for r in al]
    check(len(names) == len(set(names)), "%d alerts, no name twice" % len(names))
    anchors = runbook_anchors()
    for r in al:
        n, lab, ann = r["alert"], r.get("labels", {}), r.get("annotations", {})
        check(lab.get("severity") in SEVERITIES,
              "%s: severity %r is one of %s" % (n, lab.get("severity"), "/".join(SEVERITIES)))
        check(bool(ann.get("summary")), "%s: has a summary" % n)
        check(RUNBOOK in ann.get("description", ""), "%s: its description names %s" % (n, RUNBOOK))
        rb = ann.get("runbook", "")
        a = rb.split("#", 1)[1] if rb.startswith(RUNBOOK + "#") else None
        check(a in anchors, "%s: runbook %r is a heading of %s" % (n, rb, RUNBOOK))

    # The tests, on a copy whose annotations are one line of the labels the
    # real ones name ({{ $labels.rule }}...): each firing case then says
    # that every label an annotation uses is on the alert (a missing one
    # would read "<no value>").
    refs = {}
    for r in al:
        text = " ".join(str(v) for v in r.pop("annotations", {}).values())
        refs[r["alert"]] = sorted(set(re.findall(r"\$labels\.(\w+)", text)))
        if refs[r["alert"]]:
            r["annotations"] = {"labels": " ".join("{{ $labels.%s }}" % n for n in refs[r["alert"]])}
    with open(os.path.join(tmp, os.path.basename(RULES)), "w") as f:
        yaml.safe_dump(rules, f, sort_keys=False)
    with open(os.path.join(TOP, RULES_TEST)) as f:
        tests = yaml.safe_load(f)
    with open(os.path.join(TOP, RULES_TEST)) as f:
        labelled = yaml.safe_load(f)
    for t in labelled.get("tests", []):
        for a in t.get("alert_rule_test", []):
            for e in a.get("exp_alerts") or []:
                if refs.get(a["alertname"]):
                    lab = e.get("exp_labels", {})
                    e["exp_annotations"] = {"labels": " ".join(
                        str(lab.get(n, "(no label %s)" % n)) for n in refs[a["alertname"]])}
    with open(os.path.join(tmp, os.path.basename(RULES_TEST)), "w") as f:
        yaml.safe_dump(labelled, f, sort_keys=False)
    rc, out = promtool("test", "rules", os.path.join(tmp, os.path.basename(RULES_TEST)))
    check(rc == 0, "promtool test rules %s (and the labels the annotations name)" % RULES_TEST) or \
        print(out)

    firing, quiet = set(), set()
    for t in tests.get("tests", []):
        for a in t.get("alert_rule_test", []):
            (firing if a.get("exp_alerts") else quiet).add(a["alertname"])
    for n in names:
        check(n in firing and n in quiet, "%s: tested firing and not firing" % n)
    for n in sorted((firing | quiet) - set(names)):
        fail("%s: tested, but no such alert" % n)

    table = runbook_alert_table()
    if check(table is not None, "%s has an \"### Alerts\" table" % RUNBOOK):
        check(sorted(table) == sorted(names),
              "%s's alert table names the rules file's %d alerts" % (RUNBOOK, len(names))) or \
            print("    only in the doc: %s\n    only in the file: %s" % (
                sorted(set(table) - set(names)), sorted(set(names) - set(table))))


def check_dashboard(tmp):
    print("dashboard: " + DASHBOARD)
    try:
        d = load_dashboard()
    except ValueError as e:
        fail("%s is JSON: %s" % (DASHBOARD, e))
        return
    check(isinstance(d.get("schemaVersion"), int) and d["schemaVersion"] >= MIN_SCHEMA,
          "schemaVersion %r >= %d" % (d.get("schemaVersion"), MIN_SCHEMA))
    check(bool(d.get("title")) and bool(d.get("uid")), "has a title and a uid")
    tv = d.get("templating", {}).get("list", [])
    dsv = [v["name"] for v in tv if v.get("type") == "datasource" and v.get("query") == "prometheus"]
    check(len(dsv) == 1, "one Prometheus datasource variable (%s)" % ", ".join(dsv))
    want_ds = "${%s}" % dsv[0] if dsv else None
    ids, bad_ds, bad_grid = [], [], []
    for p in d.get("panels", []):
        ids.append(p.get("id"))
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24:
            bad_grid.append(p.get("title"))
        if p.get("type") == "row":
            continue
        for t in [p] + p.get("targets", []):
            if (t.get("datasource") or {}).get("uid") != want_ds:
                bad_ds.append(p.get("title"))
    check(len(ids) == len(set(ids)) and None not in ids, "%d panels, each its own id" % len(ids))
    check(not bad_grid, "every panel has a gridPos within 24 columns %s" % (bad_grid or ""))
    check(not bad_ds, "every panel and query uses %s %s" % (want_ds, sorted(set(bad_ds)) or ""))

    qs = dashboard_queries(d)
    rec = {"groups": [{"name": "dashboard", "rules": [
        {"record": "xrl_dashboard:q%d" % i, "expr": grafana_subst(e)} for i, (_, e) in enumerate(qs)]}]}
    fn = os.path.join(tmp, "dashboard.rules.yml")
    with open(fn, "w") as f:
        yaml.safe_dump(rec, f, sort_keys=False)
    rc, out = promtool("check", "rules", fn)
    if not check(rc == 0, "every one of the %d queries parses (promtool check rules)" % len(qs)):
        print(out)
        for i, (w, e) in enumerate(qs):
            print("    q%d %s: %s" % (i, w, e))
    titles = [p.get("title", "") for p in d.get("panels", [])]
    for what in ("Packet tier", "Identity tier", "Fleet and penalties"):
        check(what in titles, "a row %r" % what)


def check_names():
    print("metric names")
    fams = source_families()
    check(len(fams) >= 60, "%d families found in xrld's source" % len(fams))
    for w, e in all_exprs():
        for n in sorted(metric_names(e)):
            if not exported(n, fams):
                fail("%s: %s is no family xrld exports" % (w, n))
    used = {n for _, e in all_exprs() for n in metric_names(e)}
    ok("%d metric names used, all exported" % len(used)) if not fails else None


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    if cmd == "exprs":
        json.dump(all_exprs(), sys.stdout, indent=1)
        print()
        return 0
    if cmd == "names":
        for n in sorted({n for _, e in all_exprs() for n in metric_names(e)}):
            print(n)
        return 0
    if cmd != "check":
        print("usage: prometheus.py [check|exprs|names]", file=sys.stderr)
        return 2
    if not shutil.which("promtool"):
        print("promtool is missing (Debian's prometheus package: scripts/install-deps.sh)")
        return 77
    with tempfile.TemporaryDirectory(prefix="xrl-prom.") as tmp:
        check_rules(tmp)
        check_dashboard(tmp)
    check_names()
    print("prometheus: %s" % ("%d check(s) failed" % fails if fails else "all checks passed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
