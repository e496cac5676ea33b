#!/usr/bin/env bash
# Issue 11's merge benchmark, whole processes timed by hyperfine in one run: two copies of an N-item vault
# (10,000 by default) with 100 changes on each side, 10 of them to the same items (`kcar-scale-bench
# merge-sides`), merged
#   (a) by `kcar merge --key-file KEY BASE OURS THEIRS`, what git's merge driver runs;
#   (b) by the manual path people use today: the same secrets as a text file, one `service/account hex-value`
#       line per item, encrypted with age: decrypt BASE, OURS and THEIRS, `git merge-file`, encrypt the
#       result over OURS again (one shell script, as a merge driver for age files would be);
# and (c) `kcar git textconv` of the N-item vault, what `git diff` runs on each side.
# Prints the medians, the ratio kcar/manual and issue 11's targets ((a) at most 0.2 s, (c) at most 0.1 s).
# Usage: scripts/bench/merge-bench.sh [--items N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/../.."
N=10000
RUNS=21
while [[ $# -gt 0 ]]; do
    case "$1" in
        --items) N="$2"; shift ;;
        --runs) RUNS="$2"; shift ;;
        *) echo "usage: $0 [--items N] [--runs N]" >&2; exit 2 ;;
    esac
    shift
done
for p in hyperfine age git; do
    command -v "$p" >/dev/null || { echo "installing $p"; apt-get install -y -qq "$p" >/dev/null; }
done
scripts/swift-release --product kcar >/dev/null
scripts/swift-release --package-path Benchmarks --product kcar-scale-bench >/dev/null
K=$PWD/.build/release/kcar
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# kcar's writer id goes to the benchmark's folder, not the user's.
export XDG_STATE_HOME="$W/state"
printf '# %s, %s cores, load %s; %s items; age %s, %s\n' "$(date -u +%FT%TZ)" "$(nproc)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$N" "$(age --version)" "$(git --version)"
KCAR_SCALE_ONLY=v2 Benchmarks/.build/release/kcar-scale-bench build "$N" "$W" >/dev/null
Benchmarks/.build/release/kcar-scale-bench merge-sides "$W"
age-keygen -o "$W/age.key" 2>/dev/null
for s in base ours theirs; do age -r "$(age-keygen -y "$W/age.key")" -o "$W/$s.age" "$W/$s.txt"; done
cat > "$W/manual-merge.sh" <<'EOF'
# The manual merge of DIR/work.age (OURS) with DIR/base.age and DIR/theirs.age: decrypt, git merge-file,
# encrypt over OURS. git merge-file exits with the number of conflicts (left marked in the text).
set -e
cd "$1"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
age -d -i age.key base.age > "$t/base"
age -d -i age.key work.age > "$t/ours"
age -d -i age.key theirs.age > "$t/theirs"
git merge-file "$t/ours" "$t/base" "$t/theirs" || [ $? -lt 128 ]
age -r "$(age-keygen -y age.key)" -o work.age.new "$t/ours"
mv work.age.new work.age
EOF
hyperfine -N --runs "$RUNS" --warmup 2 --export-json "$W/merge.json" --prepare "cp $W/ours.kcv $W/work.kcv" \
    -n kcar.merge "$K merge -q --key-file $W/key $W/base.kcv $W/work.kcv $W/theirs.kcv" >/dev/null
hyperfine -N --runs "$RUNS" --warmup 2 --export-json "$W/manual.json" --prepare "cp $W/ours.age $W/work.age" \
    -n manual.age_merge_file "bash $W/manual-merge.sh $W" >/dev/null
hyperfine -N --runs "$RUNS" --warmup 2 --export-json "$W/textconv.json" \
    -n kcar.textconv "$K git textconv --key-file $W/key $W/base.kcv" >/dev/null
# Both merges once more, to say what they gave: conflicts left for a person, items in the result.
cp "$W/ours.kcv" "$W/work.kcv"
"$K" merge --key-file "$W/key" "$W/base.kcv" "$W/work.kcv" "$W/theirs.kcv" 2>&1
for s in base ours theirs; do age -d -i "$W/age.key" "$W/$s.age" > "$W/$s.plain"; done
conflicts=0
git merge-file -p "$W/ours.plain" "$W/base.plain" "$W/theirs.plain" > /dev/null || conflicts=$?
echo "git merge-file: $conflicts conflicts"
python3 - "$W" <<'EOF'
import json, sys
d = sys.argv[1]
med = {r["command"]: r["median"] for f in ("merge", "manual", "textconv") for r in json.load(open(f"{d}/{f}.json"))["results"]}
for name, target in (("kcar.merge", 0.2), ("manual.age_merge_file", None), ("kcar.textconv", 0.1)):
    print(f"{name} {med[name] * 1000:.1f} ms" + (f" (target {target * 1000:.0f} ms: {'met' if med[name] <= target else 'missed'})" if target else ""))
print(f"ratio kcar.merge/manual {med['kcar.merge'] / med['manual.age_merge_file']:.2f}")
EOF
