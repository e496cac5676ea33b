#!/usr/bin/python3
"""Runs kcar_reader.py (written from SPEC.md alone) over every fixture in Fixtures/.

Golden vaults must open, list, dump and verify with the keys Fixtures/README.md names; malformed
vaults must fail as MANIFEST.tsv says (stage `open`: opening fails with the error; stage `verify`:
opening succeeds, verify fails with the error). Prints one line per check and `N passed, M failed`.
"""

import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
FIX = os.path.join(ROOT, "Fixtures")
VAULTS = os.path.join(FIX, "vault")
MALFORMED = os.path.join(VAULTS, "malformed")
KEYS = os.path.join(FIX, "keys")
READER = os.path.join(HERE, "kcar_reader.py")


def python_with_nacl():
    try:
        import nacl.bindings  # noqa: F401
        return sys.executable
    except ImportError:
        return "/usr/bin/python3"


PY = python_with_nacl()

KEYFILE = ["--key-file", os.path.join(KEYS, "keyfile.key")]
OTHER = ["--key-file", os.path.join(KEYS, "other.key")]
X25519 = ["--key-file", os.path.join(KEYS, "x25519.key")]
PASS = ["--passphrase-file", os.path.join(KEYS, "passphrase.txt")]

# Fixtures/README.md, "Golden vaults": file -> the secrets that open it.
GOLDEN = {
    "one-item.kcv": [KEYFILE],
    "empty.kcv": [KEYFILE],
    "many-items.kcv": [KEYFILE],
    "multi-chunk.kcv": [KEYFILE],
    "passphrase.kcv": [PASS],
    "x25519.kcv": [X25519],
    "slots.kcv": [PASS, KEYFILE, X25519],
    "commits.kcv": [KEYFILE],
    "unknown-field.kcv": [KEYFILE],
}

results = []


QUIET = "--quiet" in sys.argv[1:]


def record(ok, name, detail=""):
    results.append(ok)
    if not ok or not QUIET:
        print("%s  %s%s" % ("PASS" if ok else "FAIL", name, ("  -- " + detail) if detail else ""))


def run(vault, secret, mode):
    p = subprocess.run([PY, READER, vault] + secret + [mode], capture_output=True, timeout=600)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def error_name(stderr):
    m = re.search(r"^error: ([a-z ]+?): ", stderr, re.M)
    return m.group(1) if m else None


def short(s):
    s = s.strip().replace("\n", " | ")
    return s if len(s) < 400 else s[:400] + "..."


def sha(b):
    return hashlib.sha256(b).hexdigest()


def check_golden():
    present = sorted(f for f in os.listdir(VAULTS) if f.endswith(".kcv"))
    for f in present:
        if f not in GOLDEN:
            record(False, "golden %s" % f, "not described in Fixtures/README.md")
    for f, secrets in GOLDEN.items():
        path = os.path.join(VAULTS, f)
        if not os.path.exists(path):
            record(False, "golden %s" % f, "missing")
            continue
        for secret in secrets:
            label = "golden %s [%s]" % (f, os.path.basename(secret[1]))
            rc, out, err = run(path, secret, "--verify")
            if rc != 0:
                record(False, label + " verify", short(err))
                continue
            rc, out, err = run(path, secret, "--dump-json")
            if rc != 0:
                record(False, label + " dump", short(err))
                continue
            try:
                dump = json.loads(out)
            except ValueError as e:
                record(False, label + " dump", "bad JSON: %s" % e)
                continue
            problem = content_problem(f, dump)
            record(problem is None, label, problem or "%d items, generation %d" % (
                len(dump["items"]), dump["generation"]))
        # README: other.key opens none of the vaults.
        rc, out, err = run(path, OTHER, "--list")
        name = error_name(err)
        record(rc == 1 and name == "wrong passphrase or key", "golden %s [other.key] refused" % f,
               "" if name == "wrong passphrase or key" else "rc=%d %s" % (rc, short(err)))


def by_name(dump):
    return {"%s/%s" % (i["attributes"].get("svce"), i["attributes"].get("acct")): i for i in dump["items"]}


JAN1 = 1767225600 * 10 ** 9  # 2026-01-01T00:00:00Z in ns


def content_problem(f, dump):
    """Spot checks of the contents Fixtures/README.md and SPEC.md §12 describe."""
    items = by_name(dump)
    for i in dump["items"]:
        if i["class"] != "genp" or set(i["attributes"]) - {"svce", "acct", "mdat", "labl"}:
            return "unexpected class/attributes in %s" % i["id"]
        if "mdat" not in i["attributes"]:
            # README says every item has svce, acct, mdat; the hand-crafted unknown-field.kcv has no mdat.
            if f != "unknown-field.kcv":
                return "item %s has no mdat" % i["id"]
        elif i["attribute_types"]["mdat"] != "date" or i["attributes"]["mdat"] < JAN1:
            return "mdat of %s is not a date from 2026-01-01" % i["id"]
    if f in ("one-item.kcv", "passphrase.kcv", "x25519.kcv", "slots.kcv", "unknown-field.kcv"):
        it = items.get("example.com/alice")
        if len(items) != 1 or it is None or it["sha256"] != sha(b"hunter2") or it["size"] != 7:
            return "expected one item example.com/alice = hunter2"
        if f == "one-item.kcv":
            if dump["group"] != "com.example.shared" or it["attributes"]["mdat"] != JAN1:
                return "group/mdat differ from SPEC.md §12"
    elif f == "empty.kcv":
        if items:
            return "expected no items"
    elif f == "many-items.kcv":
        if len(dump["items"]) != 302:
            return "expected 302 items, got %d" % len(dump["items"])
        e = items.get("svc.x/empty")
        if e is None or e["size"] != 0 or e["sha256"] != sha(b""):
            return "svc.x/empty missing or not empty"
        if "svc.x/ünïcødé/名前" not in items:
            return "unicode item missing"
        for n in range(300):
            if "svc.%d/user%d/token" % (n % 10, n) not in items:
                return "svc.%d/user%d/token missing" % (n % 10, n)
    elif f == "multi-chunk.kcv":
        it = items.get("big/file.bin")
        if len(items) != 1 or it is None or it["size"] != 2098152:
            return "expected big/file.bin of 2,098,152 bytes"
    elif f == "commits.kcv":
        names = sorted(items)
        want = ["app/a%d" % i for i in (0, 1, 3, 4, 5, 6)]
        if names != want:
            return "items %s, expected %s" % (names, want)
        if items["app/a1"]["sha256"] != sha(b"one, changed"):
            return "a1 is not 'one, changed'"
        if items["app/a3"]["attributes"].get("labl") != "third":
            return "a3 has no label 'third'"
        if dump["generation"] != 5:
            return "generation %d, expected 5" % dump["generation"]
    return None


def check_spec_vector():
    """SPEC.md §12 reproduces one-item.kcv; the bytes must match the fixture."""
    text = open(os.path.join(ROOT, "SPEC.md"), encoding="utf-8").read()
    m = re.search(r"<!-- vector:one-item.kcv -->\s*```\s*\n(.*?)```", text, re.S)
    if not m:
        record(False, "SPEC.md §12 vector", "not found")
        return
    vec = bytes.fromhex("".join(m.group(1).split()))
    fix = open(os.path.join(VAULTS, "one-item.kcv"), "rb").read()
    record(vec == fix, "SPEC.md §12 vector == one-item.kcv", "" if vec == fix else "bytes differ")


def manifest_rows(folder):
    """(name.kcv, stage, expected error, label, path) of each file MANIFEST.tsv lists and that exists; records a
    failure for a bad line, a missing file, and a file it does not list."""
    listed = set()
    for line in open(os.path.join(folder, "MANIFEST.tsv"), encoding="utf-8"):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 3:
            record(False, "MANIFEST line %r" % line, "fewer than 3 columns")
            continue
        name, stage, expected = cols[0], cols[1], cols[2]
        if not name.endswith(".kcv"):
            name += ".kcv"  # MANIFEST.tsv names the files without their extension
        listed.add(name)
        path = os.path.join(folder, name)
        label = "malformed %s (%s: %s)" % (name, stage, expected)
        if not os.path.exists(path):
            record(False, label, "file missing")
            continue
        yield name, stage, expected, label, path
    for f in sorted(os.listdir(folder)):
        if f.endswith(".kcv") and f not in listed:
            record(False, "malformed %s" % f, "not listed in MANIFEST.tsv")


def check_malformed():
    for name, stage, expected, label, path in manifest_rows(MALFORMED):
        rc, out, err = run(path, KEYFILE, "--list")
        if stage == "open":
            got = error_name(err)
            ok = rc == 1 and got == expected
            record(ok, label, short(err))
        elif stage == "verify":
            if rc != 0:
                record(False, label, "open failed: rc=%d %s" % (rc, short(err)))
                continue
            rc, out, err = run(path, KEYFILE, "--verify")
            got = error_name(err)
            ok = rc == 1 and got == expected
            record(ok, label, short(err))
        else:
            record(False, label, "unknown stage %r" % stage)


def main():
    check_spec_vector()
    check_golden()
    check_malformed()
    passed = sum(1 for r in results if r)
    failed = len(results) - passed
    print("interop (SPEC.md reader): %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
