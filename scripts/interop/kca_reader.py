#!/usr/bin/env python3
"""Independent strict reader of the kcar archive format (SPEC.md Part 2, "kcar archive format, version 1").

Written from SPEC.md Part 2 (and Part 1 §1 conventions) alone; python3 stdlib only, plus the Unicode
17.0.0 table beside it (unicode-17.0.0-nfd.txt, §A4).

Usage:  kca_reader.py FILE [--json]
  exit 0: prints the decoded value as JSON (indented without --json, compact with --json)
  exit 1: prints  "error: <§A8 error name>: detail"
  exit 2: I/O or usage problem ("error: io: ..."), or an internal bug ("error: internal: ...")

JSON mapping of the value model (§A4) -- faithful, every kind is distinguishable:
  null                 -> null
  bool                 -> true / false
  int                  -> {"int": N}            (exact JSON integer, signed 64-bit)
  uint                 -> {"uint": N}           (exact JSON integer, unsigned 64-bit)
  double               -> {"double": "<16 hex digits of the bit pattern>", "value": float|"nan"|"inf"|"-inf"}
  string               -> JSON string (the exact UTF-8 text, never normalized)
  data                 -> {"data": "<hex>"}
  date                 -> {"date": "<16 hex digits of the bit pattern>", "value": seconds since 2001 (as double)}
  uuid                 -> {"uuid": "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"} (lower case, bytes in order)
  url                  -> {"url": "<relative string>"}  or  {"url": "<relative>", "base": "<base absolute string>"}
  array                -> JSON array
  dictionary           -> {"dict": [[key, value], ...]}      (archive order)
  any-key dictionary   -> {"anyKeyDict": [[key, value], ...]} (archive order)
  set                  -> {"set": [element, ...]}            (archive order)
  object               -> {"object": "<class name>", "fields": [[name, value], ...]}
  shared               -> first use (its definition): {"shared": INDEX, "value": <contents>}
                          every later use (a reference): {"shared": INDEX}
                          INDEX is the shared-table index (§A5.3); identity = same INDEX.

Rules that were guesses G1-G8 before SPEC.md Part 2 settled them (the "RULE" comments in the code point at
these; none is a guess any more):
  G1  (§A2) header shorter than 6 bytes: "truncated" whenever the available bytes agree with the magic; a
      present version or flags byte is not looked at (89 4B 43 41 02 is "truncated").
  G2  (§A3) length > STRING_MAX/DATA_MAX *and* > bytes left: "length limit exceeded" (the limit is checked
      before the bytes left).
  G3  (§A3) a container's count: first "count exceeds input", then items read so far (the container
      included) + count > VALUES_MAX is "value count limit exceeded"; count is the number of entries for
      every container, an any-key dictionary included (not 2 x count; its items are still counted one by one).
  G4  (§A3) expansion: a reference adds E(def) only (not 1 + E(def)); every other item adds 1 right after
      its tag is read, before the tag is checked (so an unknown tag can first break EXPANSION_MAX).
  G5  (§A5.5, §A6) in a sorted archive the order check comes before the distinctness check (equal keys in a
      sorted archive are "non-canonical encoding"); dictionary-key / field-name checks happen when the key
      slot is read, set / any-key checks when the element / key item is complete.
  G6  (§A4) canonical equivalence is that of Unicode 17.0.0, whatever Python's own Unicode version: NFD
      from unicode-17.0.0-nfd.txt (nfd17), applied to string values, dictionary keys, field names and class
      names; URL strings are ASCII and compare bytewise.
  G7  (§A5.6) URL strings: the ABNF of §A5.6 as regular expressions: 0x0B's string a non-empty
      URI-reference; 0x0C's base a URI (scheme required, fragment allowed), checked first, then its relative
      string a non-empty relative-ref (no scheme). Both slots of 0x0C are read before either is checked.
  G8  (§A7) depth and VALUES_MAX are checked before the tag is read (so running out of input where an item
      is due at depth 513 is "depth limit exceeded", not "truncated"); a dictionary entry's or object
      field's key slot is read before the depth check of its value.

Rules added by issue 9 (§A3): DEPTH_MAX bounds the value with references expanded (a reference at depth d
to a definition of height h reaches d + h - 1, checked after its cycle check, before its expansion);
NONSTARTER_RUN_MAX bounds the run of non-starters in the NFD of every new string (checked after its UTF-8,
before its repeat check); SORT_KEYS_MAX bounds the bytes of every sort key computed, nested ones included,
a string reference in a sort key counting the bytes it names; STRING_USES_MAX bounds the bytes of strings
at every use (new, after its repeat check, or referenced, after its index check); ELEMENT_WEIGHT_MAX bounds
the weight (element_weight) of set elements and any-key keys at every level, checked when the element is
complete, before its sort key.
"""

import json
import math
import os
import re
import struct
import sys

ARCHIVE_MAX = 67108864
DEPTH_MAX = 512
VALUES_MAX = 1000000
EXPANSION_MAX = 10000000
STRING_MAX = 16777216
DATA_MAX = 16777216
NONSTARTER_RUN_MAX = 30
SORT_KEYS_MAX = 67108864
STRING_USES_MAX = 67108864
ELEMENT_WEIGHT_MAX = 33554432

MAGIC = b"\x89KCA"


class ArchiveError(Exception):
    def __init__(self, code, detail):
        Exception.__init__(self, code + ": " + detail)
        self.code = code
        self.detail = detail


# --- value representation -------------------------------------------------------------------------------
# Plain values are tuples whose first element is the kind:
#   ("null",) ("bool", b) ("int", n) ("uint", n) ("double", bits) ("string", bytes) ("data", bytes)
#   ("date", bits) ("uuid", bytes16) ("url", rel_bytes, base_bytes_or_None) ("array", [v])
#   ("dict", [(key_bytes, v)]) ("anykey", [(k, v)]) ("set", [v]) ("object", class_bytes, [(name_bytes, v)])
# Shared values are Shared instances (identity = the Python object).

class Shared(object):
    __slots__ = ("index", "value", "complete", "expanded", "height")

    def __init__(self, index):
        self.index = index
        self.value = None
        self.complete = False
        self.expanded = 0
        self.height = 0


# --- Unicode 17.0.0 NFD (§A4) ----------------------------------------------------------------------------
# Python's unicodedata has its own Unicode version (14.0.0 in Python 3.11), so the reader carries 17.0.0's
# data: unicode-17.0.0-nfd.txt lists every code point with a non-zero combining class or a decomposition;
# every other code point, unassigned ones included, has class 0 and stands for itself.

def _load_unicode():
    ccc, decomposition = {}, {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "unicode-17.0.0-nfd.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fields = line.split()
            cp = int(fields[0], 16)
            if int(fields[1]):
                ccc[cp] = int(fields[1])
            if len(fields) > 2:
                decomposition[cp] = [int(x, 16) for x in fields[2:]]
    return ccc, decomposition


_CCC, _DECOMPOSITION = _load_unicode()


def nfd17(s):
    """The NFD of s under Unicode 17.0.0 (UAX #15), as a tuple of code points."""
    out = []
    for ch in s:
        cp = ord(ch)
        if 0xAC00 <= cp <= 0xD7A3:  # Hangul syllable: L V [T]
            i = cp - 0xAC00
            out.append(0x1100 + i // 588)
            out.append(0x1161 + (i % 588) // 28)
            if i % 28:
                out.append(0x11A7 + i % 28)
        else:
            out.extend(_DECOMPOSITION.get(cp, (cp,)))
    # canonical ordering: a stable sort by class of every run of non-zero classes
    i = 0
    while i < len(out):
        if _CCC.get(out[i], 0) == 0:
            i += 1
            continue
        j = i
        while j < len(out) and _CCC.get(out[j], 0):
            j += 1
        out[i:j] = sorted(out[i:j], key=lambda c: _CCC[c])
        i = j
    return tuple(out)


def longest_nonstarter_run(s):
    """The longest run of consecutive non-starters (class not 0) in the NFD of s (Unicode 17.0.0), without
    building it: a code point adds its decomposition's leading non-starters to the run; one whose
    decomposition holds a starter ends the run, and starts the next with its trailing non-starters."""
    run = longest = 0
    for ch in s:
        d = _DECOMPOSITION.get(ord(ch), (ord(ch),))  # Hangul syllables decompose to starters: themselves
        classes = [_CCC.get(c, 0) for c in d]
        if all(classes):
            run += len(classes)
        else:
            trail = 0
            for c in reversed(classes):
                if not c:
                    break
                trail += 1
            run = trail
        longest = max(longest, run)
    return longest


def element_weight(v):
    """§A3: every value of v counts 1, plus the bytes of a string, data, URL strings, dictionary keys, class
    and field names; a shared value counts 1 (its contents are not weighed)."""
    w = 0
    stack = [v]
    while stack:
        x = stack.pop()
        w += 1
        if isinstance(x, Shared):
            continue
        k = x[0]
        if k in ("string", "data"):
            w += len(x[1])
        elif k == "url":
            w += len(x[1]) + len(x[2] or b"")
        elif k in ("array", "set"):
            stack.extend(x[1])
        elif k == "dict":
            for kb, y in x[1]:
                w += len(kb)
                stack.append(y)
        elif k == "anykey":
            for a, b in x[1]:
                stack.append(a)
                stack.append(b)
        elif k == "object":
            w += len(x[1])
            for n, y in x[2]:
                w += len(n)
                stack.append(y)
    return w


# --- canonical-equivalence equality classes (§A4 / §A5.5) ----------------------------------------------

class Equality(object):
    """Maps a value to a small integer; two values get the same integer iff they are equal under §A4."""

    def __init__(self):
        self.intern = {}
        self.shared_cache = {}

    def _id(self, key):
        i = self.intern.get(key)
        if i is None:
            i = len(self.intern)
            self.intern[key] = i
        return i

    @staticmethod
    def nfd(b):
        # §A4: canonical equivalence of Unicode 17.0.0, whatever Python's own Unicode version.
        return nfd17(b.decode("utf-8"))

    def cls(self, v):
        if isinstance(v, Shared):
            c = self.shared_cache.get(id(v))
            if c is None:
                c = self._id(("shared", self.cls(v.value)))
                self.shared_cache[id(v)] = c
            return c
        k = v[0]
        if k in ("null", "bool", "int", "uint", "double", "data", "date", "uuid", "url"):
            return self._id(v)
        if k == "string":
            return self._id(("string", self.nfd(v[1])))
        if k == "array":
            return self._id(("array", tuple(self.cls(x) for x in v[1])))
        if k == "dict":
            return self._id(("dict", tuple(sorted((self.nfd(kb), self.cls(x)) for kb, x in v[1]))))
        if k == "anykey":
            return self._id(("anykey", frozenset((self.cls(a), self.cls(b)) for a, b in v[1])))
        if k == "set":
            return self._id(("set", frozenset(self.cls(x) for x in v[1])))
        if k == "object":
            return self._id(("object", self.nfd(v[1]),
                             tuple(sorted((self.nfd(n), self.cls(x)) for n, x in v[2]))))
        raise AssertionError("unknown kind " + repr(k))


# --- writer used for sort keys (§A6) ---------------------------------------------------------------------

def enc_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def sort_key(value, budget=None):
    """Encoding of value as a root item with empty string and shared tables, in canonical order, no header.
    Values reaching here come from a sorted archive whose nested containers were already checked to be in
    canonical order, but we sort again anyway so the function is correct for any value. budget, a one-item
    list, holds the SORT_KEYS_MAX bytes left: this key and those computed inside it count against it."""
    if budget is None:
        budget = [SORT_KEYS_MAX]

    def sk(x):
        return sort_key(x, budget)

    strings = {}
    shared = {}
    out = bytearray()
    referenced = [0]  # bytes the string references name: they count against SORT_KEYS_MAX too (§A3)

    def new_or_ref_item(b):
        i = strings.get(b)
        if i is None:
            strings[b] = len(strings)
            out.append(0x06)
            out.extend(enc_varint(len(b)))
            out.extend(b)
        else:
            referenced[0] += len(b)
            out.append(0x07)
            out.extend(enc_varint(i))

    def slot(b):
        i = strings.get(b)
        if i is None:
            strings[b] = len(strings)
            out.append(0x00)
            out.extend(enc_varint(len(b)))
            out.extend(b)
        else:
            referenced[0] += len(b)
            out.extend(enc_varint(i + 1))

    def w(v):
        if isinstance(v, Shared):
            i = shared.get(id(v))
            if i is None:
                shared[id(v)] = len(shared)
                out.append(0x12)
                w(v.value)
            else:
                out.append(0x13)
                out.extend(enc_varint(i))
            return
        k = v[0]
        if k == "null":
            out.append(0x00)
        elif k == "bool":
            out.append(0x02 if v[1] else 0x01)
        elif k == "int":
            n = v[1]
            out.append(0x03)
            out.extend(enc_varint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF))
        elif k == "uint":
            out.append(0x04)
            out.extend(enc_varint(v[1]))
        elif k == "double":
            out.append(0x05)
            out.extend(struct.pack("<Q", v[1]))
        elif k == "string":
            new_or_ref_item(v[1])
        elif k == "data":
            out.append(0x08)
            out.extend(enc_varint(len(v[1])))
            out.extend(v[1])
        elif k == "date":
            out.append(0x09)
            out.extend(struct.pack("<Q", v[1]))
        elif k == "uuid":
            out.append(0x0A)
            out.extend(v[1])
        elif k == "url":
            if v[2] is None:
                out.append(0x0B)
                slot(v[1])
            else:
                out.append(0x0C)
                slot(v[1])
                slot(v[2])
        elif k == "array":
            out.append(0x0D)
            out.extend(enc_varint(len(v[1])))
            for x in v[1]:
                w(x)
        elif k == "dict":
            out.append(0x0E)
            out.extend(enc_varint(len(v[1])))
            for kb, x in sorted(v[1], key=lambda e: e[0]):
                slot(kb)
                w(x)
        elif k == "anykey":
            out.append(0x0F)
            out.extend(enc_varint(len(v[1])))
            for a, b in sorted(v[1], key=lambda e: sk(e[0])):
                w(a)
                w(b)
        elif k == "set":
            out.append(0x10)
            out.extend(enc_varint(len(v[1])))
            for x in sorted(v[1], key=sk):
                w(x)
        elif k == "object":
            out.append(0x11)
            slot(v[1])
            out.extend(enc_varint(len(v[2])))
            for n, x in sorted(v[2], key=lambda e: e[0]):
                slot(n)
                w(x)
        else:
            raise AssertionError("unknown kind " + repr(k))

    w(value)
    budget[0] -= len(out) + referenced[0]
    if budget[0] < 0:
        raise ArchiveError("sort key limit exceeded", "sort keys pass SORT_KEYS_MAX")
    return bytes(out)


# --- URL strings (§A5.6) -------------------------------------------------------------------------------
# The ABNF of §A5.6 (RFC 3986 §3, §4.1, §4.2) translated rule by rule into one regular expression per form
# (the grammar is regular), matched against the whole byte string with re.fullmatch: any derivation will
# do, as in ABNF. Bytes patterns, so a byte >= 0x80 never matches.

def _url_patterns():
    unreserved = rb"[A-Za-z0-9\-._~]"
    sub_delims = rb"[!$&'()*+,;=]"
    pct = rb"%[0-9A-Fa-f]{2}"
    pchar = rb"(?:" + unreserved + rb"|" + pct + rb"|" + sub_delims + rb"|[:@])"
    segment = pchar + rb"*"
    segment_nz = pchar + rb"+"
    segment_nz_nc = rb"(?:" + unreserved + rb"|" + pct + rb"|" + sub_delims + rb"|@)+"
    path_abempty = rb"(?:/" + segment + rb")*"
    path_absolute = rb"/(?:" + segment_nz + rb"(?:/" + segment + rb")*)?"
    path_noscheme = segment_nz_nc + rb"(?:/" + segment + rb")*"
    path_rootless = segment_nz + rb"(?:/" + segment + rb")*"
    path_empty = rb""
    h16 = rb"[0-9A-Fa-f]{1,4}"
    dec_octet = rb"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
    ipv4 = dec_octet + rb"\." + dec_octet + rb"\." + dec_octet + rb"\." + dec_octet
    ls32 = rb"(?:" + h16 + rb":" + h16 + rb"|" + ipv4 + rb")"

    def rep(n):  # n( h16 ":" )
        return rb"(?:" + h16 + rb":){" + str(n).encode() + rb"}"

    def upto(n):  # [ *n( h16 ":" ) h16 ]
        return rb"(?:(?:" + h16 + rb":){0," + str(n).encode() + rb"}" + h16 + rb")?"

    ipv6 = rb"(?:" + rb"|".join([
        rep(6) + ls32,
        rb"::" + rep(5) + ls32,
        rb"(?:" + h16 + rb")?::" + rep(4) + ls32,
        upto(1) + rb"::" + rep(3) + ls32,
        upto(2) + rb"::" + rep(2) + ls32,
        upto(3) + rb"::" + h16 + rb":" + ls32,
        upto(4) + rb"::" + ls32,
        upto(5) + rb"::" + h16,
        upto(6) + rb"::",
    ]) + rb")"
    ipvfuture = rb"[vV][0-9A-Fa-f]+\.(?:" + unreserved + rb"|" + sub_delims + rb"|:)+"
    ip_literal = rb"\[(?:" + ipv6 + rb"|" + ipvfuture + rb")\]"
    reg_name = rb"(?:" + unreserved + rb"|" + pct + rb"|" + sub_delims + rb")*"
    host = rb"(?:" + ip_literal + rb"|" + reg_name + rb")"  # IPv4address is a reg-name too
    port = rb"[0-9]*"
    userinfo = rb"(?:" + unreserved + rb"|" + pct + rb"|" + sub_delims + rb"|:)*"
    authority = rb"(?:" + userinfo + rb"@)?" + host + rb"(?::" + port + rb")?"
    scheme = rb"[A-Za-z][A-Za-z0-9+\-.]*"
    query = rb"(?:" + pchar + rb"|[/?])*"
    fragment = query
    hier_part = rb"(?://" + authority + path_abempty + rb"|" + path_absolute + rb"|" + path_rootless + rb"|" \
        + path_empty + rb")"
    relative_part = rb"(?://" + authority + path_abempty + rb"|" + path_absolute + rb"|" + path_noscheme + rb"|" \
        + path_empty + rb")"
    tail = rb"(?:\?" + query + rb")?(?:#" + fragment + rb")?"
    uri = scheme + rb":" + hier_part + tail
    relative_ref = relative_part + tail
    return re.compile(uri), re.compile(relative_ref)


_RE_URI, _RE_RELATIVE_REF = _url_patterns()


def url_problem(b, form):
    """None if the bytes b may be a URL slot of the given form (§A5.6), else a reason.
    form: "reference" (tag 0x0B: URI-reference), "relative" (0x0C's relative string: relative-ref),
    "base" (0x0C's base: URI)."""
    if b == b"":
        return "empty URL string"
    is_uri = _RE_URI.fullmatch(b) is not None
    is_rel = _RE_RELATIVE_REF.fullmatch(b) is not None
    if form == "base":
        return None if is_uri else "not a URI (a base needs a scheme)"
    if form == "relative":
        return None if is_rel else "not a relative-ref (a URL with a base has no scheme)"
    return None if (is_uri or is_rel) else "not a URI-reference"


# --- the reader ------------------------------------------------------------------------------------------

TAGS = set(range(0x00, 0x14))


class Frame(object):
    __slots__ = ("kind", "depth", "remaining", "items", "keys_nfd", "last_key", "pending_key",
                 "classes", "last_sort", "class_name", "box", "total_before", "eq_pending", "outer_deepest")

    def __init__(self, kind, depth, count):
        self.kind = kind
        self.depth = depth
        self.remaining = count
        self.items = []
        self.keys_nfd = set()
        self.last_key = None
        self.pending_key = None   # dict/object: key bytes read, value pending; anykey: key value, value pending
        self.classes = set()
        self.last_sort = None
        self.class_name = None
        self.box = None
        self.total_before = 0
        self.eq_pending = False
        self.outer_deepest = 0


class Reader(object):
    def __init__(self, data, limits=None):
        self.data = data
        self.pos = 0
        self.n = len(data)
        self.strings = []
        self.string_set = set()
        self.shared = []
        self.items = 0
        self.total = 0
        self.sorted = False
        self.eq = Equality()
        lim = dict(ARCHIVE_MAX=ARCHIVE_MAX, DEPTH_MAX=DEPTH_MAX, VALUES_MAX=VALUES_MAX,
                   EXPANSION_MAX=EXPANSION_MAX, STRING_MAX=STRING_MAX, DATA_MAX=DATA_MAX,
                   NONSTARTER_RUN_MAX=NONSTARTER_RUN_MAX, SORT_KEYS_MAX=SORT_KEYS_MAX,
                   STRING_USES_MAX=STRING_USES_MAX, ELEMENT_WEIGHT_MAX=ELEMENT_WEIGHT_MAX)
        if limits:
            lim.update(limits)
        self.lim = lim
        self.sort_budget = [lim["SORT_KEYS_MAX"]]
        # the deepest level reached, references expanded, inside the innermost open definition (§A3)
        self.deepest = 0
        self.string_uses = 0
        self.element_weight = 0

    # primitives
    def left(self):
        return self.n - self.pos

    def u8(self, what):
        if self.pos >= self.n:
            raise ArchiveError("truncated", "input ends inside %s at offset %d" % (what, self.pos))
        b = self.data[self.pos]
        self.pos += 1
        return b

    def fixed(self, k, what):
        if self.left() < k:
            raise ArchiveError("truncated", "%s needs %d bytes, %d left at offset %d"
                               % (what, k, self.left(), self.pos))
        b = self.data[self.pos:self.pos + k]
        self.pos += k
        return b

    def varint(self, what):
        start = self.pos
        result = 0
        shift = 0
        for i in range(10):
            b = self.u8(what)
            if i == 9 and b > 0x01:
                raise ArchiveError("non-minimal varint", "%s at offset %d: 10th byte 0x%02x above 0x01"
                                   % (what, start, b))
            result |= (b & 0x7F) << shift
            shift += 7
            if not (b & 0x80):
                if i > 0 and b == 0:
                    raise ArchiveError("non-minimal varint", "%s at offset %d: final byte 0x00" % (what, start))
                return result
        raise AssertionError("unreachable")

    def new_string(self, what):
        ln = self.varint(what + " length")
        if ln > self.lim["STRING_MAX"]:  # RULE G2 (§A3): before the truncation check
            raise ArchiveError("length limit exceeded", "%s of %d bytes > STRING_MAX %d"
                               % (what, ln, self.lim["STRING_MAX"]))
        if ln > self.left():
            raise ArchiveError("truncated", "%s of %d bytes, %d left at offset %d" % (what, ln, self.left(), self.pos))
        off = self.pos
        b = self.data[self.pos:self.pos + ln]
        self.pos += ln
        try:
            b.decode("utf-8", "strict")
        except UnicodeDecodeError as e:
            raise ArchiveError("invalid UTF-8", "%s at offset %d: %s" % (what, off, e.reason))
        if longest_nonstarter_run(b.decode("utf-8")) > self.lim["NONSTARTER_RUN_MAX"]:
            raise ArchiveError("non-starter run limit exceeded", "%s at offset %d" % (what, off))
        if b in self.string_set:
            raise ArchiveError("non-canonical encoding", "%s at offset %d repeats string table entry %d"
                               % (what, off, self.strings.index(b)))
        self.string_set.add(b)
        self.strings.append(b)
        self.use_string(b)
        return b

    def use_string(self, b):
        # STRING_USES_MAX (§A3): every use of a string counts its bytes, a reference those it names
        self.string_uses += len(b)
        if self.string_uses > self.lim["STRING_USES_MAX"]:
            raise ArchiveError("expansion limit exceeded", "strings pass STRING_USES_MAX at offset %d" % self.pos)

    def string_ref(self, idx, what):
        if idx >= len(self.strings):
            raise ArchiveError("bad reference", "%s: string index %d, table has %d" % (what, idx, len(self.strings)))
        self.use_string(self.strings[idx])
        return self.strings[idx]

    def slot(self, what):
        s = self.varint(what)
        if s == 0:
            return self.new_string(what)
        return self.string_ref(s - 1, what)

    def add_total(self, k, what):
        self.total += k
        if self.total > self.lim["EXPANSION_MAX"]:
            raise ArchiveError("expansion limit exceeded", "expanded size passes %d at %s (offset %d)"
                               % (self.lim["EXPANSION_MAX"], what, self.pos))

    def check_count(self, count, minimum, announced_items, what):
        if count * minimum > self.left():
            raise ArchiveError("count exceeds input", "%s count %d x %d > %d bytes left"
                               % (what, count, minimum, self.left()))
        # RULE G3 (§A3): count, not 2 x count, for an any-key dictionary
        if self.items + announced_items > self.lim["VALUES_MAX"]:
            raise ArchiveError("value count limit exceeded", "%s count %d takes %d items read past VALUES_MAX"
                               % (what, count, self.items))

    # the whole archive
    def read(self):
        d = self.data
        if self.n > self.lim["ARCHIVE_MAX"]:
            raise ArchiveError("size limit exceeded", "%d bytes > ARCHIVE_MAX" % self.n)
        # §A2 header, RULE G1
        for i in range(min(4, self.n)):
            if d[i] != MAGIC[i]:
                raise ArchiveError("not an archive", "magic byte %d is 0x%02x" % (i, d[i]))
        if self.n < 6:
            raise ArchiveError("truncated", "input of %d bytes ends inside the header" % self.n)
        if d[4] != 1:
            raise ArchiveError("unsupported version", "version %d" % d[4])
        if d[5] & 0xFE:
            raise ArchiveError("reserved flags set", "flags 0x%02x" % d[5])
        self.sorted = bool(d[5] & 1)
        self.pos = 6
        root = self.read_root()
        if self.pos != self.n:
            raise ArchiveError("trailing bytes", "%d bytes after the root item at offset %d"
                               % (self.n - self.pos, self.pos))
        return root

    def read_root(self):
        stack = []
        depth = 1
        while True:
            # before each item: depth, item count (RULE G8, §A7)
            if depth > self.lim["DEPTH_MAX"]:
                raise ArchiveError("depth limit exceeded", "item at depth %d (offset %d)" % (depth, self.pos))
            if self.items + 1 > self.lim["VALUES_MAX"]:
                raise ArchiveError("value count limit exceeded", "item %d at offset %d" % (self.items + 1, self.pos))
            self.deepest = max(self.deepest, depth)
            tag_off = self.pos
            tag = self.u8("an item tag")
            self.items += 1
            if tag != 0x13:
                self.add_total(1, "tag 0x%02x" % tag)  # RULE G4 (§A3, §A7): before the tag is checked
            if tag not in TAGS:
                raise ArchiveError("unknown tag", "tag 0x%02x at offset %d" % (tag, tag_off))
            value = None
            done = True
            if tag == 0x00:
                value = ("null",)
            elif tag == 0x01:
                value = ("bool", False)
            elif tag == 0x02:
                value = ("bool", True)
            elif tag == 0x03:
                z = self.varint("int")
                value = ("int", (z >> 1) ^ -(z & 1))
            elif tag == 0x04:
                value = ("uint", self.varint("uint"))
            elif tag == 0x05:
                value = ("double", struct.unpack("<Q", self.fixed(8, "double"))[0])
            elif tag == 0x06:
                value = ("string", self.new_string("string"))
            elif tag == 0x07:
                value = ("string", self.string_ref(self.varint("string reference"), "string reference"))
            elif tag == 0x08:
                ln = self.varint("data length")
                if ln > self.lim["DATA_MAX"]:  # RULE G2 (§A3)
                    raise ArchiveError("length limit exceeded", "data of %d bytes > DATA_MAX" % ln)
                if ln > self.left():
                    raise ArchiveError("truncated", "data of %d bytes, %d left" % (ln, self.left()))
                value = ("data", self.fixed(ln, "data"))
            elif tag == 0x09:
                value = ("date", struct.unpack("<Q", self.fixed(8, "date"))[0])
            elif tag == 0x0A:
                value = ("uuid", self.fixed(16, "uuid"))
            elif tag == 0x0B:
                rel = self.slot("URL string")
                p = url_problem(rel, "reference")
                if p:
                    raise ArchiveError("invalid value", "URL %r: %s" % (rel.decode("utf-8"), p))
                value = ("url", rel, None)
            elif tag == 0x0C:
                # §A7: both slots, then the base, then the relative string
                rel = self.slot("URL relative string")
                base = self.slot("URL base string")
                for label, s, form in (("base", base, "base"), ("relative string", rel, "relative")):
                    p = url_problem(s, form)
                    if p:
                        raise ArchiveError("invalid value", "URL %s %r: %s" % (label, s.decode("utf-8"), p))
                value = ("url", rel, base)
            elif tag in (0x0D, 0x10):
                what = "array" if tag == 0x0D else "set"
                count = self.varint(what + " count")
                self.check_count(count, 1, count, what)
                if count == 0:
                    value = ("array", []) if tag == 0x0D else ("set", [])
                else:
                    stack.append(Frame(what, depth, count))
                    done = False
            elif tag in (0x0E, 0x0F):
                what = "dict" if tag == 0x0E else "anykey"
                count = self.varint(what + " count")
                self.check_count(count, 2, count,
                                 "dictionary" if tag == 0x0E else "any-key dictionary")
                if count == 0:
                    value = (what, [])
                else:
                    stack.append(Frame(what, depth, count))
                    done = False
            elif tag == 0x11:
                cname = self.slot("class name")
                if len(cname) == 0:
                    raise ArchiveError("invalid value", "empty class name at offset %d" % tag_off)
                count = self.varint("object field count")
                self.check_count(count, 2, count, "object")
                if count == 0:
                    value = ("object", cname, [])
                else:
                    f = Frame("object", depth, count)
                    f.class_name = cname
                    stack.append(f)
                    done = False
            elif tag == 0x12:
                box = Shared(len(self.shared))
                self.shared.append(box)
                f = Frame("shared", depth, 1)
                f.box = box
                f.total_before = self.total - 1
                f.outer_deepest = self.deepest
                self.deepest = depth
                stack.append(f)
                done = False
            elif tag == 0x13:
                idx = self.varint("shared reference")
                if idx >= len(self.shared):
                    raise ArchiveError("bad reference", "shared index %d, table has %d at offset %d"
                                       % (idx, len(self.shared), tag_off))
                box = self.shared[idx]
                if not box.complete:
                    raise ArchiveError("cycle", "reference to open shared definition %d at offset %d"
                                       % (idx, tag_off))
                if depth + box.height - 1 > self.lim["DEPTH_MAX"]:
                    raise ArchiveError("depth limit exceeded", "reference to shared %d of height %d at depth %d"
                                       % (idx, box.height, depth))
                self.deepest = max(self.deepest, depth + box.height - 1)
                self.add_total(box.expanded, "shared reference %d" % idx)  # RULE G4: E(def), not 1 + E(def)
                value = box

            # deliver completed values upwards
            while done:
                if not stack:
                    return value
                f = stack[-1]
                self.accept(f, value)
                if f.remaining == 0 and f.pending_key is None:
                    stack.pop()
                    value = self.finish(f)
                else:
                    done = False
            # the top frame needs its next item
            f = stack[-1]
            if f.kind in ("dict", "object") and f.pending_key is None:
                self.read_key_slot(f)
            depth = f.depth + 1

    def read_key_slot(self, f):
        what = "dictionary key" if f.kind == "dict" else "field name"
        off = self.pos
        kb = self.slot(what)
        n = Equality.nfd(kb)
        # RULE G5 (§A5.5): order first (sorted archives), then distinct
        if self.sorted and f.last_key is not None and not (kb > f.last_key):
            raise ArchiveError("non-canonical encoding", "%s %r at offset %d not after %r"
                               % (what, kb.decode("utf-8"), off, f.last_key.decode("utf-8")))
        if n in f.keys_nfd:
            raise ArchiveError("duplicate key", "%s %r at offset %d" % (what, kb.decode("utf-8"), off))
        f.keys_nfd.add(n)
        f.last_key = kb
        f.pending_key = kb

    def add_element(self, v):
        # ELEMENT_WEIGHT_MAX (§A3): the weight of every set element and any-key key, at every level
        self.element_weight += element_weight(v)
        if self.element_weight > self.lim["ELEMENT_WEIGHT_MAX"]:
            raise ArchiveError("expansion limit exceeded", "set elements pass ELEMENT_WEIGHT_MAX at offset %d" % self.pos)

    def check_distinct_sorted(self, f, v, what):
        # RULE G5 (§A5.5): order first (sorted archives), then distinct
        if self.sorted:
            sk = sort_key(v, self.sort_budget)
            if f.last_sort is not None and not (sk > f.last_sort):
                raise ArchiveError("non-canonical encoding", "%s out of order (sort key %s after %s), ending at offset %d"
                                   % (what, sk.hex(), f.last_sort.hex(), self.pos))
            f.last_sort = sk
        c = self.eq.cls(v)
        if c in f.classes:
            raise ArchiveError("duplicate key", "%s equal to an earlier one (ending at offset %d)" % (what, self.pos))
        f.classes.add(c)

    def accept(self, f, v):
        k = f.kind
        if k == "array":
            f.items.append(v)
            f.remaining -= 1
        elif k == "set":
            self.add_element(v)
            self.check_distinct_sorted(f, v, "set element")
            f.items.append(v)
            f.remaining -= 1
        elif k in ("dict", "object"):
            f.items.append((f.pending_key, v))
            f.pending_key = None
            f.remaining -= 1
        elif k == "anykey":
            if f.pending_key is None:
                self.add_element(v)
                self.check_distinct_sorted(f, v, "any-key dictionary key")
                f.pending_key = (v,)
            else:
                f.items.append((f.pending_key[0], v))
                f.pending_key = None
                f.remaining -= 1
        elif k == "shared":
            f.box.value = v
            f.remaining -= 1
        else:
            raise AssertionError(k)

    def finish(self, f):
        k = f.kind
        if k == "array":
            return ("array", f.items)
        if k == "set":
            return ("set", f.items)
        if k == "dict":
            return ("dict", f.items)
        if k == "anykey":
            return ("anykey", f.items)
        if k == "object":
            return ("object", f.class_name, f.items)
        if k == "shared":
            f.box.complete = True
            f.box.expanded = self.total - f.total_before
            f.box.height = self.deepest - f.depth + 1
            self.deepest = max(self.deepest, f.outer_deepest)
            return f.box
        raise AssertionError(k)


def read_archive(data, limits=None):
    return Reader(data, limits).read()


# --- JSON mapping -----------------------------------------------------------------------------------------

def _dbl(bits):
    f = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


def to_json(value):
    seen = set()

    def j(v):
        if isinstance(v, Shared):
            if v.index in seen:
                return {"shared": v.index}
            seen.add(v.index)
            return {"shared": v.index, "value": j(v.value)}
        k = v[0]
        if k == "null":
            return None
        if k == "bool":
            return v[1]
        if k == "int":
            return {"int": v[1]}
        if k == "uint":
            return {"uint": v[1]}
        if k == "double":
            return {"double": "%016x" % v[1], "value": _dbl(v[1])}
        if k == "string":
            return v[1].decode("utf-8")
        if k == "data":
            return {"data": v[1].hex()}
        if k == "date":
            return {"date": "%016x" % v[1], "value": _dbl(v[1])}
        if k == "uuid":
            h = v[1].hex()
            return {"uuid": "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])}
        if k == "url":
            if v[2] is None:
                return {"url": v[1].decode("utf-8")}
            return {"url": v[1].decode("utf-8"), "base": v[2].decode("utf-8")}
        if k == "array":
            return [j(x) for x in v[1]]
        if k == "dict":
            return {"dict": [[kb.decode("utf-8"), j(x)] for kb, x in v[1]]}
        if k == "anykey":
            return {"anyKeyDict": [[j(a), j(b)] for a, b in v[1]]}
        if k == "set":
            return {"set": [j(x) for x in v[1]]}
        if k == "object":
            return {"object": v[1].decode("utf-8"), "fields": [[n.decode("utf-8"), j(x)] for n, x in v[2]]}
        raise AssertionError(k)

    return j(value)


def main(argv):
    sys.setrecursionlimit(20000)
    args = [a for a in argv[1:] if a != "--json"]
    compact = "--json" in argv[1:]
    if len(args) != 1:
        print("error: usage: kca_reader.py FILE [--json]")
        return 2
    path = args[0]
    try:
        size = os.stat(path).st_size
        if size > ARCHIVE_MAX:  # checked before reading the bytes (§A3: before doing the work it bounds)
            print("error: size limit exceeded: %d bytes > ARCHIVE_MAX %d" % (size, ARCHIVE_MAX))
            return 1
        with open(path, "rb") as fh:
            data = fh.read(ARCHIVE_MAX + 1)
    except OSError as e:
        print("error: io: %s" % e)
        return 2
    try:
        value = read_archive(data)
        out = to_json(value)
        if compact:
            s = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
        else:
            s = json.dumps(out, ensure_ascii=False, indent=1)
        sys.stdout.buffer.write((s + "\n").encode("utf-8"))
        return 0
    except ArchiveError as e:
        print("error: %s: %s" % (e.code, e.detail))
        return 1
    except Exception as e:  # never a traceback
        print("error: internal: %s: %s" % (type(e).__name__, e))
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
