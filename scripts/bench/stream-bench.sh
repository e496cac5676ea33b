#!/usr/bin/env bash
# Issue 10's streaming commands at scale: `kcar list --json`, `kcar list`, `kcar verify`, `kcar extract --items`,
# `kcar import --items` of that file into a new keychain group, and `kcar git textconv` over a version 2 vault
# of N generic passwords (kcar-scale-bench's: 64-byte values in solid records of 256, a keychain schema with
# the attributes tree), at N = 10k, 100k and 1M. For each: the wall time (median of hyperfine's runs, or the
# best of /usr/bin/time's when hyperfine is missing), the peak RSS (/usr/bin/time -f %M), and for list the
# items per second. Goals: at 1M items at most 64 MiB for list --json and verify, list at 1M items/s or
# more; textconv of 10k items at most 0.1 s.
# Usage: scripts/bench/stream-bench.sh [--sizes "10000 100000 1000000"] [--runs N] [--kcar PATH] [--json FILE]
#   --json FILE   also write the list rates as {"figures": {"kcar.list_json.N.items_per_s": {...}, ...}}
#                 (scripts/bench/table.py reads it)
#   --kcar measures another build of kcar (say, main's) on the same vaults, for a before/after table.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=(10000 100000 1000000)
RUNS=3
KCAR=""
JSON_OUT=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --sizes) read -r -a SIZES <<< "$2"; shift ;;
        --runs) RUNS="$2"; shift ;;
        --kcar) KCAR="$2"; shift ;;
        --json) JSON_OUT="$2"; shift ;;
        *) echo "usage: $0 [--sizes \"N ...\"] [--runs N] [--kcar PATH] [--json FILE]" >&2; exit 2 ;;
    esac
    shift
done
scripts/swift-release --package-path Benchmarks --product kcar-scale-bench >/dev/null
if [[ -z "$KCAR" ]]; then
    scripts/swift-release --product kcar >/dev/null
    KCAR=.build/release/kcar
fi
B=Benchmarks/.build/release/kcar-scale-bench
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
HYPERFINE=$(command -v hyperfine || true)
WALL="best of /usr/bin/time's runs"
[[ -n "$HYPERFINE" ]] && WALL="hyperfine's median"
printf '# %s, %s cores, %s; wall: %s, RSS: /usr/bin/time %%M\n' "$(date -u +%FT%TZ)" "$(nproc)" "$KCAR" "$WALL"

# measure NAME N COMMAND...: one line `NAME wall S s, peak RSS K KiB, user CPU U s[, R items/s]` (CPU time
# tells more than wall time on a shared machine); the command's output goes to /dev/null, its exit code must be 0.
measure() {
    local name="$1" n="$2" wall rss best="" user="" u
    shift 2
    rss=0
    for ((r = 0; r < RUNS; r++)); do
        /usr/bin/time -o "$W/time" -f "%e %M %U" "$@" >/dev/null
        read -r wall k u < "$W/time"
        (( k > rss )) && rss=$k
        if [[ -z "$best" ]] || awk "BEGIN { exit !($wall < $best) }"; then best=$wall; fi
        if [[ -z "$user" ]] || awk "BEGIN { exit !($u < $user) }"; then user=$u; fi
    done
    if [[ -n "$HYPERFINE" ]]; then
        "$HYPERFINE" -N --runs "$RUNS" --export-json "$W/hf.json" "$(printf '%q ' "$@")" >/dev/null
        best=$(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["results"][0]["median"], 4))' "$W/hf.json")
    fi
    if [[ "$name" == list* ]]; then
        local key=kcar.list
        [[ "$name" == "list --json" ]] && key=kcar.list_json
        printf '%s.%s.items_per_s\t%s\n' "$key" "$n" "$(awk "BEGIN { print $n / ($best > 0 ? $best : 0.001) }")" >> "$W/rates"
        printf '%-16s %8s s  %7s KiB  user %6s s  %10.0f items/s\n' "$name" "$best" "$rss" "$user" "$(awk "BEGIN { print $n / ($best > 0 ? $best : 0.001) }")"
    else
        printf '%-16s %8s s  %7s KiB  user %6s s\n' "$name" "$best" "$rss" "$user"
    fi
}

for n in "${SIZES[@]}"; do
    d="$W/$n"
    mkdir -p "$d"
    echo "## $n items"
    KCAR_SCALE_ONLY=v2 /usr/bin/time -f "build            %e s  %M KiB (kcar-scale-bench, not measured)" "$B" build "$n" "$d" 2>&1 | grep -v '^build\.'
    v="$d/v2.kcv"
    measure "list --json" "$n" "$KCAR" list "$v" --json --key-file "$d/key"
    measure "list" "$n" "$KCAR" list "$v" --key-file "$d/key"
    measure "verify" "$n" "$KCAR" verify "$v" --key-file "$d/key"
    measure "extract --items" "$n" "$KCAR" extract "$v" --items "$d/items.json" --force --key-file "$d/key"
    # That item file imported into a new keychain group, in one file (issue 24: any count in bounded memory;
    # target at 1M: 15 s, 512 MiB). A fresh keychain per run, so the best of RUNS /usr/bin/time runs.
    best=""
    rss=0
    for ((r = 0; r < RUNS; r++)); do
        rm -rf "$W/kc" "$W/home"
        mkdir -p "$W/home"
        env -i PATH="$PATH" HOME="$W/home" KCAR_KEYCHAIN="$W/kc" /usr/bin/time -o "$W/time" -f "%e %M %U" \
            "$KCAR" import --items "$d/items.json" --group bench >/dev/null 2>&1
        read -r wall k u < "$W/time"
        (( k > rss )) && rss=$k
        if [[ -z "$best" ]] || awk "BEGIN { exit !($wall < $best) }"; then best=$wall; fi
    done
    rm -rf "$W/kc" "$W/home" "$d/items.json"
    printf '%-16s %8s s  %7s KiB\n' "import --items" "$best" "$rss"
    printf 'kcar.import_items.%s.s\t%s\n' "$n" "$best" >> "$W/rates"
    printf 'kcar.import_items.%s.rss_mib\t%s\n' "$n" "$(awk "BEGIN { print $rss / 1024 }")" >> "$W/rates"
    measure "git textconv" "$n" env KCAR_KEY_FILE="$d/key" "$KCAR" git textconv "$v"
    rm -rf "$d"
done
if [[ -n "$JSON_OUT" ]]; then
    python3 - "$W/rates" "$JSON_OUT" <<'PY'
import json, sys
rates = dict(line.split("\t") for line in open(sys.argv[1]).read().splitlines())
unit = lambda k: "items/s" if k.endswith("items_per_s") else "MiB" if k.endswith("rss_mib") else "s"
json.dump({"figures": {k: {"value": float(v), "unit": unit(k)} for k, v in rates.items()}}, open(sys.argv[2], "w"), indent=1)
PY
fi
