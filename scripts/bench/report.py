#!/usr/bin/env python3
"""Prints the table and the JSON summary of a bench.sh run (python3 stdlib only).

    report.py RESULTS.tsv ROWS.tsv [--json FILE]

RESULTS.tsv: key <TAB> value <TAB> unit, one figure a line (the last value of a key wins).
ROWS.tsv:    section <TAB> label <TAB> kcar key <TAB> peer label <TAB> peer key <TAB> kind, one comparison a line;
             kind is time (s), time_ms, size (output/input ratio), mem (MiB), rate (MB/s) or count.
"""

import argparse
import json
import os
import platform
import sys
import time

LOWER_IS_BETTER = {"time": ("faster", "slower"), "time_ms": ("faster", "slower"), "size": ("smaller", "larger"),
                   "mem": ("less", "more")}
HIGHER_IS_BETTER = {"rate": ("faster", "slower")}


def fmt(kind, v):
    if v is None:
        return "-"
    if kind == "time":
        return "%.3f s" % v
    if kind == "time_ms":
        return "%.2f ms" % v if v < 100 else "%.0f ms" % v
    if kind == "size":
        return "%.4f" % v
    if kind == "mem":
        return "%.0f MiB" % v
    if kind == "rate":
        return "%.1f MB/s" % v
    return "%.2f" % v


def verdict(kind, ratio):
    if ratio is None or ratio <= 0:
        return ""
    if kind in LOWER_IS_BETTER:
        good, bad = LOWER_IS_BETTER[kind]
        return "%.2fx %s" % (1 / ratio, good) if ratio < 1 else "%.2fx %s" % (ratio, bad)
    if kind in HIGHER_IS_BETTER:
        good, bad = HIGHER_IS_BETTER[kind]
        return "%.2fx %s" % (ratio, good) if ratio >= 1 else "%.2fx %s" % (1 / ratio, bad)
    return ""


def num(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return None if v != v else v  # NaN


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("rows")
    ap.add_argument("--json")
    args = ap.parse_args()

    figures, units = {}, {}
    with open(args.results) as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and parts[0]:
                v = num(parts[1])
                figures[parts[0]] = v if v is not None or not parts[1] else parts[1]  # strings: versions
                units[parts[0]] = parts[2] if len(parts) > 2 else ""

    comparisons = []
    with open(args.rows) as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 6:
                continue
            section, label, kkey, plabel, pkey, kind = parts[:6]
            kv = figures.get(kkey)
            if not isinstance(kv, float):
                continue
            pv = figures.get(pkey) if pkey else None
            pv = pv if isinstance(pv, float) else None
            ratio = kv / pv if pv else None
            comparisons.append({"section": section, "figure": label, "kind": kind, "kcar": kv, "kcar_key": kkey,
                                "peer": plabel if pv is not None else None, "peer_value": pv,
                                "peer_key": pkey if pv is not None else None, "ratio": ratio})

    # Table
    headers = ["figure", "kcar", "peer", "peer value", "kcar/peer", ""]
    table = []
    last_section = None
    for c in comparisons:
        if c["section"] != last_section and table:
            table.append(None)
        last_section = c["section"]
        table.append([c["figure"], fmt(c["kind"], c["kcar"]), c["peer"] or "-", fmt(c["kind"], c["peer_value"]),
                      "%.3f" % c["ratio"] if c["ratio"] is not None else "-", verdict(c["kind"], c["ratio"])])
    widths = [max([len(h)] + [len(r[i]) for r in table if r]) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.rjust(w) if 0 < i < 5 and i != 2 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    print()
    print("kcar benchmark (%s, %s cpus, scale %s)" % (time.strftime("%Y-%m-%d %H:%M"), fig_int(figures, "env.nproc"),
                                                     figures.get("env.scale")))
    corpus = []
    for name in ("tree", "secrets", "big"):
        b = figures.get(name + ".bytes")
        if b is not None:
            n = figures.get(name + ".files")
            corpus.append("%s %s%.1f MB" % (name, "%d files, " % n if n is not None else "", b / 1e6))
    if corpus:
        print("corpora: " + "; ".join(corpus))
    versions = [str(v) for k, v in sorted(figures.items()) if k.startswith("version.")]
    if versions:
        print("versions: " + "; ".join(versions))
    if figures.get("kcar.level_matching_gz6") is not None:
        lv = int(figures["kcar.level_matching_gz6"])
        print("kcar level matching the size of the tar | gzip -6 peer: %s" % (lv if lv else "none"))
    print()
    print(line(headers))
    print(line(["-" * w for w in widths]))
    for r in table:
        print("" if r is None else line(r))
    checks = {k[len("check."):]: v for k, v in figures.items() if k.startswith("check.")}
    if checks:
        bad = [k for k, v in checks.items() if v != 1]
        print()
        print("checks: " + ("all %d passed" % len(checks) if not bad else "FAILED: " + ", ".join(bad)))

    summary = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": {"machine": platform.machine(), "kernel": platform.release(), "cpus": os.cpu_count()},
        "comparisons": comparisons,
        "figures": {k: {"value": v, "unit": units.get(k, "")} for k, v in figures.items()},
    }
    text = json.dumps(summary, indent=1, sort_keys=False)
    print()
    print("--- summary (JSON) ---")
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text + "\n")
        print("summary written to %s" % args.json, file=sys.stderr)


def fig_int(figures, k):
    v = figures.get(k)
    return "%d" % v if v is not None else "?"


if __name__ == "__main__":
    main()
