#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""report.py - tables, plot data and the verdict of scripts/bench/flood.sh.

    report.py --results R.tsv --accuracy A.tsv --sources S.tsv --memory TEXT
              --generator NAME --kernel K --limits RMAX EMAX PMAX --out DIR
        writes DIR/table.md and DIR/<defence>.dat (for flood.gp), prints the
        summary whose last line is
            xrl_vs_nft_cost=R legit_error_pct=E legit_p99_ratio=P
        and exits 0 if R <= RMAX, E <= EMAX and P <= PMAX, else 1 (saying why).
        With the spoofed-source scenario's rows (defences sp_*) in R.tsv, a
        section of its own (DIR/spoofed.md) and a last line
            spoofed_capacity_vs_kernel=X spoofed_cost_vs_nft_synproxy=Y legit_error_pct=E2
        judged by --spoofed-limits XMIN YMAX E2MAX (X >= XMIN, Y <= YMAX,
        E2 <= E2MAX); --spoofed-cost C.tsv holds its alternating rounds.

    report.py --update-docs docs/benchmarks.md --out DIR
        replaces what lies between the markers <!-- flood-table:begin -->
        and <!-- flood-table:end --> in that file with DIR/table.md, and
        between <!-- flood-spoofed:begin --> and <!-- flood-spoofed:end -->
        with DIR/spoofed.md (each only if the run wrote it: DEFENCES=""
        runs the spoofed-source scenario alone); nothing else is touched.
"""
import argparse
import csv
import datetime
import math
import os
import sys

BEGIN = "<!-- flood-table:begin -->"
END = "<!-- flood-table:end -->"
SP_BEGIN = "<!-- flood-spoofed:begin -->"
SP_END = "<!-- flood-spoofed:end -->"
NAMES = {"floor": "floor: bare XDP_DROP (the lab's NIC)", "none": "none (SYN cookies)", "nft": "nftables", "iptables": "iptables hashlimit", "xrl": "xrl",
         "sp_none": "none (kernel SYN cookies)", "sp_nft": "nftables synproxy", "sp_ipt": "iptables SYNPROXY",
         "sp_xrl": "xrl, syn_cookies: on"}
SPOOFED = ("sp_none", "sp_nft", "sp_ipt", "sp_xrl")


def med(v):
    v = sorted(v)
    m = len(v)
    return float("nan") if not m else v[m // 2] if m % 2 else (v[m // 2 - 1] + v[m // 2]) / 2


def rows(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def kpps(p):
    return "%.0fk" % (p / 1000.0) if p < 1e6 else "%.2fM" % (p / 1e6)


def step_name(s):
    return "max" if s == "0" else kpps(f(s))


def step_table(L, defences, steps, ns_col, control_col):
    """Every step of each defence, a row each, onto L: ns_col and control_col
    name the receive cost's and the verdict's columns; the floor (no
    listener) has no clients."""
    L.append("| defence | step | offered pps | received pps | ring drops | kthread busy | others | %s | "
             "client errors | p50 ms | p99 ms | %s |" % (ns_col, control_col))
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for d in defences:
        for r in steps[d]:
            c = r["control"]
            c = "yes" if c == "yes" else "no: " + c[3:].replace(";", "; ")
            cl = ("%s/%s" % (r["legit_err"], r["legit_req"]), r["p50_ms"], r["p99_ms"])
            if d == "floor":
                cl = ("-", "-", "-")
            L.append("| %s | %s | %s | %s | %s %% | %s %% | %s %% | %s | %s | %s | %s | %s |" % (
                d, step_name(r["step"]), r["gen_pps"], r["rx_pps"], r["ring_drop_pct"],
                r["busy_pct"], r["others_pct"], r["ns_per_pkt"], cl[0], cl[1], cl[2], c))


def update_docs(doc, out):
    """Each block whose table the run wrote (table.md: the step floods,
    spoofed.md: the spoofed-source scenario) is replaced; the other stays."""
    with open(doc) as d:
        text = d.read()
    for name, begin, end in (("table.md", BEGIN, END), ("spoofed.md", SP_BEGIN, SP_END)):
        if not os.path.exists(os.path.join(out, name)):
            continue
        with open(os.path.join(out, name)) as t:
            table = t.read().rstrip("\n")
        if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
            sys.stderr.write("report.py: %s needs exactly one %s ... %s block\n" % (doc, begin, end))
            return 2
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + begin + "\n" + table + "\n" + end + tail
    with open(doc + ".tmp", "w") as d:
        d.write(text)
    os.replace(doc + ".tmp", doc)
    return 0


def spoofed(L, a, steps, idle, carried, why):
    """The spoofed-source section of table.md; returns its verdict line."""
    xmin, ymax, emax = a.spoofed_limits
    order = [d for d in SPOOFED if d in steps]
    cost = rows(a.spoofed_cost)
    rounds = sorted(set(r["round"] for r in cost), key=int)
    by = {rd: {r["defence"]: r for r in cost if r["round"] == rd} for rd in rounds}
    ns = {d: med([f(by[rd][d]["ns_per_pkt"]) for rd in rounds if d in by[rd]]) for d in order}

    def cap(d):
        # paced steps only: flat out, the generator's bursts fill the ring and
        # whether a client's SYN is among the frames lost is luck (the kernel
        # once passed flat out at 202k after failing at 200k paced)
        ok = [r for r in steps[d] if r["control"] == "yes" and r["step"] != "0"]
        return max(ok, key=lambda r: f(r["rx_pps"])) if ok else None

    L.append("### Spoofed sources: every SYN from a new address")
    L.append("")
    L.append("Last run: %s, `%s`, kernel `%s`, %d CPUs (`lscpu`: %s), generator `%s`; other tasks kept the "
             "CPUs %s %% busy before the run." % (datetime.date.today().isoformat(), a.command, a.kernel,
                                                   os.cpu_count() or 0, a.cpu, a.generator, a.load))
    L.append("")
    L.append("SYNs to port 80 from random sources of 11.0.0.0/8, against four defences that answer every one "
             "with a cookie SYN-ACK (dropped by the lab's wire); the same clients%s. Capacity: the highest "
             "paced step (not the flat-out one, max) received while the clients lost <= 0.1 %% with a p99 <= 2x "
             "their idle p99 (the median of %s idle runs). Receive ns per spoofed SYN: the median of the "
             "alternating rounds below (flat out, no clients)." % (
                 ", over their own veth into the front end (the same defence, receive CPU and listener)"
                 if a.side else "", a.idle_runs))
    L.append("")
    L.append("| defence | spoofed capacity | receive ns per spoofed SYN | kthread busy there | "
             "clients idle: p99 | clients, heaviest flood: errors, p99 |")
    L.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for d in order:
        c, h, i = cap(d), steps[d][-1] if steps[d] else None, idle.get(d)
        cs = "below %s pps" % kpps(f(steps[d][0]["gen_pps"])) if not c and steps[d] else "-"
        if c:
            cs = kpps(f(c["rx_pps"])) + " pps (step %s)" % step_name(c["step"])
        L.append("| %s | %s | %s | %s | %s ms | %s |" % (
            NAMES[d], cs, "%.0f" % ns[d] if not math.isnan(ns[d]) else "-", "%s %%" % c["busy_pct"] if c else "-",
            i["p99_ms"] if i else "-", "%s %%, %s ms" % (h["legit_err_pct"], h["p99_ms"]) if h else "-"))
    L.append("")
    step_table(L, order, steps, "ns/SYN", "clients kept")
    if rounds:
        L.append("")
        L.append("Rounds (ns per spoofed SYN, frames received per second, others on the receive CPU):")
        L.append("")
        L.append("| round | " + " | ".join(NAMES[d] for d in order) + " | xrl / nftables synproxy |")
        L.append("| ---: |" + " ---: |" * (len(order) + 1))
        for rd in rounds:
            b = by[rd]
            cells = ["%s (%s, %s %%)" % (b[d]["ns_per_pkt"], kpps(f(b[d]["rx_pps"])), b[d]["others_pct"])
                     if d in b else "-" for d in order]
            ratio = "-"
            if "sp_xrl" in b and "sp_nft" in b and f(b["sp_nft"]["ns_per_pkt"]) > 0:
                ratio = "%.2f" % (f(b["sp_xrl"]["ns_per_pkt"]) / f(b["sp_nft"]["ns_per_pkt"]))
            L.append("| %s | %s | %s |" % (rd, " | ".join(cells), ratio))
    if a.spoofed_xrl:
        L.append("")
        L.append("xrl's counters after its steps: `%s`." % a.spoofed_xrl)

    X = Y = E = float("nan")
    cx, cn = (cap("sp_xrl") if "sp_xrl" in steps else None), (cap("sp_none") if "sp_none" in steps else None)
    if cx and cn and f(cn["rx_pps"]) > 0:
        X = f(cx["rx_pps"]) / f(cn["rx_pps"])
    ratios = [f(by[rd]["sp_xrl"]["ns_per_pkt"]) / f(by[rd]["sp_nft"]["ns_per_pkt"]) for rd in rounds
              if "sp_xrl" in by[rd] and "sp_nft" in by[rd] and f(by[rd]["sp_nft"]["ns_per_pkt"]) > 0]
    Y = med(ratios)
    elig = [r for r in steps.get("sp_xrl", []) if carried is None or r["step"] in carried]
    worst = max(elig, key=lambda r: f(r["legit_err_pct"])) if elig else None
    if worst:
        E = f(worst["legit_err_pct"])
    L.append("")
    L.append("X = xrl's spoofed capacity / the kernel's alone (paced steps); Y = the median of the rounds' xrl / nftables "
             "synproxy; E2 = the clients' errors with xrl, worst step%s." %
             (" the floor carried" if carried is not None else ""))
    if not X >= xmin:
        why.append("xrl's spoofed capacity is %.2fx the kernel's alone (%s vs %s pps); required >= %.0fx" % (
            X, cx["rx_pps"] if cx else "-", cn["rx_pps"] if cn else "-", xmin))
    if not Y <= ymax:
        why.append("xrl's receive cost per spoofed SYN is %.2f of nftables synproxy's; required <= %.2f" % (Y, ymax))
    if not E <= emax:
        why.append("legitimate clients lost %.2f %% of requests under the spoofed flood with xrl (step %s: %s); "
                   "required <= %.2f %%" % (E, step_name(worst["step"]) if worst else "?",
                                            worst["legit_detail"] if worst else "no sp_xrl run", emax))
    return "spoofed_capacity_vs_kernel=%.2f spoofed_cost_vs_nft_synproxy=%.2f legit_error_pct=%.2f" % (X, Y, E)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results")
    ap.add_argument("--accuracy")
    ap.add_argument("--sources")
    ap.add_argument("--cost")
    ap.add_argument("--memory", default="")
    ap.add_argument("--generator", default="?")
    ap.add_argument("--kernel", default="?")
    ap.add_argument("--limits", nargs=3, type=float, default=[0.5, 0.1, 2.0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--spoofed-cost")
    ap.add_argument("--spoofed-xrl", default="")
    ap.add_argument("--spoofed-limits", nargs=3, type=float, default=[5.0, 0.5, 0.1])
    ap.add_argument("--cpu", default="?")
    ap.add_argument("--load", default="?")
    ap.add_argument("--update-docs")
    ap.add_argument("--command", default="sudo scripts/bench/flood.sh --docs")
    ap.add_argument("--side", type=int, default=0)
    ap.add_argument("--idle-runs", default="1")
    a = ap.parse_args()
    if a.update_docs:
        return update_docs(a.update_docs, a.out)

    allres = rows(a.results)
    alld = []
    for r in allres:
        if r["defence"] not in alld:
            alld.append(r["defence"])
    steps = {d: [r for r in allres if r["defence"] == d and r["step"] != "idle"] for d in alld}
    idle = {d: next((r for r in allres if r["defence"] == d and r["step"] == "idle"), None) for d in alld}
    # the spoofed-source scenario has a section of its own
    defences = [d for d in alld if d not in SPOOFED]
    res = [r for r in allres if r["defence"] in defences]

    # plot data: one file per defence, the steps in order
    for d in alld:
        with open(os.path.join(a.out, d + ".dat"), "w") as o:
            o.write("# gen_pps rx_pps busy_pct ns_per_pkt legit_err_pct p50_ms p99_ms\n")
            for r in steps[d]:
                o.write("%s %s %s %s %s %s %s\n" % (r["gen_pps"], r["rx_pps"], r["busy_pct"], r["ns_per_pkt"],
                                                    r["legit_err_pct"], r["p50_ms"], r["p99_ms"]))

    def heaviest(d):
        return steps[d][-1] if steps[d] else None

    def absorbed(d):
        ok = [r for r in steps[d] if r["control"] == "yes"]
        if not ok:
            return "below %s pps" % kpps(f(steps[d][0]["gen_pps"])) if steps[d] else "-"
        best = max(ok, key=lambda r: f(r["rx_pps"]))
        s = kpps(f(best["rx_pps"])) + " pps"
        if best is steps[d][-1] and best["step"] == "0":
            s = ">= " + s + " (all the generator sent)"
        return s

    L = []
    date = datetime.date.today().isoformat()
    L.append("Last run: %s, `sudo scripts/bench/flood.sh --docs`, kernel `%s`, %d CPUs (`lscpu`: %s), generator "
             "`%s`; other tasks kept the CPUs %s %% busy before the run."
             % (date, a.kernel, os.cpu_count() or 0, a.cpu, a.generator, a.load))
    L.append("")
    L.append("| defence | receive ns/packet (heaviest step) | kthread busy | highest flood kept under control | "
             "clients idle: errors, p50, p99 | clients, heaviest flood: errors, p50, p99 |")
    L.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for d in defences:
        h, i = heaviest(d), idle[d]
        if not h:
            continue
        if d == "floor":
            L.append("| %s | %s | %s %% | %s | - | - |" % (NAMES[d], h["ns_per_pkt"], h["busy_pct"], absorbed(d)))
            continue
        L.append("| %s | %s | %s %% | %s | %s %%, %s ms, %s ms | %s %%, %s ms, %s ms |" % (
            NAMES.get(d, d), h["ns_per_pkt"], h["busy_pct"], absorbed(d),
            i["legit_err_pct"], i["p50_ms"], i["p99_ms"], h["legit_err_pct"], h["p50_ms"], h["p99_ms"]))
    # receive cost side by side, per step
    order = [d for d in ("floor", "none", "nft", "iptables", "xrl") if d in steps]
    allsteps = []
    for d in order:
        for r in steps[d]:
            if r["step"] not in allsteps:
                allsteps.append(r["step"])
    allsteps.sort(key=lambda x: float("inf") if x == "0" else f(x))
    cell = {(r["defence"], r["step"]): r for r in res if r["step"] != "idle"}
    L.append("")
    L.append("Receive CPU per packet (ns, the NAPI kthread's run time over the frames its XDP program saw) "
             "by flood rate:")
    L.append("")
    L.append("| flood | " + " | ".join(NAMES.get(d, d).split(":")[0] for d in order) +
             (" | xrl / nftables |" if "xrl" in order and "nft" in order else " |"))
    L.append("| --- |" + " ---: |" * len(order) + (" ---: |" if "xrl" in order and "nft" in order else ""))
    for st in allsteps:
        row = "| %s |" % step_name(st)
        for d in order:
            c = cell.get((d, st))
            row += " %s |" % (c["ns_per_pkt"] if c else "-")
        if "xrl" in order and "nft" in order:
            x, n = cell.get(("xrl", st)), cell.get(("nft", st))
            row += " %s |" % ("%.2f" % (f(x["ns_per_pkt"]) / f(n["ns_per_pkt"])) if x and n and f(n["ns_per_pkt"]) > 0 else "-")
        L.append(row)
    L.append("")
    L.append("Every step (offered = the generator's rate, taken by the ring or not; received = frames the XDP "
             "program saw, per second, while the CPU was measured; others = CPU time of tasks not ours on the "
             "receive CPU meanwhile):")
    L.append("")
    step_table(L, defences, steps, "ns/packet", "under control")

    acc = rows(a.accuracy)
    if acc:
        L.append("")
        L.append("Admitted SYNs per source (%s sources per run, counted by an nftables set after the defence) "
                 "against burst + rate x t:" % acc[0]["sources"])
        L.append("")
        L.append("| defence | receive CPUs | flood ms | expected per source | admitted per source (min-max) | error |")
        L.append("| --- | --- | ---: | ---: | ---: | ---: |")
        for r in acc:
            L.append("| %s | %s | %s | %s | %s (%s-%s) | %s %% |" % (
                r["defence"], r["cpus"], r["duration_ms"], r["expected_per_source"], r["admitted_per_source"],
                r["min"], r["max"], r["error_pct"]))

    big = rows(a.sources)
    if a.memory or big:
        L.append("")
        if a.memory:
            L.append("Memory: " + a.memory + ".")
            L.append("")
        if big:
            L.append("xrl against floods of distinct spoofed sources (one SYN each, from 11.0.0.0/8; "
                     "bucket table 2^20), with the clients running:")
            L.append("")
            L.append("| sources asked | frames sent | seen by XDP | new buckets | buckets in use | evicted | "
                     "insert failures | passed | dropped | client errors | client p99 ms | client refusals sampled |")
            L.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for r in big:
                L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s/%s | %s | %s |" % (
                    r["sources"], r["sent"], r["seen_by_xdp"], r["bucket_new"], r["buckets_in_use"], r["evicted"],
                    r["insert_fail"], r["passed"], r["dropped"], r["legit_err"], r["legit_req"], r["legit_p99_ms"],
                    r["legit_refused_by_xrl"]))

    # the verdict
    rmax, emax, pmax = a.limits
    why = []
    R = E = P = float("nan")
    worst_e = worst_p = None
    hx, hn = (heaviest("xrl") if "xrl" in steps else None), (heaviest("nft") if "nft" in steps else None)
    cost = rows(a.cost)
    rounds = sorted(set(r["round"] for r in cost), key=int)
    ratios = []
    for rd in rounds:
        by = {r["defence"]: r for r in cost if r["round"] == rd}
        if "xrl" in by and "nft" in by and f(by["nft"]["ns_per_pkt"]) > 0:
            ratios.append((rd, by))
    if ratios:
        R = med([f(b["xrl"]["ns_per_pkt"]) / f(b["nft"]["ns_per_pkt"]) for _, b in ratios])
        net = [(f(b["xrl"]["ns_per_pkt"]) - f(b["floor"]["ns_per_pkt"])) /
               (f(b["nft"]["ns_per_pkt"]) - f(b["floor"]["ns_per_pkt"]))
               for _, b in ratios if "floor" in b and f(b["nft"]["ns_per_pkt"]) > f(b["floor"]["ns_per_pkt"])]
        L.append("")
        L.append("R, measured in rounds of the floor, nftables and xrl back to back (order rotating), the "
                 "generator flat out, no clients; R is the median of the xrl / nftables column. Cells: ns/packet "
                 "(frames received per second, others on the receive CPU):")
        L.append("")
        L.append("| round | floor | nftables | xrl | xrl / nftables | net of the floor |")
        L.append("| ---: | ---: | ---: | ---: | ---: | ---: |")

        def c(b, d):
            if d not in b:
                return "-"
            return "%s (%s, %s %%)" % (b[d]["ns_per_pkt"], kpps(f(b[d]["rx_pps"])), b[d]["others_pct"])
        for rd, b in ratios:
            n = "-"
            if "floor" in b and f(b["nft"]["ns_per_pkt"]) > f(b["floor"]["ns_per_pkt"]):
                n = "%.2f" % ((f(b["xrl"]["ns_per_pkt"]) - f(b["floor"]["ns_per_pkt"])) /
                              (f(b["nft"]["ns_per_pkt"]) - f(b["floor"]["ns_per_pkt"])))
            L.append("| %s | %s | %s | %s | %.2f | %s |" % (rd, c(b, "floor"), c(b, "nft"), c(b, "xrl"),
                                                          f(b["xrl"]["ns_per_pkt"]) / f(b["nft"]["ns_per_pkt"]), n))
        L.append("| median | | | | **%.2f** | %s |" % (R, "%.2f" % med(net) if net else "-"))
    elif hx and hn and f(hn["ns_per_pkt"]) > 0:
        R = f(hx["ns_per_pkt"]) / f(hn["ns_per_pkt"])
    # E and P over the floods the lab's NIC carries: the steps at which the
    # bare XDP_DROP program lost (almost) nothing in the ring; a flood that
    # overflows the ring is lost before any defence can act
    carried = None
    if steps.get("floor"):
        carried = set(r["step"] for r in steps["floor"] if f(r["ring_drop_pct"]) <= 1.0)
    elig = [r for r in steps.get("xrl", []) if carried is None or r["step"] in carried]
    if elig and idle.get("xrl"):
        worst_e = max(elig, key=lambda r: f(r["legit_err_pct"]))
        worst_p = max(elig, key=lambda r: f(r["p99_ms"]))
        E = f(worst_e["legit_err_pct"])
        P = f(worst_p["p99_ms"]) / f(idle["xrl"]["p99_ms"])
    if carried is not None:
        L.append("")
        L.append("E and P are taken over the steps the lab's NIC carried (the bare XDP_DROP program lost "
                 "<= 1 %% in the ring): %s." % (", ".join(step_name(r["step"]) for r in steps["floor"]
                                                          if r["step"] in carried) or "none"))
    if not R <= rmax:
        why.append("xrl's receive cost is %.2f of nftables' (median of the alternating rounds, or the heaviest "
                   "step without them); required <= %.2f" % (R, rmax))
    if not E <= emax:
        why.append("legitimate clients lost %.2f %% of requests under flood with xrl (step %s: %s); required <= %.2f %%"
                   % (E, step_name(worst_e["step"]) if worst_e else "?",
                      worst_e["legit_detail"] if worst_e else "no xrl run", emax))
    if not P <= pmax:
        why.append("legitimate p99 under flood with xrl is %.2fx the idle p99 (%s ms at step %s vs %s ms idle); "
                   "required <= %.1fx" % (P, worst_p["p99_ms"] if worst_p else "?",
                                          step_name(worst_p["step"]) if worst_p else "?",
                                          idle["xrl"]["p99_ms"] if idle.get("xrl") else "?", pmax))
    if not defences:
        why = []  # the spoofed-source scenario alone (DEFENCES=""): no R, E, P
    last = ["xrl_vs_nft_cost=%.2f legit_error_pct=%.2f legit_p99_ratio=%.2f" % (R, E, P)] if defences else []
    if defences:
        L.extend(["", "```", last[0], "```"])
        with open(os.path.join(a.out, "table.md"), "w") as o:
            o.write("\n".join(L) + "\n")
        print("\n".join(L[:-4]))
    # the spoofed-source section: spoofed.md, a block of its own in the docs
    if any(d in steps for d in SPOOFED):
        S = []
        line = spoofed(S, a, steps, idle, carried, why)
        last.append(line)
        S.extend(["", "```", line, "```"])
        with open(os.path.join(a.out, "spoofed.md"), "w") as o:
            o.write("\n".join(S) + "\n")
        print()
        print("\n".join(S[:-4]))
    print()
    for w in why:
        print("FAIL: " + w)
    if not why:
        print("OK: " + ", ".join((["R <= %.2f, E <= %.2f %%, P <= %.1f" % (rmax, emax, pmax)] if defences else []) +
                                 (["X >= %.0f, Y <= %.2f, E2 <= %.2f %%" % tuple(a.spoofed_limits)]
                                  if any(d in steps for d in SPOOFED) else [])))
    print("\n".join(last))
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main())
