#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ (outside SwiftPM: swiftc -sanitize=fuzzer,address) and runs them.
#
#   scripts/fuzz/run.sh [TARGET|all|build] [SECONDS]     TARGET: header index record archive plist cli page der
#
# Environment: FUZZ_RUNS=N (stop after N executions instead of SECONDS), FUZZ_JOBS=N (N fuzzing processes
# in parallel; default 1), FUZZ_RSS_MB (2048), FUZZ_MALLOC_MB (= FUZZ_RSS_MB), FUZZ_TIMEOUT (seconds per
# input, 10), FUZZ_ARGS (more libFuzzer flags), FUZZ_OUT (build and corpus folder, .build-fuzz).
# Everything runs under `nice -n 19`. See Fuzz/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${FUZZ_OUT:-$ROOT/.build-fuzz}
ALL_TARGETS=(header index record archive plist cli page der)
what=${1:-all}
seconds=${2:-60}
NICE=(nice -n 19)

case "$what" in
all | build) targets=("${ALL_TARGETS[@]}") ;;
header | index | record | archive | plist | cli | page | der) targets=("$what") ;;
*) echo "usage: $0 [header|index|record|archive|plist|cli|page|der|all|build] [SECONDS]" >&2; exit 2 ;;
esac

# The modules, instrumented and with -enable-testing, so that the targets reach internal API with
# `@testable import`. -O keeps Swift's bounds and overflow checks (only -Ounchecked drops them).
SWIFTC=(swiftc -O -g -sanitize=fuzzer,address -package-name kcar -parse-as-library)
CFLAGS=(-I "$ROOT/Sources/CSodium" -I "$ROOT/Sources/CZlib" -I "$ROOT/Sources/CDeflate" -I "$ROOT/Sources/CLinux")
MOD="$OUT/modules"
mkdir -p "$MOD" "$OUT/bin"

quiet() { grep -v -e "Cannot export local symbol" -e "^$" || true; }

# Rebuilds module $1 from the sources in Sources/$1 if any of them (or a module it imports) is newer.
module() {
	local name=$1; shift
	local lib="$MOD/lib$name.a"
	if [ -f "$lib" ] && [ -z "$(find "$ROOT/Sources/$name" "$@" -newer "$lib" -print -quit 2>/dev/null)" ]; then return; fi
	echo "building module $name"
	# An archive is added to, not replaced: objects of a renamed or removed source would stay in it and clash.
	rm -f "$lib"
	# Every source below the module's folder, as SwiftPM takes them (KcarKeychain has Compatibility/).
	local sources
	mapfile -t sources < <(find "$ROOT/Sources/$name" -name '*.swift' | sort)
	# A failed build (a source edited while it ran) can leave an archive newer than its sources, which the
	# check above would then take for current: remove it.
	if ! "${NICE[@]}" "${SWIFTC[@]}" -swift-version 6 -enable-testing -module-name "$name" -emit-library -static \
		-emit-module -emit-module-path "$MOD/$name.swiftmodule" -o "$lib" -I "$MOD" "${CFLAGS[@]}" \
		"${sources[@]}" 2>&1 | quiet; then
		rm -f "$lib"
		return 1
	fi
	[ -f "$lib" ]
}
module VaultFormat
module KeyedArchive
module KcarKeychain "$MOD/libVaultFormat.a" "$MOD/libKeyedArchive.a"
module KcarCLI "$MOD/libVaultFormat.a" "$MOD/libKeyedArchive.a" "$MOD/libKcarKeychain.a"
# The seeds of header, archive and plist are crafted (Sources/Crafting, a test-support module).
module Crafting "$MOD/libVaultFormat.a" "$MOD/libKeyedArchive.a"

# Each target: Fuzz/Common.swift + Fuzz/<target>.swift (+ the vault seed helper for index and record, the
# value helpers for archive and plist).
build_target() {
	local t=$1
	local srcs=("$ROOT/Fuzz/Common.swift" "$ROOT/Fuzz/$t.swift")
	case $t in
	index | record) srcs+=("$ROOT/Fuzz/VaultSeeds.swift") ;;
	archive | plist) srcs+=("$ROOT/Fuzz/ArchiveValues.swift") ;;
	esac
	local exe="$OUT/bin/fuzz-$t"
	if [ -f "$exe" ] && [ -z "$(find "${srcs[@]}" "$MOD"/*.a -newer "$exe" -print -quit)" ]; then return; fi
	echo "building fuzz-$t"
	"${NICE[@]}" "${SWIFTC[@]}" -swift-version 5 -module-name "Fuzz_$t" "${srcs[@]}" -I "$MOD" -L "$MOD" \
		-lKcarCLI -lKcarKeychain -lCrafting -lKeyedArchive -lVaultFormat "${CFLAGS[@]}" -lsodium -lz -ldeflate \
		-o "$exe" 2>&1 | quiet
	[ -f "$exe" ]
}
for t in "${targets[@]}"; do build_target "$t"; done
[ "$what" = build ] && exit 0

# Largest input per target: a header is at most 64 KiB; records hold several compressed 1 MiB chunks. An index
# segment is decoded entry by entry, and 16 KiB holds a hundred entries and more (enough for the sorts and table
# growth of a large state); at 64 KiB the corpus grew to inputs of 30 KiB and an execution cost ten times as much
# (Fuzz/README: the two runs of 2026-12-07).
max_len() {
	case $1 in
	header) echo 70000 ;; record) echo 131072 ;; cli) echo 4096 ;; der) echo 8192 ;; index) echo 16384 ;; *) echo 65536 ;;
	esac
}

# Seeds: fixture files copied as they are, and inputs the target writes itself (KCAR_FUZZ_SEEDS).
seed() {
	local t=$1 dir="$OUT/seeds/$1"
	rm -rf "$dir"
	mkdir -p "$dir"
	local shared="$ROOT/../shared/fixtures/apple-nskeyedarchiver"
	case $t in
	header) cp "$ROOT"/Fixtures/vault/*.kcv "$ROOT"/Fixtures/vault/malformed/*.kcv "$dir"/ ;;
	archive) cp "$ROOT"/Fixtures/archive/*.kca "$ROOT"/Fixtures/archive/malformed/*.kca "$dir"/ ;;
	der) cp "$ROOT"/Fixtures/certs/*.der "$ROOT"/Fixtures/certs/malformed/*.der "$dir"/ ;;
	plist)
		cp "$ROOT"/Fixtures/nskeyed/*.bplist "$ROOT"/Fixtures/nskeyed/*.plist "$ROOT"/Fixtures/nskeyed/*.bin "$dir"/
		if [ -d "$shared" ]; then cp "$shared"/* "$dir"/; fi
		;;
	esac
	if [ -d "$ROOT/Fixtures/fuzz/$t" ]; then cp "$ROOT/Fixtures/fuzz/$t"/* "$dir"/; fi
	KCAR_FUZZ_SEEDS="$dir" KCAR_FUZZ_REPO="$ROOT" SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 "${NICE[@]}" "$OUT/bin/fuzz-$t" >/dev/null
}

rss=${FUZZ_RSS_MB:-2048}
for t in "${targets[@]}"; do
	seed "$t"
	corpus="$OUT/corpus/$t" artifacts="$OUT/artifacts/$t" work="$OUT/work/$t"
	mkdir -p "$corpus" "$artifacts" "$work"
	flags=(-rss_limit_mb="$rss" -malloc_limit_mb="${FUZZ_MALLOC_MB:-$rss}" -timeout="${FUZZ_TIMEOUT:-10}"
		-max_len="$(max_len "$t")" -artifact_prefix="$artifacts/" -print_final_stats=1)
	if [ -n "${FUZZ_RUNS:-}" ]; then flags+=(-runs="$FUZZ_RUNS"); else flags+=(-max_total_time="$seconds"); fi
	if [ -f "$ROOT/Fuzz/dict/$t.dict" ]; then flags+=(-dict="$ROOT/Fuzz/dict/$t.dict"); fi
	jobs=${FUZZ_JOBS:-1}
	if [ "$jobs" -gt 1 ]; then flags+=(-jobs="$jobs" -workers="$jobs"); fi
	# shellcheck disable=SC2086
	echo "fuzzing $t: ${flags[*]} ${FUZZ_ARGS:-}"
	# The Swift runtime's backtracer would hold libFuzzer's output pipe open after a crash: off.
	(cd "$work" && SWIFT_BACKTRACE=enable=no "${NICE[@]}" "$OUT/bin/fuzz-$t" "${flags[@]}" ${FUZZ_ARGS:-} "$corpus" "$OUT/seeds/$t" \
		2>&1 | tee "$OUT/$t.log" | grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^(stat::|==[0-9]+==|SUMMARY|Fatal error|artifact_prefix|Done)" || true)
	if [ "${PIPESTATUS[0]:-0}" != 0 ] || grep -q "^==[0-9]*== ERROR\|deadly signal\|Test unit written" "$OUT/$t.log"; then
		echo "fuzz-$t FOUND A PROBLEM: see $OUT/$t.log and $artifacts/" >&2
		exit 1
	fi
done
