#!/usr/bin/env bash
# Issue 10's scale table: the same N generic passwords in a version 1 vault, a version 2 (paged, SPEC.md
# Part 4 draft) vault and a SQLite table with a primary key, at N = 1k, 10k, 100k (and 1M with --million).
# Also merging two copies with 100 updates each (issue 11), and 10,000 single-item commits (at 10k).
# In-process figures come from kcar-scale-bench; whole-process ones from hyperfine, in the same run:
# `kcar-scale-bench get` (a process that opens the v2 vault and reads one item: what `kcar get` will cost once
# the CLI reads version 2) against `sqlite3 DB "SELECT ... WHERE service=? AND account=?"`.
# Usage: scripts/bench/scale-bench.sh [--million] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=(1000 10000 100000)
RUNS=21
while [[ $# -gt 0 ]]; do
    case "$1" in
        --million) SIZES+=(1000000) ;;
        --runs) RUNS="$2"; shift ;;
        *) echo "usage: $0 [--million] [--runs N]" >&2; exit 2 ;;
    esac
    shift
done
for p in hyperfine sqlite3; do
    command -v "$p" >/dev/null || { echo "installing $p"; apt-get install -y -qq "$p" >/dev/null; }
done
scripts/swift-release --package-path Benchmarks --product kcar-scale-bench >/dev/null
B=Benchmarks/.build/release/kcar-scale-bench
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
printf '# %s, %s cores; sqlite3 %s\n' "$(date -u +%FT%TZ)" "$(nproc)" "$(sqlite3 --version | cut -d' ' -f1)"
for n in "${SIZES[@]}"; do
    d="$W/$n"
    mkdir -p "$d"
    echo "## $n items"
    /usr/bin/time -f "build.wall %e s, peak RSS %M KB" "$B" build "$n" "$d" 2>&1
    "$B" measure "$n" "$d"
    # Merge (issue 11, SPEC V9): two copies with 100 updates each, with and without BASE.
    [[ $n -ge 1000 ]] && "$B" merge "$n" "$d"
    # 10,000 single-item commits, then open + get (issue 10's "get after 10,000 commits"): with automatic
    # compaction (SPEC.md V8.1), and without it for comparison.
    [[ $n -eq 10000 ]] && "$B" commits "$n" "$d" 10000 && "$B" commits "$n" "$d" 10000 off
    sqlite3 "$d/db" "CREATE TABLE items(service TEXT, account TEXT, team TEXT, value TEXT, PRIMARY KEY(service, account)) WITHOUT ROWID;
                     CREATE INDEX team ON items(team);" ".mode csv" ".import $d/rows.csv items"
    i=$((n / 2))
    svc="svc$((i % 1000)).example.com"; acct="user$i"
    hyperfine -N --runs "$RUNS" --warmup 3 --export-json "$d/hf.json" \
        -n v2.process_get "$B get $d $svc $acct" \
        -n sqlite.process_get "sqlite3 $d/db \"SELECT value FROM items WHERE service='$svc' AND account='$acct'\"" \
        -n sqlite.process_find_attr10 "sqlite3 $d/db \"SELECT service, account FROM items WHERE team='t$((i / 10))'\"" >/dev/null
    python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["command"], round(r["median"] * 1000, 3), "ms")' "$d/hf.json"
    rm -rf "$d"
done
