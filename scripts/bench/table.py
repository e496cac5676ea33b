#!/usr/bin/env python3
"""Issue 24's table from one `make bench` run: each figure with its peer of the same run and the target.

    table.py FIGURES.json... [--markdown]

Each FIGURES.json is a summary written by bench.sh, keychain-bench.sh, secret-service-bench.sh or
stream-bench.sh (`--json FILE`): {"figures": {name: {"value": v, "unit": u}}}. Their figures are merged; a row
whose figures are missing (a peer not installed, a benchmark left out) is printed as "not measured". The
machine (cores, memory, OS) is named above the table, as the README's table names it.
"""
import json
import os
import platform
import sys


def load(paths):
    figures = {}
    for path in paths:
        try:
            with open(path) as fh:
                data = json.load(fh)
        except (OSError, ValueError) as e:
            print("table.py: %s: %s (its rows are not measured)" % (path, e), file=sys.stderr)
            continue
        for k, v in data.get("figures", {}).items():
            if isinstance(v, dict) and isinstance(v.get("value"), (int, float)):
                figures[k] = float(v["value"])
    return figures


def machine():
    mem = "?"
    try:
        with open("/proc/meminfo") as fh:
            kib = int(fh.readline().split()[1])
            mem = "%.0f GiB" % (kib / 1048576)
    except (OSError, ValueError, IndexError):
        pass
    osname = platform.system()
    try:
        with open("/etc/os-release") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "%d cores, %s, %s" % (os.cpu_count() or 0, mem, osname)


def seconds(v):
    return "%.3f s" % v


def ms(v):
    return "%.2f ms" % v


def rows(f):
    """(figure, kcar text, peer text, comparison, target, met) for every row the figures allow."""
    out = []

    def time_row(label, kkey, peer, pkey, fmt, target, need, optional=False):
        k, p = f.get(kkey), f.get(pkey)
        if optional and p is None:
            return
        if k is None or p is None or k <= 0 or p <= 0:
            out.append((label, fmt(k) if k is not None else "not measured",
                        peer if p is None else "%s %s" % (peer, fmt(p)), "", target, None))
            return
        r = p / k
        word = "%.2fx faster" % r if r >= 1 else "%.2fx slower" % (1 / r)
        out.append((label, fmt(k), "%s %s" % (peer, fmt(p)), word, target, r >= need))

    def pack_row(label, kkey, kratio, peer, pkey, pratio, target, need):
        k, p, kr, pr = f.get(kkey), f.get(pkey), f.get(kratio), f.get(pratio)
        if None in (k, p, kr, pr) or min(k, p, kr, pr) <= 0:
            out.append((label, seconds(k) if k is not None else "not measured",
                        peer if p is None else "%s %s" % (peer, seconds(p)), "", target, None))
            return
        r = p / k
        size = kr / pr
        out.append((label, "%s, %.1f %% of input" % (seconds(k), kr * 100), "%s %s, %.1f %%" % (peer, seconds(p), pr * 100),
                    "%.2fx %s, %.2fx %s" % (r if r >= 1 else 1 / r, "faster" if r >= 1 else "slower",
                                            size if size >= 1 else 1 / size, "larger" if size > 1 else "smaller"),
                    target, r >= need and size <= 1.0))

    pack_row("pack a text tree, default level", "kcar.pack.tree.s", "kcar.pack.tree.ratio", "tar | pigz -6 | age",
             "peer.pack.tree_gz6.s", "peer.pack.tree_gz6.ratio", ">= 1.5x at <= the peer's size", 1.5)
    pack_row("pack, --level 1", "kcar.pack.tree_l1.s", "kcar.pack.tree_l1.ratio", "tar | pigz -1 | age",
             "peer.pack.tree_gz1.s", "peer.pack.tree_gz1.ratio", ">= 1.5x at <= the peer's size", 1.5)
    time_row("extract that tree to tmpfs", "kcar.extract.tree.s", "age -d | pigz -d | tar -x", "peer.extract.tree_gz6.s",
             seconds, ">= 2x", 2.0)
    time_row("pack secrets with a passphrase", "kcar.pack.secrets_pass.s", "7z -p -mhe=on", "peer.pack.secrets_7z.s",
             seconds, "", 0)
    n = " of {:,.0f} items".format(f["kcar.items"]) if "kcar.items" in f else ""
    time_row("kcar get, one%s, whole process" % n, "kcar.get.ms", "sqlite3 SELECT", "sqlite.get.ms", ms, ">= 1.0x", 1.0)
    time_row("kcar get, whole process", "kcar.get.ms", "keepassxc-cli show", "keepassxc.show.ms", ms, "", 0,
             optional=True)
    time_row("durable kcar add, whole process", "kcar.add.ms", "sqlite3 INSERT", "sqlite.add_delete.ms", ms, ">= 1.0x", 1.0)
    time_row("kcar find by a user attribute%s" % n, "kcar.find_attr.ms", "sqlite3 json_extract", "sqlite.find_attr.ms",
             ms, "stay ahead", 1.0)
    time_row("process start (--version)", "kcar.version.ms", "sqlite3", "sqlite.version.ms", ms, "", 0)
    for n in sorted(int(k.split(".")[2]) for k in f if k.startswith("kcar.list_json.") and k.endswith(".items_per_s")):
        rate = f["kcar.list_json.%d.items_per_s" % n]
        out.append(("kcar list --json, %s items" % format(n, ","), "{:,.0f} items/s".format(rate), "", "",
                    ">= 1,000,000/s", rate >= 1e6))
    for n in sorted(int(k.split(".")[2]) for k in f if k.startswith("kcar.list.") and k.endswith(".items_per_s")):
        rate = f["kcar.list.%d.items_per_s" % n]
        out.append(("kcar list, %s items" % format(n, ","), "{:,.0f} items/s".format(rate), "", "", ">= 1,000,000/s",
                    rate >= 1e6))
    for n in sorted(int(k.split(".")[2]) for k in f if k.startswith("kcar.import_items.") and k.endswith(".s")):
        secs, rss = f["kcar.import_items.%d.s" % n], f.get("kcar.import_items.%d.rss_mib" % n, 0)
        met = secs <= 15 and rss <= 512 if n == 1000000 else None
        out.append(("kcar import --items, %s items from one file" % format(n, ","),
                    "%s, %.0f MiB" % (seconds(secs), rss), "", "",
                    "1M: <= 15 s, <= 512 MiB" if n == 1000000 else "", met))
    time_row("secret-tool store", "kcar.store.ms", "gnome-keyring", "gnome-keyring.store.ms", ms, "", 0)
    time_row("secret-tool lookup", "kcar.lookup.ms", "gnome-keyring", "gnome-keyring.lookup.ms", ms, "", 0)
    among = " {:,.0f}".format(f["kcar.lookup_among_n.items"]) if "kcar.lookup_among_n.items" in f else " many"
    time_row("secret-tool lookup among%s items" % among, "kcar.lookup_among_n.ms", "gnome-keyring",
             "gnome-keyring.lookup_among_n.ms", ms, "", 0)
    if "kcar.lookup_among_big.ms" in f:
        out.append(("secret-tool lookup among {:,.0f} items (kcar alone)".format(f.get("kcar.lookup_among_big.items", 0)),
                    ms(f["kcar.lookup_among_big.ms"]), "gnome-keyring: not measured (hours to fill)", "", "", None))
    return out


def main(argv):
    markdown = "--markdown" in argv
    paths = [a for a in argv if a != "--markdown"]
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    table = rows(load(paths))
    print()
    print("Issue 24's figures, each peer of the same run (%s):" % machine())
    print()
    cells = [("figure", "kcar", "peer, same run", "kcar against peer", "target")]
    for label, k, p, c, target, met in table:
        verdict = "" if not target else (target + (": met" if met else ": missed" if met is not None else ""))
        cells.append((label, k, p, c, verdict))
    if markdown:
        for i, r in enumerate(cells):
            print("| " + " | ".join(x.replace("|", "\\|") for x in r) + " |")
            if i == 0:
                print("|---" * len(r) + "|")
    else:
        widths = [max(len(r[i]) for r in cells) for i in range(5)]
        for r in cells:
            print("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
