#!/usr/bin/env bash
# Keyed archiver benchmark (issue 3): kcar's KeyedArchive against Foundation's coders, in one process.
#
#   scripts/bench/archive-bench.sh [--no-build] [kcar-archive-bench options]
#
#   --no-build         run the existing release binary (default: scripts/swift-release
#                      --package-path Benchmarks --product kcar-archive-bench)
#   --runs N           runs per timing; the median is reported, after one warm-up run (default 7)
#   --records N        section 1: Codable records, ArchiveEncoder/Decoder vs JSONEncoder/Decoder,
#                      size vs PropertyListEncoder (binary) and JSON (default 10000)
#   --nska-records N   section 2: NSDictionary records, NSKeyedArchiver vs ArchiveEncoder and
#                      NSKeyedArchive.exportValue, also at N/4 and N/2 for the trend (default 1000)
#   --nska-budget S    section 2: seconds of NSKeyedArchiver runs per size; fewer runs when one run is slow,
#                      a size is skipped when one run is predicted over 4 x S (default 90)
#   --import-records N section 3: NSKeyedArchive.importValue vs NSKeyedUnarchiver (default 10000)
#   --only LIST        sections to run, e.g. 1,3 (default 1,2,3)
#   --seed N           record generator seed
#
# Output: `name value unit` lines (`#` lines are comments), then a table of kcar, the peer measured in the
# same run and their ratio, and which of the issue's targets are met. The whole run takes about 3 minutes
# (most of it NSKeyedArchiver, whose time grows with the square of the record count on Linux).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=1
ARGS=()
while (($#)); do
    case $1 in
    --no-build) BUILD=0 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) ARGS+=("$1") ;;
    esac
    shift
done

cd "$REPO"
if [[ $BUILD == 1 ]]; then
    echo "[$(date +%H:%M:%S)] scripts/swift-release --package-path Benchmarks --product kcar-archive-bench" >&2
    scripts/swift-release --package-path Benchmarks --product kcar-archive-bench >&2
fi
BIN="$(swift build -c release --package-path Benchmarks --show-bin-path)/kcar-archive-bench"
[[ -x $BIN ]] || { echo "archive-bench.sh: no binary at $BIN (run without --no-build)" >&2; exit 1; }
echo "[$(date +%H:%M:%S)] $BIN ${ARGS[*]:-}" >&2
exec "$BIN" ${ARGS[@]+"${ARGS[@]}"}
