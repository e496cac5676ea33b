#!/usr/bin/env python3
"""Checks the archive fixtures (Fixtures/archive) with the independent Part 2 reader kca_reader.py.

- every golden *.kca decodes (exit 0) and, where Fixtures/archive/README.md (or SPEC §A9) says what it holds,
  decodes to that value (expected values below, in kca_reader.py's JSON mapping);
- every malformed/*.kca fails with exactly the error MANIFEST.tsv gives (and the manifest and folder agree);
- every hex vector of SPEC.md Part 2 §A9 equals its golden file byte for byte and its byte table adds up;
- a few synthetic inputs built from the spec text alone (rules no fixture covers);
- INFO lines (not counted): README.md's claim that every proper prefix of a golden file fails as truncated.

Prints one line per check and a final "archives (Part 2 reader): N passed, M failed"; exits 1 on any failure.
"""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
FIX = os.path.join(ROOT, "Fixtures", "archive")
READER = os.path.join(HERE, "kca_reader.py")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import kca_reader  # noqa: E402

passed = 0
failed = 0
QUIET = "--quiet" in sys.argv[1:]  # only failures and the final line


def check(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
        if not QUIET:
            print("PASS " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def run(path):
    p = subprocess.run([sys.executable, READER, path, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", "replace").strip(), p.stderr.decode("utf-8", "replace").strip()


def I(n):
    return {"int": n}


def D(bits_hex):
    return bits_hex


S_DICT = {"dict": [["host", "db.internal"], ["port", I(5432)]]}

EXPECTED = {
    # SPEC §A9 / README: [true, 1, 1.0, 1u]
    "distinct.kca": [True, I(1), {"double": "3ff0000000000000", "value": 1.0}, {"uint": 1}],
    # [s, s, {"host": "db.internal", "port": 5432}, s], s shared and equal to the third element
    "shared.kca": [{"shared": 0, "value": S_DICT}, {"shared": 0}, S_DICT, {"shared": 0}],
    # [[], {}, any-key {}, set [], "", data "", Empty {}]
    "empty.kca": [[], {"dict": []}, {"anyKeyDict": []}, {"set": []}, "", {"data": ""},
                  {"object": "Empty", "fields": []}],
    # README: URLs at the edges of §A5.6, with and without a base
    "urls.kca": [{"url": "mailto:"}, {"url": "//[v7.a:b]"}, {"url": "http://u:p:w@h:99999999999999999999/"},
                 {"url": "http://[::ffff:1.2.3.4]:/p"}, {"url": "a/b:c?d:e#f:g/?"},
                 {"url": "?", "base": "https://x.example/#f"}, {"url": "//h/p", "base": "https://x.example/#f"}],
    # README / §A4: two keys that differ only by U+1AEC (unassigned in Unicode 17.0.0) and U+0316 in either order
    "unicode.kca": {"dict": [["a\u0316\u1aec", I(2)], ["a\u1aec\u0316", I(1)]]},
}


def any_keys_ok(v):
    # README: an any-key dictionary whose keys are 1, "1", 1u, [1, 2] and null
    if not (isinstance(v, dict) and "anyKeyDict" in v):
        return False, "not an any-key dictionary"
    keys = [json.dumps(k, sort_keys=True) for k, _ in v["anyKeyDict"]]
    want = [json.dumps(k, sort_keys=True) for k in (I(1), "1", {"uint": 1}, [I(1), I(2)], None)]
    return sorted(keys) == sorted(want), "keys %s" % keys


def set_ok(v):
    # README: a set of ints, strings, 0.0, -0.0 and NaN
    if not (isinstance(v, dict) and "set" in v):
        return False, "not a set"
    el = v["set"]
    kinds = set()
    for e in el:
        if isinstance(e, str):
            kinds.add("string")
        elif isinstance(e, dict) and "int" in e:
            kinds.add("int")
        elif isinstance(e, dict) and "double" in e:
            kinds.add({"0000000000000000": "0.0", "8000000000000000": "-0.0"}.get(
                e["double"], "nan" if e["value"] == "nan" else "other double"))
        else:
            kinds.add("other")
    return kinds == {"int", "string", "0.0", "-0.0", "nan"}, "kinds %s" % sorted(kinds)


def scalars_ok(v):
    # README: every scalar kind at its edges: Int64/UInt64 extremes, -0.0, NaN, +-infinity, subnormal,
    # non-BMP text, canonically equivalent strings, distant dates, UUID, URL with and without base
    import unicodedata
    if not isinstance(v, list):
        return False, "not an array"
    ints = [e["int"] for e in v if isinstance(e, dict) and "int" in e]
    uints = [e["uint"] for e in v if isinstance(e, dict) and "uint" in e]
    dbl = [int(e["double"], 16) for e in v if isinstance(e, dict) and "double" in e]
    strs = [e for e in v if isinstance(e, str)]
    dates = [e["value"] for e in v if isinstance(e, dict) and "date" in e]
    missing = []
    if 2 ** 63 - 1 not in ints or -2 ** 63 not in ints:
        missing.append("Int64 extremes")
    if 2 ** 64 - 1 not in uints or 0 not in uints:
        missing.append("UInt64 extremes")
    if 0x8000000000000000 not in dbl:
        missing.append("-0.0")
    if not any((b >> 52) & 0x7FF == 0x7FF and b & ((1 << 52) - 1) for b in dbl):
        missing.append("NaN")
    if 0x7FF0000000000000 not in dbl or 0xFFF0000000000000 not in dbl:
        missing.append("+-infinity")
    if not any((b >> 52) & 0x7FF == 0 and b & ((1 << 52) - 1) for b in dbl):
        missing.append("subnormal")
    if not any(any(ord(c) > 0xFFFF for c in s) for s in strs):
        missing.append("non-BMP text")
    pairs = [(a, b) for i, a in enumerate(strs) for b in strs[i + 1:]
             if a != b and unicodedata.normalize("NFD", a) == unicodedata.normalize("NFD", b)]
    if not pairs:
        missing.append("canonically equivalent strings")
    if not (any(d <= -6.3e10 for d in dates) and any(d >= 6.3e10 for d in dates)):
        missing.append("distant dates")
    if not any(isinstance(e, dict) and "uuid" in e for e in v):
        missing.append("UUID")
    urls = [e for e in v if isinstance(e, dict) and "url" in e]
    if not (any("base" in u for u in urls) and any("base" not in u for u in urls)):
        missing.append("URL with and without base")
    if not any(e is None for e in v) or True not in v or False not in v:
        missing.append("null/bool")
    return not missing, "missing " + ", ".join(missing)


def users_ok(v):
    # README: the seed's [UserData] as objects, optional fields absent, a repeated class name, keys interned
    if not (isinstance(v, list) and len(v) >= 2 and all(isinstance(e, dict) and "object" in e for e in v)):
        return False, "not an array of objects"
    names = set(e["object"] for e in v)
    fieldsets = [tuple(n for n, _ in e["fields"]) for e in v]
    ok = names == {"UserData"} and len(set(fieldsets)) > 1
    return ok, "classes %s, field sets %s" % (sorted(names), fieldsets)


PREDICATES = {"any-keys.kca": any_keys_ok, "set.kca": set_ok, "scalars.kca": scalars_ok, "users.kca": users_ok}


def golden():
    files = sorted(f for f in os.listdir(FIX) if f.endswith(".kca"))
    readme = open(os.path.join(FIX, "README.md"), encoding="utf-8").read()
    listed = set(re.findall(r"^\| `([^`]+\.kca)` \|", readme, re.M))
    check(listed == set(files), "golden: README table lists exactly the golden files",
          "README %s vs folder %s" % (sorted(listed), files))
    for f in files:
        path = os.path.join(FIX, f)
        rc, out, err = run(path)
        check(rc == 0, "golden %s decodes" % f, out + err)
        if rc != 0:
            continue
        v = json.loads(out)
        data = open(path, "rb").read()
        check(data[5] & 1 == 1, "golden %s has the sorted flag (§A9: all written with it)" % f)
        if f in EXPECTED:
            check(v == EXPECTED[f], "golden %s holds what README/§A9 says" % f, out)
        elif f in PREDICATES:
            ok, why = PREDICATES[f](v)
            check(ok, "golden %s holds what README says" % f, why)
        else:
            check(False, "golden %s: no expectation written" % f)
        # INFO: README says every proper prefix fails as truncated
        errs = {}
        for n in range(len(data)):
            try:
                kca_reader.read_archive(data[:n])
                errs.setdefault("DECODES(!)", []).append(n)
            except kca_reader.ArchiveError as e:
                errs.setdefault(e.code, []).append(n)
        check("DECODES(!)" not in errs, "golden %s: every proper prefix is rejected" % f, str(errs.get("DECODES(!)")))
        other = {k: v for k, v in errs.items() if k != "truncated"}
        if other:
            QUIET or print("INFO golden %s: README says every proper prefix fails as truncated; per §A3 the reader gives %s"
                  % (f, "; ".join("%s for prefix lengths %s" % (k, v[:8] + (["..."] if len(v) > 8 else []))
                                  for k, v in sorted(other.items()))))
        else:
            QUIET or print("INFO golden %s: all %d proper prefixes fail as truncated" % (f, len(data)))


def malformed():
    mdir = os.path.join(FIX, "malformed")
    manifest = {}
    for line in open(os.path.join(mdir, "MANIFEST.tsv"), encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        name, code = line.split("\t")
        manifest[name] = code
    files = sorted(f for f in os.listdir(mdir) if f.endswith(".kca"))
    check(set(files) == set(manifest), "malformed: MANIFEST.tsv and folder list the same files",
          "only in folder %s, only in manifest %s" % (sorted(set(files) - set(manifest)),
                                                      sorted(set(manifest) - set(files))))
    a8 = set(A8_ERRORS)
    for name in sorted(manifest):
        check(manifest[name] in a8, "malformed %s: manifest error %r is a §A8 name" % (name, manifest[name]))
        path = os.path.join(mdir, name)
        if not os.path.exists(path):
            continue
        rc, out, err = run(path)
        want = "error: %s:" % manifest[name]
        check(rc == 1 and out.startswith(want), "malformed %s fails with %s" % (name, manifest[name]),
              "rc=%d %s %s" % (rc, out, err))


A8_ERRORS = ["not an archive", "unsupported version", "reserved flags set", "truncated", "trailing bytes",
             "unknown tag", "non-minimal varint", "non-canonical encoding", "invalid UTF-8", "invalid value",
             "duplicate key", "bad reference", "cycle", "count exceeds input", "depth limit exceeded",
             "value count limit exceeded", "size limit exceeded", "length limit exceeded",
             "expansion limit exceeded", "non-starter run limit exceeded", "sort key limit exceeded"]


def vectors():
    spec = open(os.path.join(ROOT, "SPEC.md"), encoding="utf-8").read()
    part2 = spec[spec.index("\n# Part 2."):]
    # the §A8 table names
    a8 = part2[part2.index("## A8."):part2.index("## A9.")]
    names = []
    for row in re.findall(r"^\| ([^|]+) \| [^|]+ \|$", a8, re.M)[1:]:
        names.extend(n.strip() for n in row.split(","))
    check(sorted(names) == sorted(A8_ERRORS), "§A8 error names are the ones the reader uses", str(names))
    found = re.findall(r"<!-- vector:([^ ]+) -->\s*```\n(.*?)```(.*?)(?=<!-- vector:|## A10)", part2, re.S)
    check(len(found) == 3, "§A9 has 3 hex vectors", str([f[0] for f in found]))
    for name, hexblock, after in found:
        hx = "".join(hexblock.split())
        path = os.path.join(FIX, name)
        data = open(path, "rb").read() if os.path.exists(path) else None
        check(data is not None and data.hex() == hx.lower(), "§A9 vector %s equals the golden file" % name,
              "spec %s file %s" % (hx, data.hex() if data else None))
        # the byte table after the vector, where it has one, adds up (rows with an ellipsis skipped)
        rows = re.findall(r"^\| ((?:`[^`]*` ?)+) \|", after, re.M)
        if rows:
            concat = ""
            complete = True
            for r in rows:
                cell = "".join(re.findall(r"`([^`]*)`", r))
                if "…" in cell:
                    complete = False
                    # match the visible prefix and suffix against the vector
                    pre, suf = cell.split("…")
                    pre, suf = "".join(pre.split()), "".join(suf.split())
                    rest = hx[len(concat):]
                    m = re.match(re.escape(pre) + r"([0-9a-f]*?)" + re.escape(suf), rest)
                    # the elided part ends where the next row starts: take the shortest match
                    # that lets the remaining rows continue; approximated by the length prefix of a string
                    if m and pre.startswith("06"):
                        ln = int(pre[2:4], 16)
                        concat += rest[:4 + 2 * ln]
                    else:
                        concat += pre
                else:
                    concat += "".join(cell.split())
            check(concat == hx, "§A9 vector %s: byte table adds up to the vector%s"
                  % (name, "" if complete else " (elided string expanded by its length)"),
                  "table %s vs vector %s" % (concat, hx))
        try:
            v = kca_reader.to_json(kca_reader.read_archive(bytes.fromhex(hx)))
            check(v == EXPECTED.get(name), "§A9 vector %s decodes to the value its prose describes" % name, str(v))
        except kca_reader.ArchiveError as e:
            check(False, "§A9 vector %s decodes" % name, str(e))


def url_examples():
    """The examples table of §A5.6, through the reader: as 0x0B, as 0x0C's relative string, as 0x0C's base."""
    spec = open(os.path.join(ROOT, "SPEC.md"), encoding="utf-8").read()
    table = spec.split("<!-- url-examples -->\n")[1].split("\n\n")[0]
    rows = [[c.strip() for c in r.strip("|").split("|")] for r in table.splitlines()[2:]]
    check(len(rows) >= 40, "§A5.6 has at least 40 URL examples", str(len(rows)))
    U = bytes.fromhex("894b43410100")

    def slot(b):
        return b"\x00" + bytes([len(b)]) + b

    for cells in rows:
        s = cells[0][1:-1].encode("utf-8")
        forms = ((U + b"\x0b" + slot(s)), (U + b"\x0c" + slot(s) + slot(b"https://x.example/")),
                 (U + b"\x0c" + slot(b"a") + slot(s)))
        for label, data, verdict in zip(("0x0B", "0x0C relative", "0x0C base"), forms, cells[1:4]):
            try:
                kca_reader.read_archive(data)
                got = "valid"
            except kca_reader.ArchiveError as e:
                got = "invalid" if e.code == "invalid value" else e.code
            check(got == verdict, "§A5.6 example %s as %s is %s" % (cells[0], label, verdict), "got " + got)


def synthetic():
    """Rules no fixture exercises, built from the spec text."""
    H = bytes.fromhex("894b43410101")  # sorted
    U = bytes.fromhex("894b43410100")  # unsorted
    cases = [
        ("5-byte header, magic agrees", bytes.fromhex("894b434101"), "truncated"),
        ("3-byte input, magic disagrees", bytes.fromhex("894b44"), "not an archive"),
        ("truncated varint", U + bytes.fromhex("0480"), "truncated"),
        ("11-byte varint", U + bytes.fromhex("04" + "ff" * 10 + "00"), "non-minimal varint"),
        ("data length > DATA_MAX", U + bytes.fromhex("0881808008"), "length limit exceeded"),
        ("data length > bytes left", U + bytes.fromhex("0805aa"), "truncated"),
        ("sorted: canonically equal keys (é, e+U+0301 in byte order)",
         H + bytes.fromhex("0e02" "000365cc8100" "0002c3a900"), "duplicate key"),
        ("sorted: equal keys by reference (order before distinctness)", H + bytes.fromhex("0e0200016b000100"),
         "non-canonical encoding"),
        ("sorted set: é precomposed then decomposed (sort keys ascend by length)",
         H + bytes.fromhex("100206" "02c3a9" "060365cc81"), "duplicate key"),
        ("set: two equal shared values are duplicates",
         U + bytes.fromhex("1002120012" "00"), "duplicate key"),
        ("set: a shared value and its contents are distinct", U + bytes.fromhex("10021200" "00"), None),
        ("sorted any-key: sort key uses a new string although the key is written as a reference",
         H + bytes.fromhex("0d02060161" "0f02" "070000" "06016200"), None),
        ("sorted any-key: keys out of sort-key order", H + bytes.fromhex("0f02" "030400" "030200"),
         "non-canonical encoding"),
        ("object: class name by reference to empty string", U + bytes.fromhex("0d02060011010000"), "invalid value"),
        ("URL with base", U + bytes.fromhex("0c000161001268747470733a2f2f782e6578616d706c652f"), None),
        ("URL '1a:b' (colon in first segment, not a scheme)", U + bytes.fromhex("0b000431613a62"), "invalid value"),
        ("URL with bad %-escape", U + bytes.fromhex("0b0003257a7a"), "invalid value"),
        ("URL empty", U + bytes.fromhex("0b0000"), "invalid value"),
        ("object count x 2 > bytes left", U + bytes.fromhex("1100014103" "0000"), "count exceeds input"),
        ("reference to a complete definition", U + bytes.fromhex("0d0212001300"), None),
        ("0x0C both slots truncated", U + bytes.fromhex("0c00"), "truncated"),
    ]
    for name, data, want in cases:
        try:
            kca_reader.read_archive(data)
            got = None
        except kca_reader.ArchiveError as e:
            got = e.code
        check(got == want, "synthetic: %s -> %s" % (name, want or "decodes"), "got %s" % got)
    settled()
    hardening()
    # lowered limits (§A3: an application MAY lower them)
    shared = open(os.path.join(FIX, "shared.kca"), "rb").read()
    for lim, want in ((dict(EXPANSION_MAX=15), "expansion limit exceeded"), (dict(EXPANSION_MAX=16), None),
                      (dict(VALUES_MAX=9), "value count limit exceeded"), (dict(VALUES_MAX=10), None),
                      (dict(DEPTH_MAX=3), "depth limit exceeded"), (dict(DEPTH_MAX=4), None),
                      (dict(STRING_MAX=10), "length limit exceeded"), (dict(STRING_MAX=11), None),
                      (dict(ARCHIVE_MAX=51), "size limit exceeded"), (dict(ARCHIVE_MAX=52), None)):
        try:
            kca_reader.read_archive(shared, lim)
            got = None
        except kca_reader.ArchiveError as e:
            got = e.code
        check(got == want, "synthetic: shared.kca with %s -> %s" % (lim, want or "decodes"), "got %s" % got)


def hardening():
    """The limits of issue 9 (§A3): DEPTH_MAX with references expanded, NONSTARTER_RUN_MAX, SORT_KEYS_MAX,
    on the archives kcar's tests craft (ArchiveCrafting)."""
    enc = kca_reader.enc_varint
    U = bytes.fromhex("894b43410100")

    def chain(n, tail=b""):  # [d0 = def null, d(i) = def [ref d(i-1)]]: d(i) stands for 2i + 2 levels
        out = U + b"\x0d" + enc(n + (1 if tail else 0)) + b"\x12\x00"
        for i in range(1, n):
            out += b"\x12\x0d\x01\x13" + enc(i - 1)
        return out + tail

    def key(base, marks):  # {base + marks alternating U+0301 U+0316: null}
        k = (base + "".join("\u0301" if i % 2 == 0 else "\u0316" for i in range(marks))).encode("utf-8")
        return U + b"\x0e\x01\x00" + enc(len(k)) + k + b"\x00"

    def shared_data_in_set(size, n):  # sorted [d = def data, {[ref d, int i]...}]
        out = bytes.fromhex("894b43410101") + b"\x0d\x02\x12\x08" + enc(size) + b"A" * size + b"\x10" + enc(n)
        for i in sorted(enc(2 * i) for i in range(1, n + 1)):
            out += b"\x0d\x02\x13\x00\x03" + i
        return out

    def shared_key(size, n):  # [{k: null} x n], k written once then referenced
        out = U + b"\x0d" + enc(n) + b"\x0e\x01\x00" + enc(size) + b"k" * size + b"\x00"
        return out + b"\x0e\x01\x01\x00" * (n - 1)

    cases = [
        ("chain of 255 definitions (512 levels)", chain(255), None, None),
        ("chain of 256 definitions (514 levels)", chain(256), None, "depth limit exceeded"),
        ("chain of 200 definitions, then an unknown tag", chain(200, b"\xff"), None, "unknown tag"),
        ("key of a and 30 marks", key("a", 30), None, None),
        ("key of a and 31 marks", key("a", 31), None, "non-starter run limit exceeded"),
        ("key of U+00C0 and 30 marks", key("\u00c0", 30), None, "non-starter run limit exceeded"),
        ("key of U+1E69 and 29 marks", key("\u1e69", 29), None, "non-starter run limit exceeded"),
        ("key of U+0344 x 15 (30)", key("a" + "\u0344" * 15, 0), None, None),
        ("key of U+0344 x 16 (32)", key("a" + "\u0344" * 16, 0), None, "non-starter run limit exceeded"),
        ("31 marks, NONSTARTER_RUN_MAX 31", key("a", 31), dict(NONSTARTER_RUN_MAX=31), None),
        ("shared data in 60 set elements, sort keys of 60,480 bytes", shared_data_in_set(1000, 60),
         dict(SORT_KEYS_MAX=60480), None),
        ("the same, SORT_KEYS_MAX one less", shared_data_in_set(1000, 60), dict(SORT_KEYS_MAX=60479),
         "sort key limit exceeded"),
        ("one key in 50 dictionaries, 50,000 bytes of string uses", shared_key(1000, 50),
         dict(STRING_USES_MAX=50000), None),
        ("the same, STRING_USES_MAX one less", shared_key(1000, 50), dict(STRING_USES_MAX=49999),
         "expansion limit exceeded"),
        ("a sort key counts the string its reference names (206 bytes)",
         bytes.fromhex("894b43410101" "1001" "0d02" "0664") + b"x" * 100 + bytes.fromhex("0700"),
         dict(SORT_KEYS_MAX=206), None),
        ("the same, SORT_KEYS_MAX 205",
         bytes.fromhex("894b43410101" "1001" "0d02" "0664") + b"x" * 100 + bytes.fromhex("0700"),
         dict(SORT_KEYS_MAX=205), "sort key limit exceeded"),
        ("{{[1, 2]}}: elements weighing 3 + 4", U + bytes.fromhex("1001" "1001" "0d02" "0302" "0304"),
         dict(ELEMENT_WEIGHT_MAX=7), None),
        ("the same, ELEMENT_WEIGHT_MAX 6", U + bytes.fromhex("1001" "1001" "0d02" "0302" "0304"),
         dict(ELEMENT_WEIGHT_MAX=6), "expansion limit exceeded"),
        ("{[\"ab\"]: [2]}: a key weighing 4", U + bytes.fromhex("0f01" "0d01060261620d010304"),
         dict(ELEMENT_WEIGHT_MAX=4), None),
        ("the same, ELEMENT_WEIGHT_MAX 3", U + bytes.fromhex("0f01" "0d01060261620d010304"),
         dict(ELEMENT_WEIGHT_MAX=3), "expansion limit exceeded"),
        ("a set of a shared array of 3: the element weighs 1", U + bytes.fromhex("0d02" "120d03000000" "10011300"),
         dict(ELEMENT_WEIGHT_MAX=1), None),
        ("nested sets: 14 bytes of sort keys", bytes.fromhex("894b43410101" "1001" "1002" "0302" "0304"),
         dict(SORT_KEYS_MAX=14), None),
        ("nested sets, SORT_KEYS_MAX 13", bytes.fromhex("894b43410101" "1001" "1002" "0302" "0304"),
         dict(SORT_KEYS_MAX=13), "sort key limit exceeded"),
    ]
    for name, data, lim, want in cases:
        try:
            kca_reader.read_archive(data, lim)
            got = None
        except kca_reader.ArchiveError as e:
            got = e.code
        check(got == want, "hardening: %s -> %s" % (name, want or "decodes"), "got %s" % got)


def settled():
    """The precedence and counting rules settled in §A2, §A3, §A5.5 and §A7 (once open points of the draft);
    the same inputs as Tests/KeyedArchiveTests/PrecedenceTests.swift."""
    H = bytes.fromhex("894b43410101")  # sorted
    U = bytes.fromhex("894b43410100")  # unsorted
    arrays = bytes.fromhex("0d01") * 511
    cases = [
        # §A2: a short header is truncated unless a magic byte differs; version/flags bytes not looked at
        ("5-byte header with version 2", bytes.fromhex("894b434102"), None, "truncated"),
        ("4-byte header", bytes.fromhex("894b4341"), None, "truncated"),
        ("empty input", b"", None, "truncated"),
        ("5 bytes, magic differs", bytes.fromhex("894b434202"), None, "not an archive"),
        ("version and reserved flags both bad", bytes.fromhex("894b434102fe"), None, "unsupported version"),
        ("5-byte header over ARCHIVE_MAX 4", bytes.fromhex("894b434102"), dict(ARCHIVE_MAX=4), "size limit exceeded"),
        # §A3: the length limit before the bytes left
        ("string length > STRING_MAX and > input", U + bytes.fromhex("0681808008"), None, "length limit exceeded"),
        ("URL slot length > STRING_MAX and > input", U + bytes.fromhex("0b0081808008"), None,
         "length limit exceeded"),
        # §A3: count exceeds input before VALUES_MAX; the container counts; any-key count is count
        ("count 2,000,000 in 0 bytes", U + bytes.fromhex("0d80897a"), None, "count exceeds input"),
        ("count over input and VALUES_MAX 3", U + bytes.fromhex("0d050000"), dict(VALUES_MAX=3),
         "count exceeds input"),
        ("count over VALUES_MAX 3 only", U + bytes.fromhex("0d050000000000"), dict(VALUES_MAX=3),
         "value count limit exceeded"),
        ("array of 2 in VALUES_MAX 3", U + bytes.fromhex("0d020000"), dict(VALUES_MAX=3), None),
        ("array of 2 in VALUES_MAX 2, checked before the elements", U + bytes.fromhex("0d02ff00"),
         dict(VALUES_MAX=2), "value count limit exceeded"),
        ("any-key of 2 in VALUES_MAX 4 passes the count check", U + bytes.fromhex("0f02ff000000"),
         dict(VALUES_MAX=4), "unknown tag"),
        ("any-key of 2 in VALUES_MAX 4: the 5th item", U + bytes.fromhex("0f02000102ff"), dict(VALUES_MAX=4),
         "value count limit exceeded"),
        ("any-key of 2 in VALUES_MAX 5", U + bytes.fromhex("0f0200010203" "02"), dict(VALUES_MAX=5), None),
        # §A3: a reference adds E(def); other items add 1 before the tag is checked
        ("reference adds E(def) = 2: total 5", U + bytes.fromhex("0d0212001300"), dict(EXPANSION_MAX=5), None),
        ("reference adds E(def) = 2: total 5 > 4", U + bytes.fromhex("0d0212001300"), dict(EXPANSION_MAX=4),
         "expansion limit exceeded"),
        ("unknown tag counted before it is checked", U + bytes.fromhex("0d01ff"), dict(EXPANSION_MAX=1),
         "expansion limit exceeded"),
        ("unknown tag within the budget", U + bytes.fromhex("0d01ff"), dict(EXPANSION_MAX=2), "unknown tag"),
        ("bad reference before its expansion", U + bytes.fromhex("0d0212001301"), dict(EXPANSION_MAX=3),
         "bad reference"),
        ("reference to an open definition", U + bytes.fromhex("121300"), None, "cycle"),
        # §A5.5: in a sorted archive order first, then distinctness
        ("sorted: equal field names", H + bytes.fromhex("110001430200016b000200"), None, "non-canonical encoding"),
        ("unsorted: equal field names", U + bytes.fromhex("110001430200016b000200"), None, "duplicate key"),
        ("sorted: equal set elements", H + bytes.fromhex("10020000"), None, "non-canonical encoding"),
        ("unsorted: equal set elements", U + bytes.fromhex("10020000"), None, "duplicate key"),
        ("sorted: equal any-key keys", H + bytes.fromhex("0f0200000000"), None, "non-canonical encoding"),
        ("unsorted: equal any-key keys", U + bytes.fromhex("0f0200000000"), None, "duplicate key"),
        ("sorted: é then e+U+0301 as keys (bytes descend)", H + bytes.fromhex("0e02" "0002c3a900" "000365cc8100"),
         None, "non-canonical encoding"),
        ("sorted set: e+U+0301 then é (sort keys descend)", H + bytes.fromhex("1002" "060365cc81" "0602c3a9"),
         None, "non-canonical encoding"),
        # §A7: depth and VALUES_MAX before the tag; a key slot before its value's depth check
        ("value due at depth 513, input ends", U + arrays + bytes.fromhex("0e0100" "0161"), None,
         "depth limit exceeded"),
        ("string tag at depth 513, length missing", U + arrays + bytes.fromhex("0d0106"), None,
         "depth limit exceeded"),
        ("key slot cut off at depth 512", U + arrays + bytes.fromhex("0e01000561"), None, "truncated"),
        ("string tag at depth 512, length missing", U + arrays + bytes.fromhex("06"), None, "truncated"),
        ("third item due with VALUES_MAX 2, input ends", U + bytes.fromhex("1212"), dict(VALUES_MAX=2),
         "value count limit exceeded"),
        ("third item due with VALUES_MAX 3, input ends", U + bytes.fromhex("1212"), dict(VALUES_MAX=3), "truncated"),
        ("object: empty class name before the count", U + bytes.fromhex("11000009"), None, "invalid value"),
    ]
    for name, data, lim, want in cases:
        try:
            kca_reader.read_archive(data, lim)
            got = None
        except kca_reader.ArchiveError as e:
            got = e.code
        check(got == want, "settled: %s%s -> %s" % (name, " with %s" % lim if lim else "", want or "decodes"),
              "got %s" % got)


def main():
    sys.setrecursionlimit(20000)
    vectors()
    url_examples()
    golden()
    malformed()
    synthetic()
    print("archives (Part 2 reader): %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
