#!/usr/bin/env bash
# Issue 25's figures: one secret stored and looked up through `secret-tool` (libsecret, the encrypted session),
# served by `kcar secret-service` and by gnome-keyring-daemon, each on a private session bus of its own, in the
# same run (hyperfine medians); then a lookup among N items (default 10,000) in each. The items are put in place,
# not timed, by `kcar import --items` for kcar and secretstorage's create_item over the bus for gnome-keyring,
# which rewrites its whole keyring file for each item: filling it is quadratic (about 2 minutes at 10,000, hours
# at 100,000).
# Then kcar alone among BIG items (default 100,000): its first lookup (the daemon lists the group), the median of
# the next ones, and the daemon's resident memory after them.
# Usage: scripts/bench/secret-service-bench.sh [--runs N] [--items N] [--big N] [--json FILE]
#   --json FILE   also write the medians as {"figures": {"kcar.store.ms": {"value": ..., "unit": "ms"}, ...}}
#                 (scripts/bench/table.py reads it)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=21
ITEMS=10000
BIG=100000
JSON_OUT=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) RUNS="$2"; shift ;;
        --items) ITEMS="$2"; shift ;;
        --big) BIG="$2"; shift ;;
        --json) JSON_OUT="$2"; shift ;;
        *) echo "usage: $0 [--runs N] [--items N] [--big N] [--json FILE]" >&2; exit 2 ;;
    esac
    shift
done
for p in hyperfine secret-tool dbus-daemon gnome-keyring-daemon; do
    command -v "$p" >/dev/null || { echo "$0: $p is not installed (make test-deps, and hyperfine)" >&2; exit 1; }
done
scripts/swift-release --product kcar >/dev/null
scripts/swift-release --product kcar-secret-service >/dev/null
K=$PWD/.build/release/kcar
W=$(mktemp -d)
# Each bus's pid is in its folder (bus() runs in a command substitution, a subshell): stopping the buses stops
# the servers on them.
cleanup() {
    for f in "$W"/*/pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
    rm -rf "$W"
}
trap cleanup EXIT
printf '# %s, %s cores; secret-tool of libsecret %s\n' "$(date -u +%FT%TZ)" "$(nproc)" \
    "$(dpkg-query -W -f '${Version}' libsecret-tools 2>/dev/null || echo '?')"

# A private bus with HOME and XDG_DATA_HOME of its own; prints its address.
bus() {
    mkdir -p "$W/$1/home"
    dbus-daemon --session --fork --print-address=1 --print-pid=3 3>"$W/$1/pid" >"$W/$1/address"
    cat "$W/$1/address"
}
A_KCAR=$(bus kcar)
A_GNOME=$(bus gnome)
env_of() { echo "HOME=$W/$1/home XDG_DATA_HOME=$W/$1/home/.local/share KCAR_KEYCHAIN=$W/$1/kc DBUS_SESSION_BUS_ADDRESS=$2"; }
E_KCAR=$(env_of kcar "$A_KCAR")
E_GNOME=$(env_of gnome "$A_GNOME")
env $E_KCAR "$K" secret-service --background 2>/dev/null
env $E_GNOME sh -c 'printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1'
until [ -f "$W/gnome/home/.local/share/keyrings/login.keyring" ]; do sleep 0.1; done
for e in "$E_KCAR" "$E_GNOME"; do printf 'v' | env $e secret-tool store --label=bench app bench key one; done

echo "## one secret: store and lookup through secret-tool"
hyperfine -N --runs "$RUNS" --warmup 3 --export-json "$W/one.json" \
    -n kcar.store "env $E_KCAR sh -c 'printf v | secret-tool store --label=bench app bench key one'" \
    -n gnome-keyring.store "env $E_GNOME sh -c 'printf v | secret-tool store --label=bench app bench key one'" \
    -n kcar.lookup "env $E_KCAR secret-tool lookup app bench key one" \
    -n gnome-keyring.lookup "env $E_GNOME secret-tool lookup app bench key one" >/dev/null

# N items as secret-tool would store them, in kcar's item file format, at $2.
items_file() {
python3 - "$1" "$2" <<'PY'
import base64, sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write('{"format": "kcar-items", "version": 1, "items": [')
    for i in range(n):
        f.write(("," if i else "") + '{"class": "genp", "attributes": {"svce": "org.freedesktop.Secret.Generic", '
                '"acct": "%032x", "@xdg:schema": "org.freedesktop.Secret.Generic", "@app": "many", "@key": "k%d"}, '
                '"value": "%s"}\n' % (i, i, base64.b64encode(b"value %d" % i).decode()))
    f.write("]}\n")
PY
}

echo "## lookup among $ITEMS items"
items_file "$ITEMS" "$W/items.json"
env $E_KCAR "$K" import --items "$W/items.json" --group kcar >/dev/null 2>&1
env $E_GNOME /usr/bin/python3 - "$ITEMS" <<'PY'
import sys
import secretstorage
n = int(sys.argv[1])
bus = secretstorage.dbus_init()
c = secretstorage.get_default_collection(bus)
for i in range(n):
    c.create_item("many", {"app": "many", "key": "k%d" % i}, b"value %d" % i)
PY
MID=$((ITEMS / 2))
hyperfine -N --runs "$RUNS" --warmup 2 --export-json "$W/many.json" \
    -n kcar.lookup_among_n "env $E_KCAR secret-tool lookup app many key k$MID" \
    -n gnome-keyring.lookup_among_n "env $E_GNOME secret-tool lookup app many key k$MID" >/dev/null
python3 - "$JSON_OUT" "$ITEMS" "$W/one.json" "$W/many.json" <<'PY'
import json, sys
r = {}
for path in sys.argv[3:]:
    for x in json.load(open(path))["results"]:
        r[x["command"]] = x["median"] * 1000
for k, v in r.items():
    print("%-32s %8.2f ms" % (k, v))
for what in ["store", "lookup", "lookup_among_n"]:
    print("ratio %-26s %8.2f (gnome-keyring / kcar)" % (what, r["gnome-keyring." + what] / r["kcar." + what]))
if sys.argv[1]:
    figures = {k + ".ms": {"value": v, "unit": "ms"} for k, v in r.items()}
    figures["kcar.lookup_among_n.items"] = {"value": int(sys.argv[2]), "unit": "items"}
    json.dump({"figures": figures}, open(sys.argv[1], "w"), indent=1)
PY

echo "## kcar alone: lookup among $BIG items"
A_BIG=$(bus big)
E_BIG=$(env_of big "$A_BIG")
items_file "$BIG" "$W/big.json"
env $E_BIG "$K" import --items "$W/big.json" --group kcar >/dev/null 2>&1
rm -f "$W/big.json"
env $E_BIG "$K" secret-service --background 2>/dev/null
MID=$((BIG / 2))
start=$(date +%s%N)
[ "$(env $E_BIG secret-tool lookup app many key k$MID)" = "value $MID" ]
echo "first lookup (a daemon just started): $(( ($(date +%s%N) - start) / 1000000 )) ms"
hyperfine -N --runs "$RUNS" --warmup 2 --export-json "$W/big.json" \
    -n "kcar.lookup_among_$BIG" "env $E_BIG secret-tool lookup app many key k$MID" >/dev/null
python3 - "$W/big.json" "$JSON_OUT" "$BIG" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))["results"][0]
print("%-32s %8.2f ms" % (x["command"], x["median"] * 1000))
if sys.argv[2]:
    out = json.load(open(sys.argv[2]))
    out["figures"]["kcar.lookup_among_big.ms"] = {"value": x["median"] * 1000, "unit": "ms"}
    out["figures"]["kcar.lookup_among_big.items"] = {"value": int(sys.argv[3]), "unit": "items"}
    json.dump(out, open(sys.argv[2], "w"), indent=1)
PY
PID=$(env $E_BIG dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.GetConnectionUnixProcessID string:org.freedesktop.secrets | awk '/uint32/ {print $2}')
echo "daemon resident memory after: $(( $(awk '/VmRSS/ {print $2}' /proc/$PID/status) / 1024 )) MiB (VmHWM $(( $(awk '/VmHWM/ {print $2}' /proc/$PID/status) / 1024 )) MiB)"
