#!/usr/bin/env bash
# Issue 10's whole-process figures through the real `kcar` commands on a keychain group (a version 2 vault,
# SPEC.md Part 4, opened with its items on demand): `import --items` of N generic passwords (wall time and
# peak RSS), then `get`, `find --attr` (10 matches) and a durable `add`, each against sqlite3's CLI on a table
# with the same rows and a primary key, measured in the same run. N = 1k, 10k, 100k (and 1M with --million).
# The same lookup through the library's public API (issue 26: Vault.open with the items on demand, a lookup by
# key, one read), in process and as a whole process (kcar-scale-bench library, library-once), on the group's
# vault. `make bench-library` runs it at 50,000 and 1,000,000 items.
# Usage: scripts/bench/keychain-scale.sh [--million] [--runs N] [--sizes 'N ...']
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=(1000 10000 100000)
RUNS=21
while [[ $# -gt 0 ]]; do
    case "$1" in
        --million) SIZES+=(1000000) ;;
        --runs) RUNS="$2"; shift ;;
        --sizes) read -r -a SIZES <<< "$2"; shift ;;
        *) echo "usage: $0 [--million] [--runs N] [--sizes 'N ...']" >&2; exit 2 ;;
    esac
    shift
done
for p in hyperfine sqlite3; do
    command -v "$p" >/dev/null || { echo "installing $p"; apt-get install -y -qq "$p" >/dev/null; }
done
scripts/swift-release --product kcar >/dev/null
K=$PWD/.build/release/kcar
scripts/swift-release --package-path Benchmarks --product kcar-scale-bench >/dev/null
B=$PWD/Benchmarks/.build/release/kcar-scale-bench
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export HOME="$W/home" KCAR_KEYCHAIN="$W/kc"
mkdir -p "$HOME"
printf '# %s, %s cores; sqlite3 %s\n' "$(date -u +%FT%TZ)" "$(nproc)" "$(sqlite3 --version | cut -d' ' -f1)"
for n in "${SIZES[@]}"; do
    g="g$n"
    echo "## $n items (group $g)"
    # The item file and the same rows for SQLite: service svcK.example.com (K = i mod 1000), account userI,
    # user attribute team tJ (J = i div 10: 10 items per team), a 64-byte value.
    # One item file, however many items (SPEC.md §K7: up to a vault's 4,000,000; the import holds bounded memory).
    python3 - "$n" "$W/items.json" "$W/rows.csv" <<'PY'
import base64, sys
n, items, rows = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(rows, "w") as r, open(items, "w") as f:
    f.write('{"format": "kcar-items", "version": 1, "group": "bench",\n "items": [')
    for i in range(n):
        svc, acct, team = "svc%d.example.com" % (i % 1000), "user%d" % i, "t%d" % (i // 10)
        value = ("%064d" % i).encode()
        f.write(("," if i else "") + '{"class": "genp", "attributes": {"svce": "%s", "acct": "%s", "@team": "%s"}, "value": "%s"}\n'
                % (svc, acct, team, base64.b64encode(value).decode()))
        r.write("%s,%s,%s,%s\n" % (svc, acct, team, value.decode()))
    f.write("]}\n")
PY
    /usr/bin/time -f "%e %M" -o "$W/time" "$K" import --items "$W/items.json" --group "$g" >/dev/null 2>&1
    awk '{ printf "kcar.import: %.2f s wall, peak RSS %d KB\n", $1, $2 }' "$W/time"
    rm -f "$W/items.json" "$W/time"
    sqlite3 "$W/$g.db" "CREATE TABLE items(service TEXT, account TEXT, team TEXT, value TEXT, PRIMARY KEY(service, account)) WITHOUT ROWID;
                        CREATE INDEX team ON items(team);" ".mode csv" ".import $W/rows.csv items"
    i=$((n / 2))
    svc="svc$((i % 1000)).example.com"; acct="user$i"; team="t$((i / 10))"
    "$B" library "$KCAR_KEYCHAIN/$g.kcv" "$KCAR_KEYCHAIN/$g.key" "$n"
    hyperfine -N --runs "$RUNS" --warmup 3 --export-json "$W/hf.json" \
        -n kcar.get "$K get --group $g --class genp --service $svc --account $acct" \
        -n library.process_get "$B library-once $KCAR_KEYCHAIN/$g.kcv $KCAR_KEYCHAIN/$g.key $svc $acct" \
        -n sqlite.get "sqlite3 $W/$g.db \"SELECT value FROM items WHERE service='$svc' AND account='$acct'\"" \
        -n kcar.find_attr10 "$K find --group $g --attr team=$team" \
        -n sqlite.find_attr10 "sqlite3 $W/$g.db \"SELECT service, account FROM items WHERE team='$team'\"" >/dev/null
    # A durable add (one commit, fsynced), the item deleted again before each run (not timed).
    hyperfine --runs "$RUNS" --warmup 2 --export-json "$W/hf-add.json" \
        --prepare "$K delete --group $g --class genp --service new.example.com --account a >/dev/null 2>&1 || true" \
        -n kcar.add "$K add --group $g --service new.example.com --account a --value-file /etc/hostname" \
        -n sqlite.insert "sqlite3 $W/$g.db \"DELETE FROM items WHERE service='new'; INSERT INTO items VALUES('new','a','t','v')\"" >/dev/null
    python3 -c '
import json, sys
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        print("%-20s %8.2f ms (median of %d)" % (r["command"], r["median"] * 1000, len(r["times"])))' "$W/hf.json" "$W/hf-add.json"
    rm -f "$W/$g.db" "$W/rows.csv"
done
