#!/usr/bin/python3
"""Runs kcar2_reader.py (written from SPEC.md Part 4 alone) over the golden version 2 fixtures in Fixtures/vault-v2.

Golden vaults must verify and hold what EXPECTED.json says (items with class, typed attributes and value;
tombstone and history counts); every live item must be found again by primary key, descending the items
tree in at most its height in pages; every value of an indexed attribute must find exactly its items
through the attributes tree. Malformed vaults must fail as malformed/MANIFEST.tsv says (stage `open`: reading
fails with the error; stage `verify`: verification fails with it). The version 1 reader (kcar_reader.py)
must refuse every version 2 file as *unsupported version*, and the version 2 reader must still read the
version 1 goldens. The SPEC.md V10 vectors must be what the reader's key codec computes.
Prints one line per failed check (every check without --quiet) and `N passed, M failed`.
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
VAULTS = os.path.join(FIX, "vault-v2")
MALFORMED = os.path.join(VAULTS, "malformed")
KEYS = os.path.join(FIX, "keys")
READER2 = os.path.join(HERE, "kcar2_reader.py")
READER1 = os.path.join(HERE, "kcar_reader.py")

sys.path.insert(0, HERE)


import check_fixtures as v1checks  # noqa: E402  (its helpers and its results list, which this script counts in)

PY = v1checks.PY
KEYFILE = ["--key-file", os.path.join(KEYS, "keyfile.key")]
OTHER = ["--key-file", os.path.join(KEYS, "other.key")]
v1checks.QUIET = "--quiet" in sys.argv[1:]
record, error_name, short = v1checks.record, v1checks.error_name, v1checks.short
results = v1checks.results


def run(reader, vault, args):
    p = subprocess.run([PY, reader, vault] + args, capture_output=True, timeout=600)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


# EXPECTED.json gives attributes as [type, value], data in hex; the reader's JSON gives values (data in
# base64) and their types apart.
def expected_item(e):
    attrs = {}
    for name, (t, v) in e["attributes"].items():
        attrs[name] = (t, bytes.fromhex(v).hex() if t == "data" else v)
    if "value_hex" in e:
        return (e["class"], tuple(sorted(attrs.items())), e["value_hex"])
    return (e["class"], tuple(sorted(attrs.items())), (e["size"], e["blake2b"]))


def read_item(d, value):
    import base64
    attrs = {}
    for name, v in d["attributes"].items():
        t = d["attribute_types"][name]
        attrs[name] = (t, base64.b64decode(v).hex() if t == "data" else v)
    if len(value) <= 32:
        return (d["class"], tuple(sorted(attrs.items())), value.hex())
    return (d["class"], tuple(sorted(attrs.items())), (len(value), hashlib.blake2b(value, digest_size=32).hexdigest()))


def check_golden(name, want):
    import kcar2_reader as r2
    import kcar_reader as r1
    path = os.path.join(VAULTS, name)
    label = "golden %s" % name
    if not os.path.exists(path):
        record(False, label, "missing")
        return
    rc, out, err = run(READER2, path, KEYFILE + ["--verify"])
    record(rc == 0, label + " verify", short(out + err if rc == 0 else err))
    rc, out, err = run(READER2, path, KEYFILE + ["--dump-json"])
    if rc != 0:
        record(False, label + " dump", short(err))
        return
    dump = json.loads(out)
    # Values are read in-process (the JSON carries only short values).
    vf = r1.VaultFile(path)
    h = r1.read_header(vf, versions=(2,))
    r1.unlock(h, "key", open(os.path.join(KEYS, "keyfile.key"), "rb").read())
    v = r2.open_vault2(vf, h)
    state = r2.full_state(v)
    live = [it for it in state[r2.TREE_ITEMS].values() if not it.tombstone]
    vals = r2.read_values(v, live, keep_bytes=1 << 20)
    by_id = {it.item_id.hex(): it for it in live}
    got = sorted(read_item(d, vals[id(by_id[d["id"]])][1]) for d in dump["items"])
    exp = sorted(expected_item(e) for e in want["items"])
    if got != exp:
        missing = [x for x in exp if x not in got][:2]
        extra = [x for x in got if x not in exp][:2]
        record(False, label + " contents", "%d items, expected %d; missing %s; unexpected %s" % (
            len(got), len(exp), missing, extra))
    else:
        record(True, label + " contents", "%d items as EXPECTED.json says" % len(got))
    counts = (len(dump["tombstones"]), len(dump["history"]))
    record(counts == (want["tombstones"], want["history"]), label + " tombstones and history",
           "%d tombstones, %d history entries (expected %d, %d)" % (counts + (want["tombstones"], want["history"])))
    rc, out, err = run(READER2, path, KEYFILE + ["--history"])
    hist = json.loads(out) if rc == 0 else None
    record(rc == 0 and len(hist["history"]) == want["history"] and len(hist["tombstones"]) == want["tombstones"],
           label + " --history", short(err) if rc else "")
    # V8.1: the root's garbage count is a hint that readers accept whatever it is; a fold that starts its
    # file (creation, compaction, rekey, upgrade) holds nothing dead, and its writer counts 0.
    first = v.fold.previous == r2.NONE64
    record(not first or v.root.garbage == 0, label + " garbage hint",
           "the root counts %d garbage bytes%s" % (v.root.garbage, " (the file's first commit: 0)" if first else ""))

    # Every live item by primary key: a descent of the items tree's height in pages, plus the next leaf
    # when the key range begins at a leaf's end (the descent cannot know it without reading that leaf).
    height = v.heights[r2.TREE_ITEMS]
    worst, bad, extra = 0, [], 0
    for it in live:
        given = {}
        schema = v.root.schema.get(it.cls, [])
        attrs = {n: (t, x) for n, t, x in it.attrs}
        for n, dt, dv in schema:
            given[n] = attrs.get(n, (dt, dv))
        found, pages = r2.get_by_primary_key(v, it.cls, given)
        worst = max(worst, pages)
        extra += pages > height
        if it.item_id not in [f.item_id for f in found if not f.tombstone] or pages > height + (1 if height else 0):
            bad.append(it.item_id.hex())
    record(not bad, label + " lookups by primary key",
           "%d items, each found reading at most %d pages (items tree of height %d; %d lookups read the next leaf "
           "too)%s" % (len(live), worst, height, extra, "; not found or too many pages: %s" % bad[:3] if bad else ""))
    if name == "many-items.kcv":
        rc, out, err = run(READER2, path, KEYFILE + ["--get", "genp", "svce=svc.7", "acct=user1227"])
        g = json.loads(out) if rc == 0 else {}
        ok = rc == 0 and len(g["items"]) == 1 and g["items"][0]["attributes"]["acct"] == "user1227" and g["pages_read"] == 2
        record(ok, label + " --get genp svc.7/user1227", "pages read: %s" % g.get("pages_read") if rc == 0 else short(err))

    # Every value of an indexed attribute finds exactly the live items that have it.
    if v.root.indexed:
        want_by = {}
        for it in live:
            for n, t, x in it.attrs:
                if r2.is_indexed(v.root, n):
                    want_by.setdefault((n, t, x if not isinstance(x, bytes) else x), set()).add(it.item_id)
        wrong = []
        for (n, t, x), ids in want_by.items():
            found, pages = r2.find_by_attr(v, n, t, x)
            if set(f.item_id for f in found) != ids:
                wrong.append("%s=%r" % (n, x))
        record(not wrong, label + " finds by indexed attribute",
               "%d (name, value) pairs%s" % (len(want_by), "; wrong: %s" % wrong[:3] if wrong else ""))
        rc, out, err = run(READER2, path, KEYFILE + ["--find", "@team=ops"])
        if rc == 0:
            n_ops = len(json.loads(out)["items"])
            exp_ops = sum(1 for e in want["items"] if e["attributes"].get("@team") == ["string", "ops"])
            record(n_ops == exp_ops, label + " --find @team=ops", "%d items (expected %d)" % (n_ops, exp_ops))
        else:
            record(False, label + " --find @team=ops", short(err))

    # The version 1 reader refuses it before anything else; other.key opens nothing.
    rc, out, err = run(READER1, path, KEYFILE + ["--list"])
    record(rc == 1 and error_name(err) == "unsupported version", label + " refused by the version 1 reader", short(err))
    rc, out, err = run(READER2, path, OTHER + ["--list"])
    record(rc == 1 and error_name(err) == "wrong passphrase or key", label + " [other.key] refused", short(err))


def check_malformed():
    for name, stage, expected, label, path in v1checks.manifest_rows(MALFORMED):
        if stage == "open":
            rc, out, err = run(READER2, path, KEYFILE + ["--list"])
        elif stage == "verify":
            # This reader reads every tree whole when it lists, so it may fail before verification does.
            rc, out, err = run(READER2, path, KEYFILE + ["--verify"])
        else:
            record(False, label, "unknown stage %r" % stage)
            continue
        record(rc == 1 and error_name(err) == expected, label, short(err))


def check_v1_goldens():
    for f in ("one-item.kcv", "commits.kcv"):
        rc, out, err = run(READER2, os.path.join(FIX, "vault", f), KEYFILE + ["--verify"])
        record(rc == 0, "version 1 golden %s read by the version 2 reader" % f, short(out if rc == 0 else err))


def check_spec_vectors():
    """SPEC.md V10: typed key values and the item key, computed by this reader's key codec."""
    import kcar2_reader as r2
    text = open(os.path.join(ROOT, "SPEC.md"), encoding="utf-8").read()
    part = text[text.index("## V10."):]
    want = {
        'string `"a\\u{0}b"`': r2.typed_key(1, "a\x00b"),
        "integer −1": r2.typed_key(2, -1),
        "bool true": r2.typed_key(3, True),
        "date 0 ns": r2.typed_key(4, 0),
        "data (empty)": r2.typed_key(5, b""),
    }
    for label, enc in want.items():
        m = re.search(r"^\| %s \| `([0-9a-f ]+)` \|" % re.escape(label), part, re.M)
        ok = m is not None and bytes.fromhex(m.group(1).replace(" ", "")) == enc
        record(ok, "SPEC.md V10 vector %s" % label, "" if ok else "SPEC %s, reader %s" % (m and m.group(1), enc.hex()))
    m = re.search(r"absent = `0b101` \(5\), key\s*\n\s*\n`([0-9a-f ]+)`", part)
    key = (r2.ordered_bytes(b"genp") + r2.typed_key(3, False) + r2.typed_key(1, "gh") + r2.typed_key(1, "") +
           bytes(range(16)))
    ok = m is not None and bytes.fromhex(m.group(1).replace(" ", "")) == key
    record(ok, "SPEC.md V10 item key vector", "" if ok else "SPEC %s, reader %s" % (m and m.group(1), key.hex()))
    # The index root vector: parsed by this reader, it is the root the text describes.
    m = re.search(r"a garbage count of 300 \(V8.1\), checked by\s*\n`[^`]*`:\s*\n\s*\n`([0-9a-f ]+)`", part)
    ok, got = False, "no vector"
    if m is not None:
        try:
            root = r2.parse_root(bytes.fromhex(m.group(1).replace(" ", "")))
            got = (root.schema_order, root.clock, root.keep, root.days, root.tombstone_days, root.garbage, root.indexed)
            ok = got == (["genp"], 0, 10, 90, 90, 300, []) and [n for n, _, _ in root.schema["genp"]] == ["svce", "acct"]
        except r2.Bad as e:
            got = "rejected: %s" % e
    record(ok, "SPEC.md V10 index root vector", "" if ok else str(got))


def main():
    expected = json.load(open(os.path.join(VAULTS, "EXPECTED.json"), encoding="utf-8"))
    present = sorted(f for f in os.listdir(VAULTS) if f.endswith(".kcv"))
    for f in present:
        if f not in expected:
            record(False, "golden %s" % f, "not in EXPECTED.json")
    for name, want in expected.items():
        check_golden(name, want)
    check_malformed()
    check_v1_goldens()
    check_spec_vectors()
    passed = sum(1 for r in results if r)
    failed = len(results) - passed
    print("interop v2 (SPEC.md Part 4 reader, golden fixtures): %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
