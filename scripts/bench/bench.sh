#!/usr/bin/env bash
# kcar benchmark: kcar against tar/gzip/pigz/age/7z on the corpora of gen_corpora.py.
#
#   scripts/bench/bench.sh [options]
#
#   --data DIR        corpora directory (default: bench-data/ at the repository root); made if missing
#   --scale S         corpus scale passed to gen_corpora.py (default 1: 200 MB tree, 10,000 secrets, 1 GiB)
#   --no-big          skip the 1 GiB incompressible file
#   --levels          also pack the tree at kcar levels 1..12 and find the first within 2% of pigz -6's size (slow)
#   --runs N          runs of each long command (pack, extract); the best is reported (default 3)
#   --big-runs N      runs of each command on the 1 GiB file (default 2)
#   --quick-runs N    minimum runs of each short command (hyperfine --min-runs; default 10)
#   --only LIST       comma-separated sections: tree,extract,big,secrets,item,append (default: all)
#   --append-items N, --append-mb MB   vault for the append figure (default 10000 x scale items, 100 x scale MB)
#   --tmpfs DIR       where extractions go (default: a directory in /dev/shm, else a tmpfs mounted under /tmp
#                     when root, else the work directory)
#   --work DIR        where vaults and archives go (default: a temporary directory in the data directory,
#                     so on the same file system as the corpora); removed on exit
#   --kcar PATH       kcar binary (default: from swift build -c release --show-bin-path; built if missing)
#   --build           run scripts/swift-release first even if the binaries exist
#   --json FILE       also write the machine-readable summary to FILE
#   --keep            keep the work and tmpfs directories (for inspection)
#   --no-hyperfine    time short commands with a bash loop even if hyperfine is installed
#
# Whole-process figures: long commands are timed with date around /usr/bin/time (which gives the peak RSS;
# for a pipeline, the largest RSS of any one process in it); short commands with hyperfine when installed.
# Files are read from the page cache (every corpus is read once before it is measured); output vaults and
# archives go to the work directory, extractions to tmpfs. Every peer runs only if installed.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$REPO/scripts/bench"
DATA="$REPO/bench-data"
SCALE=1
BIG=1
LEVELS=0
RUNS=3
BIG_RUNS=2
QRUNS=10
ONLY="tree,extract,big,secrets,item,append"
APPEND_ITEMS=""
APPEND_MB=""
TMPFS_ARG=""
WORK_ARG=""
KCAR=""
BUILD=0
JSON_OUT=""
KEEP=0
HYPERFINE=1

die() { echo "bench.sh: $*" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

while (($#)); do
    case $1 in
    --data) DATA=$2; shift ;;
    --scale) SCALE=$2; shift ;;
    --no-big) BIG=0 ;;
    --levels) LEVELS=1 ;;
    --runs) RUNS=$2; shift ;;
    --big-runs) BIG_RUNS=$2; shift ;;
    --quick-runs) QRUNS=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --append-items) APPEND_ITEMS=$2; shift ;;
    --append-mb) APPEND_MB=$2; shift ;;
    --tmpfs) TMPFS_ARG=$2; shift ;;
    --work) WORK_ARG=$2; shift ;;
    --kcar) KCAR=$2; shift ;;
    --build) BUILD=1 ;;
    --json) JSON_OUT=$2; shift ;;
    --keep) KEEP=1 ;;
    --no-hyperfine) HYPERFINE=0 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }
[[ $BIG == 0 ]] && ONLY=${ONLY//big/}
[[ -z $APPEND_ITEMS ]] && APPEND_ITEMS=$(awk -v s="$SCALE" 'BEGIN { n = int(10000 * s + 0.5); print (n < 10 ? 10 : n) }')
[[ -z $APPEND_MB ]] && APPEND_MB=$(awk -v s="$SCALE" 'BEGIN { m = 100 * s; print (m < 1 ? 1 : m) }')

have python3 || die "python3 is needed (corpus generator and report)"

# ---------------------------------------------------------------------------------------------------
# Binaries

BIN=""
if [[ -z $KCAR || $BUILD == 1 ]]; then
    BIN=$(cd "$REPO" && swift build -c release --show-bin-path)
fi
if [[ -z $KCAR ]]; then
    KCAR="$BIN/kcar"
    if [[ $BUILD == 1 || ! -x $KCAR ]]; then
        log "building kcar (scripts/swift-release --product kcar)"
        (cd "$REPO" && scripts/swift-release --product kcar) >&2 || die "swift build failed"
    fi
fi
[[ -x $KCAR ]] || die "no kcar binary at $KCAR"
# kcar-bench is built in the package of the benchmarks (Benchmarks/), against this checkout's libraries.
KCAR_BENCH="$(cd "$REPO" && swift build -c release --package-path Benchmarks --show-bin-path)/kcar-bench"
if [[ $BUILD == 1 || ! -x $KCAR_BENCH ]]; then
    log "building kcar-bench (scripts/swift-release --package-path Benchmarks --product kcar-bench)"
    if ! (cd "$REPO" && scripts/swift-release --package-path Benchmarks --product kcar-bench) >&2; then
        log "WARNING: kcar-bench does not build; the in-process figures are skipped"
    fi
fi
[[ -x $KCAR_BENCH ]] || KCAR_BENCH=""

# ---------------------------------------------------------------------------------------------------
# Corpora, work and tmpfs directories

log "corpora in $DATA (scale $SCALE)"
GEN=(python3 "$HERE/gen_corpora.py" "$DATA" --scale "$SCALE")
[[ $BIG == 0 ]] && GEN+=(--no-big)
want big || GEN+=(--no-big)
"${GEN[@]}" >&2

W=""
T=""
MOUNTED=""
cleanup() {
    local rc=$?
    if [[ $KEEP == 1 ]]; then
        log "kept work directory $W and tmpfs directory $T"
    else
        [[ -n $T && -d $T ]] && rm -rf "$T"
        [[ -n $MOUNTED ]] && umount "$MOUNTED" 2>/dev/null && rmdir "$MOUNTED"
        [[ -n $W && -d $W ]] && rm -rf "$W"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n $WORK_ARG ]]; then
    mkdir -p "$WORK_ARG"
    W=$(mktemp -d "$WORK_ARG/kcar-bench.XXXXXX")
else
    W=$(mktemp -d "$DATA/.bench-tmp.XXXXXX")
fi
if [[ -n $TMPFS_ARG ]]; then
    mkdir -p "$TMPFS_ARG"
    T=$(mktemp -d "$TMPFS_ARG/kcar-bench.XXXXXX")
elif [[ -d /dev/shm && $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]]; then
    T=$(mktemp -d /dev/shm/kcar-bench.XXXXXX)
elif [[ $(id -u) == 0 ]]; then
    MOUNTED=$(mktemp -d /tmp/kcar-bench-tmpfs.XXXXXX)
    mount -t tmpfs -o size=3g,mode=0700 tmpfs "$MOUNTED" || die "cannot mount a tmpfs on $MOUNTED"
    T=$(mktemp -d "$MOUNTED/x.XXXXXX")
else
    log "WARNING: no tmpfs (/dev/shm missing and not root): extractions go to the work directory"
    T=$(mktemp -d "$W/extract.XXXXXX")
fi
log "work directory $W, extraction directory $T ($(stat -f -c %T "$T"))"

RES="$W/results.tsv"  # key <TAB> value <TAB> unit
ROWS="$W/rows.tsv"    # section <TAB> label <TAB> kcar key <TAB> peer label <TAB> peer key <TAB> kind
: >"$RES"
: >"$ROWS"
rec() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RES"; }
get() { awk -F'\t' -v k="$1" '$1 == k { v = $2 } END { print v }' "$RES"; }
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" >>"$ROWS"; }
# Single-quotes a word for bash -c and hyperfine.
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }
calc0() { awk "BEGIN { m = $*; printf \"%.6f\", (m < 0 ? 0 : m) }"; }
bytes_of() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }'; }
files_of() { find "$1" -type f | wc -l | tr -d ' '; }
size_of() { stat -c %s "$1"; }
warm() { find "$1" -type f -print0 | xargs -0 cat >/dev/null; }

TIME_BIN=""
[[ -x /usr/bin/time ]] && /usr/bin/time -f '%M' true 2>/dev/null && TIME_BIN=/usr/bin/time

# measure NAME RUNS PREPARE COMMAND: best (min) wall time over RUNS in NAME.s, median in NAME.median_s,
# peak RSS (KiB, largest over the runs) in NAME.rss_kib. PREPARE runs untimed before each run.
measure() {
    local name=$1 runs=$2 prep=$3 cmd=$4 i t0 t1 samples=() rss maxrss=0
    log "  $name: $cmd"
    for ((i = 0; i < runs; i++)); do
        [[ -n $prep ]] && bash -c "$prep"
        t0=$(date +%s%N)
        if [[ -n $TIME_BIN ]]; then
            if ! $TIME_BIN -f '%M' -o "$W/time.out" bash -c "set -o pipefail; $cmd" >"$W/cmd.out" 2>"$W/cmd.err"; then
                cat "$W/cmd.err" >&2
                die "$name failed: $cmd"
            fi
            rss=$(tail -n 1 "$W/time.out")
            ((rss > maxrss)) && maxrss=$rss
        else
            bash -c "set -o pipefail; $cmd" >"$W/cmd.out" 2>"$W/cmd.err" || { cat "$W/cmd.err" >&2; die "$name failed: $cmd"; }
        fi
        t1=$(date +%s%N)
        samples+=("$(calc "($t1 - $t0) / 1e9")")
    done
    local sorted min med
    sorted=$(printf '%s\n' "${samples[@]}" | sort -g)
    min=$(head -n 1 <<<"$sorted")
    med=$(awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }' <<<"$sorted")
    rec "$name.s" "$min" s
    rec "$name.median_s" "$med" s
    [[ -n $TIME_BIN ]] && rec "$name.rss_mib" "$(calc "$maxrss / 1024")" MiB
    log "    best $(printf '%.3f' "$min") s, median $(printf '%.3f' "$med") s, peak RSS $((maxrss / 1024)) MiB"
}

# quick NAME COMMAND: a short whole-process timing (hyperfine if installed): NAME.ms (median), NAME.min_ms.
quick() {
    local name=$1 cmd=$2
    log "  $name: $cmd"
    bash -c "set -o pipefail; $cmd" >"$W/cmd.out" 2>"$W/cmd.err" || { cat "$W/cmd.err" >&2; die "$name failed: $cmd"; }
    if [[ $HYPERFINE == 1 ]] && have hyperfine; then
        local shell=(--shell=bash)
        [[ $cmd != *'|'* && $cmd != *'>'* ]] && shell=(-N)
        hyperfine "${shell[@]}" --style none --warmup 2 --min-runs "$QRUNS" --export-json "$W/hf.json" "$cmd" \
            >/dev/null 2>"$W/hf.err" || { cat "$W/hf.err" >&2; die "hyperfine failed on $name"; }
        read -r med min < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(r["median"]*1e3, r["min"]*1e3)' "$W/hf.json")
    else
        local i t0 t1 samples=()
        for ((i = 0; i < QRUNS; i++)); do
            t0=$(date +%s%N)
            bash -c "$cmd" >/dev/null 2>&1
            t1=$(date +%s%N)
            samples+=("$(calc "($t1 - $t0) / 1e6")")
        done
        read -r med min < <(printf '%s\n' "${samples[@]}" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1] }')
    fi
    rec "$name.ms" "$med" ms
    rec "$name.min_ms" "$min" ms
    log "    median $(printf '%.2f' "$med") ms, best $(printf '%.2f' "$min") ms"
}

# Checks that DIR holds as many files and bytes as SRC.
same_tree() {
    local src=$1 dst=$2 what=$3 a b c d
    a=$(files_of "$src"); b=$(files_of "$dst"); c=$(bytes_of "$src"); d=$(bytes_of "$dst")
    if [[ $a != "$b" || $c != "$d" ]]; then
        log "WARNING: $what: $b files / $d bytes extracted, source has $a files / $c bytes"
        rec "check.$what" 0 ok
    else
        rec "check.$what" 1 ok
    fi
}

# ---------------------------------------------------------------------------------------------------
# Keys and peers

K="$W/kcar.key"
"$KCAR" keygen "$K" >/dev/null
PASS="$W/passphrase"
PW=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
printf '%s\n' "$PW" >"$PASS"
chmod 600 "$PASS"

GZ=""; GZNAME=""
if have pigz; then GZ=pigz; GZNAME=pigz; elif have gzip; then GZ=gzip; GZNAME=gzip; fi
ENC=""; DEC=""; ENCNAME=""
if have age && have age-keygen; then
    age-keygen -o "$W/age.key" 2>/dev/null
    AGEPUB=$(age-keygen -y "$W/age.key")
    ENC="age -r $AGEPUB"; DEC="age -d -i $(q "$W/age.key")"; ENCNAME=" | age"
else
    log "age not installed: tar peers are not encrypted"
fi
HAVE_7Z=""
have 7z && HAVE_7Z=7z
# tar -cf - -C PARENT NAME | GZ -L [| age] > OUT
tar_pack() { echo "tar -cf - -C $(q "$1") $(q "$2") | $GZ -$3${ENC:+ | $ENC} > $(q "$4")"; }
tar_unpack() {
    if [[ -n $DEC ]]; then echo "$DEC $(q "$1") | $GZ -d | tar -xf - -C $(q "$2")"
    else echo "$GZ -d < $(q "$1") | tar -xf - -C $(q "$2")"; fi
}

{
    echo "kcar: $KCAR"
    echo "kcar-bench: ${KCAR_BENCH:-none}"
    for t in tar gzip pigz age 7z hyperfine; do have $t && echo "$t: $(command -v $t)"; done
} >&2
rec env.nproc "$(nproc)" cpus
rec env.scale "$SCALE" x
rec version.kcar "$("$KCAR" --version 2>&1 | head -n 1)" ""
have tar && rec version.tar "$(tar --version | head -n 1)" ""
have gzip && rec version.gzip "$(gzip --version | head -n 1)" ""
have pigz && rec version.pigz "$(pigz --version 2>&1 | head -n 1)" ""
have age && rec version.age "age $(age --version 2>&1 | head -n 1)" ""
have 7z && rec version.7z "$(7z 2>&1 | grep -m 1 -i '7-zip' | cut -d: -f1 | sed 's/ *$//')" ""
have hyperfine && rec version.hyperfine "$(hyperfine --version | head -n 1)" ""

# ---------------------------------------------------------------------------------------------------
# 1. Pack the text tree

TREE="$DATA/tree"
TREE_BYTES=$(bytes_of "$TREE")
TREE_FILES=$(files_of "$TREE")
rec tree.bytes "$TREE_BYTES" bytes
rec tree.files "$TREE_FILES" files
TV="$W/tree.kcv"

if want tree || want extract; then
    log "tree: $TREE_FILES files, $TREE_BYTES bytes"
    warm "$TREE"
    measure kcar.pack.tree "$RUNS" "" "$(q "$KCAR") pack $(q "$TV") $(q "$TREE") --key-file $(q "$K") --force"
    rec kcar.pack.tree.out_bytes "$(size_of "$TV")" bytes
    measure kcar.pack.tree_l1 "$RUNS" "" "$(q "$KCAR") pack $(q "$W/tree-l1.kcv") $(q "$TREE") --level 1 --key-file $(q "$K") --force"
    rec kcar.pack.tree_l1.out_bytes "$(size_of "$W/tree-l1.kcv")" bytes
    rm -f "$W/tree-l1.kcv"
    if [[ -n $GZ ]]; then
        for L in 1 6; do
            measure "peer.pack.tree_gz$L" "$RUNS" "" "$(tar_pack "$DATA" tree $L "$W/tree.gz$L")"
            rec "peer.pack.tree_gz$L.out_bytes" "$(size_of "$W/tree.gz$L")" bytes
        done
    fi
    for k in kcar.pack.tree kcar.pack.tree_l1 peer.pack.tree_gz1 peer.pack.tree_gz6; do
        [[ -n $(get "$k.s") ]] || continue
        rec "$k.ratio" "$(calc "$(get "$k.out_bytes") / $TREE_BYTES")" x
        rec "$k.mbps" "$(calc "$TREE_BYTES / 1e6 / $(get "$k.s")")" MB/s
    done
    P6="tar | $GZNAME -6$ENCNAME"
    P1="tar | $GZNAME -1$ENCNAME"
    row tree "pack tree, default level: time" kcar.pack.tree.s "$P6" peer.pack.tree_gz6.s time
    row tree "pack tree, default level: size ratio" kcar.pack.tree.ratio "$P6" peer.pack.tree_gz6.ratio size
    row tree "pack tree, default level: peak RSS" kcar.pack.tree.rss_mib "$P6" peer.pack.tree_gz6.rss_mib mem
    row tree "pack tree, --level 1: time" kcar.pack.tree_l1.s "$P1" peer.pack.tree_gz1.s time
    row tree "pack tree, --level 1: size ratio" kcar.pack.tree_l1.ratio "$P1" peer.pack.tree_gz1.ratio size
    row tree "pack tree, --level 1 vs $GZNAME -6: time" kcar.pack.tree_l1.s "$P6" peer.pack.tree_gz6.s time

    if [[ $LEVELS == 1 ]]; then
        log "tree: kcar levels 1..12"
        match=""
        for L in 1 2 3 4 5 6 7 8 9 10 11 12; do
            measure "kcar.pack.tree_level$L" "$RUNS" "" "$(q "$KCAR") pack $(q "$W/lv.kcv") $(q "$TREE") --level $L --key-file $(q "$K") --force"
            b=$(size_of "$W/lv.kcv")
            rec "kcar.pack.tree_level$L.out_bytes" "$b" bytes
            rec "kcar.pack.tree_level$L.ratio" "$(calc "$b / $TREE_BYTES")" x
            row levels "pack tree, --level $L: time" "kcar.pack.tree_level$L.s" "$P6" peer.pack.tree_gz6.s time
            row levels "pack tree, --level $L: size ratio" "kcar.pack.tree_level$L.ratio" "$P6" peer.pack.tree_gz6.ratio size
            if [[ -z $match && -n $(get peer.pack.tree_gz6.out_bytes) ]] && ((b * 100 <= $(get peer.pack.tree_gz6.out_bytes) * 102)); then
                match=$L
            fi
        done
        rm -f "$W/lv.kcv"
        if [[ -n $match ]]; then
            rec kcar.level_matching_gz6 "$match" level
            log "  kcar --level $match is the first level within 2% of $GZNAME -6's size"
            row levels "pack tree, level matching $GZNAME -6 size (--level $match): time" "kcar.pack.tree_level$match.s" "$P6" peer.pack.tree_gz6.s time
        else
            rec kcar.level_matching_gz6 0 level
            log "  no kcar level is within 2% of $GZNAME -6's size"
        fi
    fi
fi

# ---------------------------------------------------------------------------------------------------
# 2. Extract the tree to tmpfs

if want extract; then
    log "extract the tree to $T"
    measure kcar.extract.tree "$RUNS" "rm -rf $(q "$T/x") && mkdir -p $(q "$T/x")" \
        "$(q "$KCAR") extract $(q "$TV") -C $(q "$T/x") --key-file $(q "$K")"
    same_tree "$TREE" "$T/x" kcar_extract_tree
    rm -rf "$T/x"
    if [[ -n $GZ && -f $W/tree.gz6 ]]; then
        measure peer.extract.tree_gz6 "$RUNS" "rm -rf $(q "$T/y") && mkdir -p $(q "$T/y")" "$(tar_unpack "$W/tree.gz6" "$T/y")"
        same_tree "$TREE" "$T/y/tree" peer_extract_tree
        rm -rf "$T/y"
    fi
    for k in kcar.extract.tree peer.extract.tree_gz6; do
        [[ -n $(get "$k.s") ]] && rec "$k.mbps" "$(calc "$TREE_BYTES / 1e6 / $(get "$k.s")")" MB/s
    done
    PX="${ENCNAME:+age -d | }$GZNAME -d | tar -x"
    row extract "extract tree to tmpfs: time" kcar.extract.tree.s "$PX" peer.extract.tree_gz6.s time
    row extract "extract tree to tmpfs: peak RSS" kcar.extract.tree.rss_mib "$PX" peer.extract.tree_gz6.rss_mib mem
fi
rm -f "$W"/tree.gz1

# ---------------------------------------------------------------------------------------------------
# 3. 1 GiB incompressible

if want big && [[ -f $DATA/big/blob/random.bin ]]; then
    RB="$DATA/big/blob/random.bin"
    BIG_BYTES=$(size_of "$RB")
    rec big.bytes "$BIG_BYTES" bytes
    log "big: $BIG_BYTES bytes"
    warm "$DATA/big"
    BV="$W/big.kcv"
    measure kcar.pack.big "$BIG_RUNS" "rm -f $(q "$BV")" "$(q "$KCAR") pack $(q "$BV") $(q "$DATA/big") --key-file $(q "$K") --force"
    rec kcar.pack.big.out_bytes "$(size_of "$BV")" bytes
    measure kcar.extract.big "$BIG_RUNS" "rm -rf $(q "$T/b") && mkdir -p $(q "$T/b")" \
        "$(q "$KCAR") extract $(q "$BV") -C $(q "$T/b") --key-file $(q "$K")"
    if cmp -s "$RB" "$T/b/blob/random.bin"; then rec check.kcar_extract_big 1 ok; else
        log "WARNING: the extracted big file differs from the source"; rec check.kcar_extract_big 0 ok; fi
    rm -rf "$T/b" "$BV"
    if have gzip; then
        measure peer.pack.big_gzip1 "$BIG_RUNS" "" "gzip -1 -c $(q "$RB") > $(q "$W/big.gz")"
        rec peer.pack.big_gzip1.out_bytes "$(size_of "$W/big.gz")" bytes
        measure peer.extract.big_gzip1 "$BIG_RUNS" "" "gzip -d -c $(q "$W/big.gz") > $(q "$T/random.bin")"
        rm -f "$W/big.gz" "$T/random.bin"
    fi
    if [[ -n $GZ && $GZ != gzip ]]; then
        measure peer.pack.big_gz1 "$BIG_RUNS" "" "$(tar_pack "$DATA" big 1 "$W/big.tgz")"
        rec peer.pack.big_gz1.out_bytes "$(size_of "$W/big.tgz")" bytes
        measure peer.extract.big_gz1 "$BIG_RUNS" "rm -rf $(q "$T/g") && mkdir -p $(q "$T/g")" "$(tar_unpack "$W/big.tgz" "$T/g")"
        rm -rf "$W/big.tgz" "$T/g"
    fi
    for k in kcar.pack.big kcar.extract.big peer.pack.big_gzip1 peer.extract.big_gzip1 peer.pack.big_gz1 peer.extract.big_gz1; do
        [[ -n $(get "$k.s") ]] && rec "$k.mbps" "$(calc "$BIG_BYTES / 1e6 / $(get "$k.s")")" MB/s
    done
    [[ -n $(get kcar.pack.big.out_bytes) ]] && rec kcar.pack.big.ratio "$(calc "$(get kcar.pack.big.out_bytes) / $BIG_BYTES")" x
    row big "1 GiB incompressible: pack throughput" kcar.pack.big.mbps "gzip -1" peer.pack.big_gzip1.mbps rate
    row big "1 GiB incompressible: extract throughput" kcar.extract.big.mbps "gzip -d" peer.extract.big_gzip1.mbps rate
    row big "1 GiB incompressible: pack throughput" kcar.pack.big.mbps "tar | $GZNAME -1$ENCNAME" peer.pack.big_gz1.mbps rate
    row big "1 GiB incompressible: extract throughput" kcar.extract.big.mbps "${ENCNAME:+age -d | }$GZNAME -d | tar -x" peer.extract.big_gz1.mbps rate
    row big "1 GiB incompressible: pack peak RSS" kcar.pack.big.rss_mib "gzip -1" peer.pack.big_gzip1.rss_mib mem
    row big "1 GiB incompressible: extract peak RSS" kcar.extract.big.rss_mib "gzip -d" peer.extract.big_gzip1.rss_mib mem
    row big "1 GiB incompressible: size ratio" kcar.pack.big.ratio "" "" size
fi

# ---------------------------------------------------------------------------------------------------
# 4. 10,000 small secrets, passphrase

SEC="$DATA/secrets"
SEC_BYTES=$(bytes_of "$SEC")
SEC_FILES=$(files_of "$SEC")
rec secrets.bytes "$SEC_BYTES" bytes
rec secrets.files "$SEC_FILES" files
S7="$W/secrets.7z"
make_7z() { echo "cd $(q "$SEC") && 7z a -bd -bso0 -bsp0 -y -p$(q "$PW") -mhe=on $(q "$S7") ."; }

if want secrets; then
    log "secrets: $SEC_FILES files, $SEC_BYTES bytes, passphrase slot"
    warm "$SEC"
    if [[ -n $KCAR_BENCH ]]; then
        log "  kcar-bench kdf"
        "$KCAR_BENCH" kdf --runs 3 | tee "$W/kdf.out" | sed 's/^/    /' >&2
        rec kcar.kdf.ms "$(awk '$1 == "kdf_ms" { print $2 }' "$W/kdf.out")" ms
        rec kcar.kdf.per_open "$(awk '$1 == "kdf_per_open" { print $2 }' "$W/kdf.out")" x
        rec kcar.kdf.open_ms "$(awk '$1 == "kdf_open_vault_min_ms" { print $2 }' "$W/kdf.out")" ms
    fi
    SPV="$W/secrets-pass.kcv"
    measure kcar.pack.secrets_pass "$RUNS" "" "$(q "$KCAR") pack $(q "$SPV") $(q "$SEC") --passphrase-file $(q "$PASS") --force"
    rec kcar.pack.secrets_pass.out_bytes "$(size_of "$SPV")" bytes
    measure kcar.extract.secrets_pass "$RUNS" "rm -rf $(q "$T/s") && mkdir -p $(q "$T/s")" \
        "$(q "$KCAR") extract $(q "$SPV") -C $(q "$T/s") --passphrase-file $(q "$PASS")"
    same_tree "$SEC" "$T/s" kcar_extract_secrets
    rm -rf "$T/s"
    if [[ -n $(get kcar.kdf.ms) ]]; then
        kdf_s=$(calc "$(get kcar.kdf.ms) / 1000")
        # (clamped at 0: when the KDF is nearly all of the time, run-to-run noise can make the difference negative)
        rec kcar.pack.secrets_pass_nokdf.s "$(calc0 "$(get kcar.pack.secrets_pass.s) - $kdf_s")" s
        # An open costs kdf_per_open derivations (1 when the library derives once).
        per=$(get kcar.kdf.per_open); [[ -z $per || $per == nan ]] && per=1
        rec kcar.extract.secrets_pass_nokdf.s "$(calc0 "$(get kcar.extract.secrets_pass.s) - $kdf_s * $per")" s
    fi
    if [[ -n $HAVE_7Z ]]; then
        measure peer.pack.secrets_7z "$RUNS" "rm -f $(q "$S7")" "$(make_7z)"
        rec peer.pack.secrets_7z.out_bytes "$(size_of "$S7")" bytes
        measure peer.extract.secrets_7z "$RUNS" "rm -rf $(q "$T/s7")" "7z x -bd -bso0 -bsp0 -y -p$(q "$PW") -o$(q "$T/s7") $(q "$S7")"
        same_tree "$SEC" "$T/s7" peer_extract_secrets_7z
        rm -rf "$T/s7"
    fi
    if [[ -n $GZ ]] && have gzip; then
        SG="$W/secrets.tgz"
        measure peer.pack.secrets_tgz "$RUNS" "" "tar -cf - -C $(q "$DATA") secrets | gzip -6${ENC:+ | $ENC} > $(q "$SG")"
        rec peer.pack.secrets_tgz.out_bytes "$(size_of "$SG")" bytes
        if [[ -n $DEC ]]; then un="$DEC $(q "$SG") | gzip -d | tar -xf - -C $(q "$T/sg")"; else un="gzip -d < $(q "$SG") | tar -xf - -C $(q "$T/sg")"; fi
        measure peer.extract.secrets_tgz "$RUNS" "rm -rf $(q "$T/sg") && mkdir -p $(q "$T/sg")" "$un"
        rm -rf "$T/sg"
    fi
    for k in kcar.pack.secrets_pass peer.pack.secrets_7z peer.pack.secrets_tgz; do
        [[ -n $(get "$k.out_bytes") ]] && rec "$k.ratio" "$(calc "$(get "$k.out_bytes") / $SEC_BYTES")" x
    done
    row secrets "KDF (Argon2id, default parameters), one derivation" kcar.kdf.ms "" "" time_ms
    row secrets "KDF derivations per passphrase open" kcar.kdf.per_open "" "" count
    row secrets "pack secrets, passphrase: time" kcar.pack.secrets_pass.s "7z -p -mhe=on" peer.pack.secrets_7z.s time
    row secrets "pack secrets, passphrase: time" kcar.pack.secrets_pass.s "tar | gzip$ENCNAME" peer.pack.secrets_tgz.s time
    row secrets "pack secrets, passphrase: time without the KDF" kcar.pack.secrets_pass_nokdf.s "7z -p -mhe=on" peer.pack.secrets_7z.s time
    row secrets "pack secrets: size ratio" kcar.pack.secrets_pass.ratio "7z -p -mhe=on" peer.pack.secrets_7z.ratio size
    row secrets "pack secrets: size ratio" kcar.pack.secrets_pass.ratio "tar | gzip$ENCNAME" peer.pack.secrets_tgz.ratio size
    row secrets "extract secrets, passphrase: time" kcar.extract.secrets_pass.s "7z x -p" peer.extract.secrets_7z.s time
    row secrets "extract secrets, passphrase: time" kcar.extract.secrets_pass.s "${ENCNAME:+age -d | }gzip -d | tar -x" peer.extract.secrets_tgz.s time
    row secrets "extract secrets, passphrase: time without the KDF" kcar.extract.secrets_pass_nokdf.s "7z x -p" peer.extract.secrets_7z.s time
fi

# ---------------------------------------------------------------------------------------------------
# 5. One item out of 10,000, key file

if want item; then
    log "item: one of $SEC_FILES secrets, key file"
    SKV="$W/secrets-key.kcv"
    "$KCAR" pack "$SKV" "$SEC" --key-file "$K" --force >/dev/null
    # First and last by service, then account (the order kcar lists them in).
    (cd "$SEC" && find . -type f | sed 's|^\./||' | LC_ALL=C sort -t/ -k1,1 -k2) >"$W/names"
    FIRST=$(head -n 1 "$W/names")
    LAST=$(tail -n 1 "$W/names")
    log "  first $FIRST, last $LAST"
    quick kcar.item.first "$(q "$KCAR") extract $(q "$SKV") --stdout $(q "$FIRST") --key-file $(q "$K")"
    quick kcar.item.last "$(q "$KCAR") extract $(q "$SKV") --stdout $(q "$LAST") --key-file $(q "$K")"
    if ! cmp -s <("$KCAR" extract "$SKV" --stdout "$LAST" --key-file "$K") "$SEC/$LAST"; then
        log "WARNING: kcar extract --stdout $LAST differs from the source file"; rec check.kcar_item 0 ok
    else rec check.kcar_item 1 ok; fi
    quick kcar.list "$(q "$KCAR") list $(q "$SKV") --key-file $(q "$K")"
    quick kcar.verify "$(q "$KCAR") verify $(q "$SKV") --key-file $(q "$K")"
    if [[ -n $HAVE_7Z ]]; then
        [[ -f $S7 ]] || bash -c "$(make_7z)"
        quick peer.item.first_7z "7z e -so -p$(q "$PW") $(q "$S7") $(q "$FIRST")"
        quick peer.item.last_7z "7z e -so -p$(q "$PW") $(q "$S7") $(q "$LAST")"
        quick peer.list_7z "7z l -p$(q "$PW") $(q "$S7")"
        quick peer.verify_7z "7z t -p$(q "$PW") $(q "$S7")"
    fi
    if [[ -n $DEC ]]; then
        SG="$W/secrets.tgz"
        [[ -f $SG ]] || bash -c "tar -cf - -C $(q "$DATA") secrets | gzip -6 | $ENC > $(q "$SG")"
        quick peer.item.last_tgz "$DEC $(q "$SG") | gzip -d | tar -xOf - $(q "secrets/$LAST")"
    fi
    row item "one item (first), whole process" kcar.item.first.ms "7z e -so -p" peer.item.first_7z.ms time_ms
    row item "one item (last), whole process" kcar.item.last.ms "7z e -so -p" peer.item.last_7z.ms time_ms
    row item "one item (last), whole process" kcar.item.last.ms "age -d | gzip -d | tar -xO" peer.item.last_tgz.ms time_ms
    row item "list all items, whole process" kcar.list.ms "7z l -p" peer.list_7z.ms time_ms
    row item "verify, whole process" kcar.verify.ms "7z t -p" peer.verify_7z.ms time_ms
    if [[ -n $KCAR_BENCH ]]; then
        log "  kcar-bench items"
        "$KCAR_BENCH" items "$SKV" "$K" --runs 20 | tee "$W/items.out" | sed 's/^/    /' >&2
        for f in open open_read_first open_read_last open_list open_verify; do
            rec "kcar.inproc.$f.ms" "$(awk -v k="${f}_median_ms" '$1 == k { print $2 }' "$W/items.out")" ms
            rec "kcar.inproc.$f.min_ms" "$(awk -v k="${f}_min_ms" '$1 == k { print $2 }' "$W/items.out")" ms
        done
        row item "in process: open" kcar.inproc.open.ms "" "" time_ms
        row item "in process: open + read first item" kcar.inproc.open_read_first.ms "" "" time_ms
        row item "in process: open + read last item" kcar.inproc.open_read_last.ms "" "" time_ms
        row item "in process: open + list" kcar.inproc.open_list.ms "" "" time_ms
        row item "in process: open + verify" kcar.inproc.open_verify.ms "" "" time_ms
    fi
fi

# ---------------------------------------------------------------------------------------------------
# 6. Add one item to a vault of 10,000 items and ~100 MB, against rewriting it

if want append; then
    if [[ -n $KCAR_BENCH ]]; then
        log "append: one item to a vault of $APPEND_ITEMS items, $APPEND_MB MB"
        "$KCAR_BENCH" append "$APPEND_ITEMS" "$APPEND_MB" "$W/append" --runs 10 | tee "$W/append.out" | sed 's/^/    /' >&2
        a() { awk -v k="$1" '$1 == k { print $2 }' "$W/append.out"; }
        rec kcar.append.open_commit.ms "$(a append_open_commit_median_ms)" ms
        rec kcar.append.commit.ms "$(a append_commit_median_ms)" ms
        rec kcar.append.rewrite.ms "$(a rewrite_median_ms)" ms
        rec kcar.append.compact.ms "$(a compact_median_ms)" ms
        rec kcar.append.vault_bytes "$(a append_vault_bytes)" bytes
        rec kcar.append.growth_bytes "$(a append_growth_bytes_per_item)" bytes
        rec kcar.append.items "$APPEND_ITEMS" items
        rm -rf "$W/append"
        row append "add one item (open + durable commit) vs rewrite the vault" kcar.append.open_commit.ms "rewrite (create with all items)" kcar.append.rewrite.ms time_ms
        row append "add one item (durable commit only) vs rewrite the vault" kcar.append.commit.ms "rewrite (create with all items)" kcar.append.rewrite.ms time_ms
        row append "add one item (open + durable commit) vs compact" kcar.append.open_commit.ms "compact (copy live records)" kcar.append.compact.ms time_ms
    else
        log "append: skipped (no kcar-bench)"
    fi
fi

# ---------------------------------------------------------------------------------------------------
# Report

REPORT=(python3 "$HERE/report.py" "$RES" "$ROWS")
[[ -n $JSON_OUT ]] && REPORT+=(--json "$JSON_OUT")
"${REPORT[@]}"
