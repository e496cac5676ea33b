#!/usr/bin/python3
"""Independent, strict reader of kcar vault format version 2 (SPEC.md Part 4), written from SPEC.md.

Usage: kcar2_reader.py VAULT (--key-file F | --passphrase-file F) [MODE]

MODE is one of
  --list                  every live item (default): id, class, size, key attributes (-name: absent), attributes
  --dump-json             vault, schema, counts, live items, tombstones and history entries as JSON
  --verify                every rule of Part 4 (V3.3 on every page of every tree, V4 counts, V6 deltas, V7
                          trailers back to the first commit) and every record a live item or history entry names
  --get CLASS [NAME=VALUE ...]
                          the live items of CLASS with that primary key, found by descending the items tree
                          (key attributes not given take the schema default); prints the pages read
  --find NAME=VALUE       the live items whose indexed attribute NAME has VALUE, via the attributes tree
  --history               history entries and tombstones
VALUE is a string, or TYPE:VALUE with TYPE one of s (string), i (integer), b (bool: 0/1/true/false),
d (date, ns), x (data, hex).

Header, key slots, records and the block sealing are Part 1's (SPEC.md V1): they come from kcar_reader.py,
the independent version 1 reader. A version 1 file is handed to that reader unchanged.

Dependencies: python3 standard library + PyNaCl (nacl.bindings, i.e. libsodium).
On failure prints `error: <SPEC.md §11 error name>: detail` to stderr and exits 1.
"""

import base64
import hashlib
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kcar_reader as v1  # noqa: E402
from kcar_reader import (VaultError, Bad, Short, Cursor, MAC, read_varint, utf8,  # noqa: E402
                         DAMAGED_INDEX, DAMAGED_RECORD, TRUNCATED, INCOMPLETE_COMMIT)

# ---------------------------------------------------------------------------
# Limits (§3 and V2)

ATTRS_MAX = v1.ATTRS_MAX
ATTR_NAME_MAX = v1.ATTR_NAME_MAX
ATTR_VALUE_MAX = v1.ATTR_VALUE_MAX
ITEMS_MAX = v1.ITEMS_MAX
MEMBERS_MAX = v1.MEMBERS_MAX
VALUE_MAX = v1.VALUE_MAX
TRAILER_PROBES_MAX = v1.TRAILER_PROBES_MAX
U64_MAX = v1.U64_MAX

PAGE_TARGET = 4096
PAGE_MAX = 2097152
PAGE_EXPANSION_MAX = 16
PAGE_EXPANSION_SLACK = 4096
ENTRY_MAX = 1048576
KEY_MAX = 4096
PAGE_ENTRIES_MAX = 65536
HEIGHT_MAX = 8
TABLE_MAX = 65536
DELTA_CHAIN_MAX = 16
DELTA_MAX = 1048576
DELTA_TOTAL_MAX = 4194304
ROOT_MAX = 65536
KEY_ATTRS_MAX = 16
SCHEMA_CLASSES_MAX = 64
INDEXED_MAX = 64
HISTORY_KEEP_MAX = 1000
RETENTION_DAYS_MAX = 1 << 20  # V4 (days and tombstone days of the root's retention)

TRAILER2_MAGIC = b"KCARTRL2"
TRAILER2_SIZE = 128
NONE64 = 0xFFFFFFFFFFFFFFFF

KIND_LEAF, KIND_BRANCH, KIND_ROOT, KIND_DELTA = 1, 2, 3, 4
TREE_ITEMS, TREE_ATTRS, TREE_HISTORY = 1, 2, 3
TREE_NAMES = {1: "items", 2: "attributes", 3: "history"}
ATTR_TYPES = {1: "string", 2: "integer", 3: "bool", 4: "date", 5: "data"}

# ---------------------------------------------------------------------------
# Order-preserving key values (V3.1)


def ordered_bytes(raw):
    return raw.replace(b"\x00", b"\x00\xff") + b"\x00\x01"


def ordered(t, v):
    if t == 1:
        return ordered_bytes(v.encode("utf-8"))
    if t in (2, 4):
        return struct.pack(">Q", (v & U64_MAX) ^ 0x8000000000000000)
    if t == 3:
        return bytes([1 if v else 0])
    if t == 5:
        return ordered_bytes(v)
    raise Bad("type %d" % t)


def typed_key(t, v):
    return bytes([t]) + ordered(t, v)


class KeyCursor:
    def __init__(self, key, pos=0):
        self.key = key
        self.pos = pos

    def at_end(self):
        return self.pos == len(self.key)

    def escaped(self, limit, what):
        """An ordered string: the unescaped bytes."""
        out = bytearray()
        k = self.key
        i = self.pos
        while True:
            if i >= len(k):
                raise Bad("%s: key ends inside an ordered string" % what)
            b = k[i]
            if b == 0:
                if i + 1 >= len(k):
                    raise Bad("%s: key ends after 0x00" % what)
                n = k[i + 1]
                if n == 0x01:
                    i += 2
                    break
                if n == 0xFF:
                    out.append(0)
                    i += 2
                else:
                    raise Bad("%s: 0x00 followed by 0x%02x in a key" % (what, n))
            else:
                out.append(b)
                i += 1
            if len(out) > limit:
                raise Bad("%s: longer than %d bytes" % (what, limit))
        self.pos = i
        return bytes(out)

    def typed(self, what):
        if self.pos >= len(self.key):
            raise Bad("%s: key ends before a typed value" % what)
        t = self.key[self.pos]
        self.pos += 1
        if t == 1:
            return t, utf8(self.escaped(ATTR_VALUE_MAX, what), what)
        if t in (2, 4):
            if len(self.key) - self.pos < 8:
                raise Bad("%s: key ends inside an integer" % what)
            u = struct.unpack(">Q", self.key[self.pos:self.pos + 8])[0] ^ 0x8000000000000000
            self.pos += 8
            return t, u - (1 << 64) if u >= (1 << 63) else u
        if t == 3:
            if self.pos >= len(self.key):
                raise Bad("%s: key ends inside a bool" % what)
            b = self.key[self.pos]
            self.pos += 1
            if b > 1:
                raise Bad("%s: bool %d in a key" % (what, b))
            return t, bool(b)
        if t == 5:
            return t, self.escaped(ATTR_VALUE_MAX, what)
        raise Bad("%s: key value of type %d (outside 1-5)" % (what, t))

    def raw(self, n, what):
        if len(self.key) - self.pos < n:
            raise Bad("%s: key ends early" % what)
        b = self.key[self.pos:self.pos + n]
        self.pos += n
        return b


# ---------------------------------------------------------------------------
# Attributes (§7 encoding)


def parse_attr_value(c, t, name):
    if t == 1:
        return c.string(0, ATTR_VALUE_MAX, "string attribute")
    if t == 2 or t == 4:
        return c.i64()
    if t == 3:
        b = c.u8()
        if b > 1:
            raise Bad("bool attribute %r = %d" % (name, b))
        return bool(b)
    if t == 5:
        n = c.varint()
        if n > ATTR_VALUE_MAX:
            raise Bad("data attribute %r of %d bytes" % (name, n))
        return c.take(n)
    raise Bad("attribute %r has unknown type %d" % (name, t))


def parse_attrs(c, limit):
    n = c.varint()
    if n > limit:
        raise Bad("%d attributes (at most %d)" % (n, limit))
    out = []
    prev = None
    for _ in range(n):
        nlen = c.varint()
        if not 1 <= nlen <= ATTR_NAME_MAX:
            raise Bad("attribute name length %d" % nlen)
        raw = c.take(nlen)
        name = utf8(raw, "attribute name")
        if prev is not None and not raw > prev:
            raise Bad("attribute %r not in strictly ascending order" % name)
        prev = raw
        t = c.u8()
        out.append((name, t, parse_attr_value(c, t, name)))
    return out


# ---------------------------------------------------------------------------
# Trailer (V7)


class Trailer2:
    pass


def parse_trailer2(raw, pos):
    """Fields of a version 2 trailer at body offset pos; raises Bad on any rule of V7 / §8 (MAC not checked)."""
    t = Trailer2()
    t.pos = pos
    (magic, t.generation, t.commit_start, t.previous, t.root_offset, t.root_length, t.root_id,
     t.delta_offset, t.delta_length, t.item_count, t.flags, t.chain, reserved) = struct.unpack(
        "<8sQQQQQ16sQQQHHI", raw[:96])
    if magic != TRAILER2_MAGIC:
        raise Bad("trailer magic differs")
    if t.generation < 1:
        raise Bad("generation 0")
    if reserved != 0:
        raise Bad("reserved bytes not zero")
    if t.flags & ~1:
        raise Bad("flags 0x%04x has reserved bits" % t.flags)
    t.fold = bool(t.flags & 1)
    if t.fold != (t.chain == 0):
        raise Bad("chain %d with fold flag %d" % (t.chain, t.flags & 1))
    if t.chain >= DELTA_CHAIN_MAX:
        raise Bad("chain %d not below DELTA_CHAIN_MAX" % t.chain)
    if t.item_count > ITEMS_MAX:
        raise Bad("item count %d over ITEMS_MAX" % t.item_count)
    if t.root_length == 0:
        raise Bad("root length 0")
    if t.root_offset + t.root_length > pos:
        raise Bad("root [%d+%d) does not end before the trailer at %d" % (t.root_offset, t.root_length, pos))
    if t.commit_start > pos:
        raise Bad("commit start %d after the trailer" % t.commit_start)
    if t.fold:
        if t.delta_offset != NONE64 or t.delta_length != 0:
            raise Bad("a fold commit with a delta segment")
        if t.root_offset < t.commit_start or t.root_offset + t.root_length != pos:
            raise Bad("fold: root [%d+%d) not inside the commit [%d, %d) ending at the trailer" % (
                t.root_offset, t.root_length, t.commit_start, pos))
    else:
        if t.delta_offset == NONE64 or t.delta_length == 0:
            raise Bad("a delta commit without a delta segment")
        if t.delta_offset + t.delta_length != pos or t.delta_offset < t.commit_start:
            raise Bad("delta segment [%d+%d) does not end at the trailer (%d) inside the commit" % (
                t.delta_offset, t.delta_length, pos))
        if t.root_offset + t.root_length > t.commit_start:
            raise Bad("delta commit: root [%d+%d) does not end before the commit start %d" % (
                t.root_offset, t.root_length, t.commit_start))
    if t.previous == NONE64:
        if t.commit_start != 0:
            raise Bad("first commit starts at %d, not 0" % t.commit_start)
        if not t.fold:
            raise Bad("first commit is not a fold")
    elif t.previous + TRAILER2_SIZE != t.commit_start:
        raise Bad("commit start %d does not follow the previous trailer at %d" % (t.commit_start, t.previous))
    return t


def trailer2_mac_ok(h, raw):
    if len(raw) != TRAILER2_SIZE or raw[:8] != TRAILER2_MAGIC:
        return False
    m = MAC(h.k_trailer, b"kcar-trl-v2" + h.vault_id + raw[:96])
    return v1.hmac.compare_digest(m, raw[96:128])


def read_trailer2_at(vf, h, pos):
    body_len = vf.size - h.length
    if pos < 0 or pos + TRAILER2_SIZE > body_len:
        return None
    raw = vf.pread(h.length + pos, TRAILER2_SIZE)
    try:
        t = parse_trailer2(raw, pos)
    except Bad:
        return None
    return t if trailer2_mac_ok(h, raw) else None


def trailer2_candidate(raw, pos):
    try:
        return parse_trailer2(raw, pos)
    except Bad:
        return None


def last_valid_trailer2(vf, h, lo_limit, end, failed):
    """§8's backward search with the version 2 trailer (V7): candidates (magic and field rules) newest first,
    a MAC only for a candidate, TRAILER_PROBES_MAX failed MACs at most."""
    return v1.last_valid_trailer(vf, h, lo_limit, end, failed, TRAILER2_MAGIC, TRAILER2_SIZE, trailer2_candidate,
                                 trailer2_mac_ok)


def find_last_commit2(vf, h):
    body_len = vf.size - h.length
    if body_len < TRAILER2_SIZE:
        raise VaultError(TRUNCATED, "no complete commit after the header (body of %d bytes)" % body_len)
    t = last_valid_trailer2(vf, h, 0, body_len, [0])
    if t is None:
        raise VaultError(TRUNCATED, "no valid KCARTRL2 trailer in the body")
    v1.damaged_end(vf, h, t.pos, TRAILER2_MAGIC, TRAILER2_SIZE, trailer2_candidate, trailer2_mac_ok)
    return t, body_len - (t.pos + TRAILER2_SIZE)


# ---------------------------------------------------------------------------
# Pages (V3.2)


class Ref:
    __slots__ = ("page_id", "offset", "length", "count")

    def __init__(self, page_id, offset, length, count):
        self.page_id, self.offset, self.length, self.count = page_id, offset, length, count


def parse_ref(c):
    pid = c.take(16)
    off = c.varint()
    ln = c.varint()
    if ln < 1:
        raise Bad("page reference of length 0")
    cnt = c.varint()
    return Ref(pid, off, ln, cnt)


class Page:
    pass


class Reader:
    """One open version 2 vault: header, keys, last commit, root, deltas."""

    def __init__(self, vf, h, limit_pos):
        self.vf = vf
        self.h = h
        self.limit_pos = limit_pos  # pages must end before this body offset (the last commit's trailer)
        self.pages_read = 0
        self.extents = {}  # record id -> (offset, length)

    # -- sealed pages and segments

    def open_sealed(self, offset, length, ad_prefix, limit, what):
        if offset + length > self.limit_pos or length < 1:
            raise VaultError(DAMAGED_INDEX, "%s: extent [%d+%d) outside the body before the trailer at %d" % (
                what, offset, length, self.limit_pos))
        parts = []
        for chunk in v1.iter_chunks(self.vf, self.h.length, offset, length, self.h.k_index, ad_prefix,
                                    DAMAGED_INDEX, what, total_max=limit):
            parts.append(chunk)
        return b"".join(parts)

    def page_plain(self, page_id, offset, length, limit, what):
        self.pages_read += 1
        ad = b"kcar-pg-v2" + self.h.vault_id + page_id
        bound = min(limit, PAGE_EXPANSION_MAX * length + PAGE_EXPANSION_SLACK)
        return self.open_sealed(offset, length, ad, bound, what)

    def check_record(self, rid, off, ln, before, what):
        if ln < 1:
            raise Bad("%s: record %s of length 0" % (what, rid.hex()))
        if off + ln > before:
            raise Bad("%s: record %s [%d+%d) does not end before %d" % (what, rid.hex(), off, ln, before))
        known = self.extents.get(rid)
        if known is None:
            self.extents[rid] = (off, ln)
        elif known != (off, ln):
            raise Bad("record %s named with two extents %s and %s" % (rid.hex(), known, (off, ln)))

    def read_page(self, ref, tree, what):
        """Opens and parses the page ref names; returns a Page (kind, tree, level, entries ...)."""
        name = "%s tree page %s" % (TREE_NAMES.get(tree, str(tree)), ref.page_id.hex())
        plain = self.page_plain(ref.page_id, ref.offset, ref.length, PAGE_MAX, name)
        try:
            c = Cursor(plain)
            p = Page()
            p.ref = ref
            p.name = name
            p.kind, p.tree, p.level = c.u8(), c.u8(), c.u8()
            if p.kind not in (KIND_LEAF, KIND_BRANCH):
                raise Bad("kind %d" % p.kind)
            if p.tree != tree:
                raise Bad("tree %d, read as tree %d" % (p.tree, tree))
            if (p.kind == KIND_LEAF) != (p.level == 0) or p.level >= HEIGHT_MAX:
                raise Bad("kind %d at level %d" % (p.kind, p.level))
            if p.kind == KIND_LEAF:
                with_tables = tree in (TREE_ITEMS, TREE_HISTORY)
                p.rtable, p.wtable, keys = self.parse_leafish_keys(c, with_tables, ref.offset, name)
                p.entries = keys
                used_r, used_w = set(), set()
                bodies = []
                for key, body in keys:
                    bodies.append((key, body))
                    if with_tables:
                        bc = Cursor(body)
                        r = bc.varint()
                        w = bc.varint()
                        if r > len(p.rtable) or w > len(p.wtable):
                            raise Bad("entry names record %d / writer %d past the tables (%d, %d)" % (
                                r, w, len(p.rtable), len(p.wtable)))
                        if r:
                            used_r.add(r - 1)
                        if w:
                            used_w.add(w - 1)
                    elif body:
                        raise Bad("attributes-tree entry with a body of %d bytes" % len(body))
                if with_tables and (len(used_r) != len(p.rtable) or len(used_w) != len(p.wtable)):
                    raise Bad("a record or writer table entry no entry names")
            else:
                n = c.varint()
                if not 1 <= n <= PAGE_ENTRIES_MAX:
                    raise Bad("entry count %d outside 1..%d" % (n, PAGE_ENTRIES_MAX))
                prev = b""
                p.children = []
                for i in range(n):
                    key = read_key_only(c, prev, i)
                    prev = key
                    p.children.append((key, parse_ref(c)))
            if c.remaining():
                raise Bad("%d bytes after the last entry" % c.remaining())
            return p
        except (Bad, Short) as e:
            raise VaultError(DAMAGED_INDEX, "%s: %s" % (name, e))

    def parse_leafish_keys(self, c, with_tables, before, what):
        rtable, wtable, _ = [], [], None
        if with_tables:
            rtable, wtable = self.parse_tables(c, before, what)
        count = c.varint()
        if not 1 <= count <= PAGE_ENTRIES_MAX:
            raise Bad("entry count %d outside 1..%d" % (count, PAGE_ENTRIES_MAX))
        prev = b""
        out = []
        for i in range(count):
            key = read_key_only(c, prev, i)
            prev = key
            blen = c.varint()
            if len(key) + blen > ENTRY_MAX:
                raise Bad("entry of %d bytes (ENTRY_MAX)" % (len(key) + blen))
            out.append((key, c.take(blen)))
        return rtable, wtable, out

    def parse_tables(self, c, before, what):
        rtable, wtable = [], []
        n = c.varint()
        if n > TABLE_MAX:
            raise Bad("record table of %d entries" % n)
        prev = None
        for _ in range(n):
            rid = c.take(16)
            off = c.varint()
            ln = c.varint()
            if prev is not None and not rid > prev:
                raise Bad("record ids not strictly ascending")
            prev = rid
            self.check_record(rid, off, ln, before, what)
            rtable.append((rid, off, ln))
        n = c.varint()
        if n > TABLE_MAX:
            raise Bad("writer table of %d entries" % n)
        prev = None
        for _ in range(n):
            w = c.take(8)
            if prev is not None and not w > prev:
                raise Bad("writer ids not strictly ascending")
            prev = w
            wtable.append(w)
        return rtable, wtable


def read_key_only(c, prev, i):
    shared = c.varint()
    rest = c.varint()
    if i == 0 and shared != 0:
        raise Bad("first key shares %d bytes" % shared)
    if shared > len(prev):
        raise Bad("key shares %d bytes of a %d-byte previous key" % (shared, len(prev)))
    if rest < 1:
        raise Bad("key with rest 0")
    if shared + rest > KEY_MAX:
        raise Bad("key of %d bytes (KEY_MAX)" % (shared + rest))
    key = prev[:shared] + c.take(rest)
    if i > 0:
        if not key > prev:
            raise Bad("keys not strictly ascending")
        common = 0
        m = min(len(prev), len(key))
        while common < m and prev[common] == key[common]:
            common += 1
        if shared != common:
            raise Bad("key shares %d bytes, the common prefix is %d (not canonical)" % (shared, common))
    return key


# ---------------------------------------------------------------------------
# Root (V4)


class Root:
    pass


def parse_root(plain):
    c = Cursor(plain)
    r = Root()
    kind, tree, level = c.u8(), c.u8(), c.u8()
    if (kind, tree, level) != (KIND_ROOT, 0, 0):
        raise Bad("root page kind/tree/level %d/%d/%d, not 3/0/0" % (kind, tree, level))
    r.trees = {}
    for tr in (TREE_ITEMS, TREE_ATTRS, TREE_HISTORY):
        flag = c.u8()
        if flag == 0:
            r.trees[tr] = None
        elif flag == 1:
            r.trees[tr] = parse_ref(c)
            if r.trees[tr].count == 0:
                raise Bad("%s tree of no entries named (an empty tree is written 0)" % TREE_NAMES[tr])
        else:
            raise Bad("%s tree flag %d" % (TREE_NAMES[tr], flag))
    r.live = c.varint()
    r.tombstones = c.varint()
    r.history = c.varint()
    n = c.varint()
    if n > SCHEMA_CLASSES_MAX:
        raise Bad("%d schema classes" % n)
    r.schema = {}
    r.schema_order = []
    prev = None
    for _ in range(n):
        cls = c.string(1, ATTR_NAME_MAX, "schema class")
        raw = cls.encode("utf-8")
        if prev is not None and not raw > prev:
            raise Bad("schema classes not strictly ascending")
        prev = raw
        k = c.varint()
        if k > KEY_ATTRS_MAX:
            raise Bad("class %r: %d key attributes" % (cls, k))
        keys = []
        names = set()
        for _ in range(k):
            name = c.string(1, ATTR_NAME_MAX, "key attribute name")
            if name in names:
                raise Bad("class %r: key attribute %r twice" % (cls, name))
            names.add(name)
            t = c.u8()
            keys.append((name, t, parse_attr_value(c, t, name)))
        r.schema[cls] = keys
        r.schema_order.append(cls)
    m = c.varint()
    if m > INDEXED_MAX:
        raise Bad("%d indexed names" % m)
    r.indexed = []
    prev = None
    for _ in range(m):
        name = c.string(1, ATTR_NAME_MAX, "indexed name")
        raw = name.encode("utf-8")
        if prev is not None and not raw > prev:
            raise Bad("indexed names not strictly ascending")
        prev = raw
        r.indexed.append(name)
    r.clock = c.u64()
    r.keep = c.varint()
    if r.keep > HISTORY_KEEP_MAX:
        raise Bad("keep %d over HISTORY_KEEP_MAX" % r.keep)
    r.days = c.varint()
    r.tombstone_days = c.varint()
    if r.days > RETENTION_DAYS_MAX or r.tombstone_days > RETENTION_DAYS_MAX:
        raise Bad("retention of %d / %d days (at most %d)" % (r.days, r.tombstone_days, RETENTION_DAYS_MAX))
    # V8.1: a hint for the compaction policy; any u64 is accepted and nothing here relies on it.
    r.garbage = c.varint()
    if c.remaining():
        raise Bad("%d bytes after the root" % c.remaining())
    for tr, cnt in ((TREE_ITEMS, r.live + r.tombstones), (TREE_ATTRS, None), (TREE_HISTORY, r.history)):
        ref = r.trees[tr]
        if cnt is None:
            continue
        have = 0 if ref is None else ref.count
        if have != cnt:
            raise Bad("%s tree top page counts %d entries, the root %d" % (TREE_NAMES[tr], have, cnt))
        if ref is None and cnt:
            raise Bad("empty %s tree with count %d" % (TREE_NAMES[tr], cnt))
    if r.live > ITEMS_MAX:
        raise Bad("%d live items over ITEMS_MAX" % r.live)
    return r


def is_indexed(root, name):
    for pat in root.indexed:
        if pat.endswith("*"):
            if name.startswith(pat[:-1]):
                return True
        elif name == pat:
            return True
    return False


# ---------------------------------------------------------------------------
# Entry bodies (V3.4)


class Item:
    """A parsed items-tree entry (live or tombstone)."""


def parse_item_key(root, key):
    kc = KeyCursor(key)
    cls = utf8(kc.escaped(ATTR_NAME_MAX, "class"), "class")
    if not cls:
        raise Bad("empty class in an item key")
    values = []
    for name, dt, dv in root.schema.get(cls, []):
        values.append((name,) + kc.typed("key attribute %r" % name))
    item_id = kc.raw(16, "item id")
    if not kc.at_end():
        raise Bad("%d bytes after the item id in an item key" % (len(key) - kc.pos))
    return cls, values, item_id


def parse_item_body(root, key, body, rtable, wtable, what):
    it = Item()
    it.key = key
    it.cls, it.key_values, it.item_id = parse_item_key(root, key)
    c = Cursor(body)
    r = c.varint()
    w = c.varint()
    if r > len(rtable) or w > len(wtable):
        raise Bad("record %d / writer %d past the tables" % (r, w))
    if w == 0:
        raise Bad("item %s: version without a writer" % it.item_id.hex())
    it.writer = wtable[w - 1]
    flags = c.u8()
    if flags & ~1:
        raise Bad("item %s: flags 0x%02x" % (it.item_id.hex(), flags))
    it.tombstone = bool(flags & 1)
    if it.tombstone != (r == 0):
        raise Bad("item %s: tombstone flag %d with record %d" % (it.item_id.hex(), flags, r))
    it.hlc = c.varint()
    it.absent = c.varint()
    k = len(it.key_values)
    if it.absent >> k:
        raise Bad("item %s: absent 0x%x for %d key attributes" % (it.item_id.hex(), it.absent, k))
    schema = root.schema.get(it.cls, [])
    if it.tombstone:
        if it.absent:
            raise Bad("tombstone %s with absent 0x%x" % (it.item_id.hex(), it.absent))
        it.attrs = []
        it.record = None
    else:
        keyattrs = set(n for n, _, _ in schema)
        present = k - bin(it.absent).count("1")
        body_attrs = parse_attrs(c, ATTRS_MAX - present)
        for name, _, _ in body_attrs:
            if name in keyattrs:
                raise Bad("item %s: key attribute %r in the body" % (it.item_id.hex(), name))
        attrs = list(body_attrs)
        for i, (name, t, v) in enumerate(it.key_values):
            dname, dt, dv = schema[i]
            if it.absent >> i & 1:
                if (t, v) != (dt, dv):
                    raise Bad("item %s: absent key attribute %r keyed by %r, not the default %r" % (
                        it.item_id.hex(), name, v, dv))
            else:
                attrs.append((name, t, v))
        attrs.sort(key=lambda a: a[0].encode("utf-8"))
        it.attrs = attrs
        parse_location(c, it, "item")
        it.record = rtable[r - 1]
    if c.remaining():
        raise Bad("item %s: %d bytes after the body" % (it.item_id.hex(), c.remaining()))
    return it


def parse_location(c, e, what):
    """Value size, member index, data offset (V3.4, as §7), with §7's bounds."""
    e.size = c.varint()
    if e.size > VALUE_MAX:
        raise Bad("%s %s: value size %d" % (what, e.item_id.hex(), e.size))
    e.member_index = c.varint()
    if e.member_index >= MEMBERS_MAX:
        raise Bad("%s %s: member index %d" % (what, e.item_id.hex(), e.member_index))
    e.data_offset = c.varint()
    if e.data_offset + e.size > U64_MAX:
        raise Bad("%s %s: data offset + size overflows" % (what, e.item_id.hex()))


class HistoryEntry:
    pass


def parse_history(key, body, rtable, wtable):
    if len(key) != 32:
        raise Bad("history key of %d bytes, not 32" % len(key))
    e = HistoryEntry()
    e.key = key
    e.item_id = key[:16]
    e.hlc = struct.unpack(">Q", key[16:24])[0]
    e.writer = key[24:32]
    c = Cursor(body)
    r = c.varint()
    w = c.varint()
    if r == 0 or r > len(rtable):
        raise Bad("history %s: record %d" % (e.item_id.hex(), r))
    if w != 0:
        raise Bad("history %s: writer %d, not 0" % (e.item_id.hex(), w))
    e.why = c.u8()
    if e.why not in (1, 2, 3):
        raise Bad("history %s: why %d" % (e.item_id.hex(), e.why))
    e.cls = c.string(1, ATTR_NAME_MAX, "class")
    e.attrs = parse_attrs(c, ATTRS_MAX)
    parse_location(c, e, "history entry")
    e.record = rtable[r - 1]
    if c.remaining():
        raise Bad("history %s: %d bytes after the body" % (e.item_id.hex(), c.remaining()))
    return e


def parse_attr_key(root, key):
    kc = KeyCursor(key)
    name = utf8(kc.escaped(ATTR_NAME_MAX, "attribute name"), "attribute name")
    t, v = kc.typed("attribute %r" % name)
    item_key = key[kc.pos:]
    cls, values, item_id = parse_item_key(root, item_key)
    return name, t, v, item_key


def parse_body(root, tree, key, body, rtable, wtable, what):
    try:
        if tree == TREE_ITEMS:
            return parse_item_body(root, key, body, rtable, wtable, what)
        if tree == TREE_HISTORY:
            return parse_history(key, body, rtable, wtable)
        if body:
            raise Bad("attributes-tree entry with a body")
        return parse_attr_key(root, key)
    except (Bad, Short) as e:
        raise VaultError(DAMAGED_INDEX, "%s: %s" % (what, e))


# ---------------------------------------------------------------------------
# Walking and descending trees (V3.3)


class TreeWalk:
    """A whole-tree scan with every V3.3 rule: kinds, levels, separators, counts."""

    def __init__(self, rd, root, tree):
        self.rd = rd
        self.root = root
        self.tree = tree
        self.entries = []  # (key, parsed)
        self.pages = 0
        self.height = None

    def run(self, ref):
        top = self.rd.read_page(ref, self.tree, "top")
        self.height = top.level + 1
        # A top branch with a single child is a writer's rule (V3.2), not checked: it costs one page.
        self.visit(top, None, None)

    def visit(self, page, lo, hi):
        self.pages += 1
        if page.kind == KIND_LEAF:
            keys = [k for k, _ in page.entries]
        else:
            keys = [k for k, _ in page.children]
        if lo is not None and keys[0] != lo:
            raise VaultError(DAMAGED_INDEX, "%s: first key differs from the separator that names it" % page.name)
        if hi is not None and not keys[-1] < hi:
            raise VaultError(DAMAGED_INDEX, "%s: last key not below the parent's next separator" % page.name)
        if page.kind == KIND_LEAF:
            if page.ref.count != len(page.entries):
                raise VaultError(DAMAGED_INDEX, "%s: reference counts %d entries, the leaf holds %d" % (
                    page.name, page.ref.count, len(page.entries)))
            for key, body in page.entries:
                self.entries.append((key, parse_body(self.root, self.tree, key, body, page.rtable, page.wtable,
                                                     page.name)))
            return
        total = 0
        for i, (sep, ref) in enumerate(page.children):
            nhi = page.children[i + 1][0] if i + 1 < len(page.children) else hi
            child = self.rd.read_page(ref, self.tree, "child")
            if child.level != page.level - 1:
                raise VaultError(DAMAGED_INDEX, "%s: level %d under a branch of level %d" % (
                    child.name, child.level, page.level))
            self.visit(child, sep, nhi)
            total += ref.count
        if total != page.ref.count:
            raise VaultError(DAMAGED_INDEX, "%s: reference counts %d entries, its children %d" % (
                page.name, page.ref.count, total))


def descend_range(rd, root, tree, ref, prefix):
    """The tree entries whose key starts with prefix, by descent: O(height) pages to the first match, one
    more leaf per further page of matches. Returns [(key, body, rtable, wtable)] and checks V3.3 rules 1-3 on
    the path, and rule 4 on the leaves."""
    out = []
    if ref is None:
        return out
    # stack of (branch page, index of the child taken, upper bound of the branch)
    page = rd.read_page(ref, tree, "top")
    stack = []
    hi = None
    lo = None
    while True:
        keys = [k for k, _ in (page.children if page.kind == KIND_BRANCH else page.entries)]
        if lo is not None and keys[0] != lo:
            raise VaultError(DAMAGED_INDEX, "%s: first key differs from its separator" % page.name)
        if hi is not None and not keys[-1] < hi:
            raise VaultError(DAMAGED_INDEX, "%s: last key not below the next separator" % page.name)
        if page.kind == KIND_BRANCH:
            # the last child whose separator is <= prefix (or the first)
            i = 0
            for j, (sep, _) in enumerate(page.children):
                if sep <= prefix:
                    i = j
                else:
                    break
            stack.append((page, i, hi))
            sep, cref = page.children[i]
            nhi = page.children[i + 1][0] if i + 1 < len(page.children) else hi
            child = rd.read_page(cref, tree, "child")
            if child.level != page.level - 1:
                raise VaultError(DAMAGED_INDEX, "%s: level %d under level %d" % (child.name, child.level,
                                                                                 page.level))
            page, lo, hi = child, sep, nhi
            continue
        if page.ref.count != len(page.entries):
            raise VaultError(DAMAGED_INDEX, "%s: reference counts %d, the leaf holds %d" % (
                page.name, page.ref.count, len(page.entries)))
        past = False
        for key, body in page.entries:
            if key.startswith(prefix):
                out.append((key, body, page.rtable, page.wtable))
            elif key > prefix:
                past = True
                break
        if past:
            return out
        # the range may go on in the next leaf: climb to the first branch with a next child
        while stack:
            bp, i, bhi = stack.pop()
            if i + 1 < len(bp.children):
                if not bp.children[i + 1][0].startswith(prefix):
                    return out
                stack.append((bp, i + 1, bhi))
                sep, cref = bp.children[i + 1]
                nhi = bp.children[i + 2][0] if i + 2 < len(bp.children) else bhi
                lvl = bp.level
                child = rd.read_page(cref, tree, "child")
                if child.level != lvl - 1:
                    raise VaultError(DAMAGED_INDEX, "%s: level %d under level %d" % (child.name, child.level,
                                                                                     lvl))
                page, lo, hi = child, sep, nhi
                # down the leftmost path
                while page.kind == KIND_BRANCH:
                    keys = [k for k, _ in page.children]
                    if keys[0] != lo or (hi is not None and not keys[-1] < hi):
                        raise VaultError(DAMAGED_INDEX, "%s: separators" % page.name)
                    stack.append((page, 0, hi))
                    sep, cref = page.children[0]
                    nhi = page.children[1][0] if len(page.children) > 1 else hi
                    child = rd.read_page(cref, tree, "child")
                    if child.level != page.level - 1:
                        raise VaultError(DAMAGED_INDEX, "%s: level" % child.name)
                    page, lo, hi = child, sep, nhi
                break
        else:
            return out


# ---------------------------------------------------------------------------
# Delta segments (V6)


def read_delta(rd, t, total_left):
    """The delta segment of delta commit t: [(tree, key, op, body, rtable, wtable)] and its plaintext size."""
    what = "delta segment of generation %d" % t.generation
    ad = b"kcar-dlt-v2" + rd.h.vault_id + struct.pack("<Q", t.generation)
    # Sealed as a page would be (V6): the expansion bound holds for it too, as for the root.
    bound = min(DELTA_MAX, total_left, PAGE_EXPANSION_MAX * t.delta_length + PAGE_EXPANSION_SLACK)
    plain = rd.open_sealed(t.delta_offset, t.delta_length, ad, bound, what)
    try:
        c = Cursor(plain)
        kind, tree, level = c.u8(), c.u8(), c.u8()
        if (kind, tree, level) != (KIND_DELTA, 0, 0):
            raise Bad("kind/tree/level %d/%d/%d, not 4/0/0" % (kind, tree, level))
        rtable, wtable = rd.parse_tables(c, t.delta_offset, what)
        count = c.varint()
        if not 1 <= count <= PAGE_ENTRIES_MAX:
            raise Bad("entry count %d" % count)
        prev = b""
        ops = []
        used_r, used_w = set(), set()
        for i in range(count):
            key = read_key_only(c, prev, i)
            prev = key
            blen = c.varint()
            if len(key) + blen > ENTRY_MAX:
                raise Bad("entry of %d bytes" % (len(key) + blen))
            body = c.take(blen)
            tr = key[0]
            if tr not in (1, 2, 3):
                raise Bad("key of tree %d" % tr)
            if len(key) < 2:
                raise Bad("empty tree key")
            if not body:
                raise Bad("entry without an op")
            op = body[0]
            if op == 1:
                if tr in (1, 3):
                    bc = Cursor(body, 1)
                    r = bc.varint()
                    w = bc.varint()
                    if r > len(rtable) or w > len(wtable):
                        raise Bad("record %d / writer %d past the tables" % (r, w))
                    if r:
                        used_r.add(r - 1)
                    if w:
                        used_w.add(w - 1)
            elif op == 2:
                if len(body) != 1:
                    raise Bad("a remove with a body")
            else:
                raise Bad("unknown op %d" % op)
            ops.append((tr, key[1:], op, body[1:]))
        if c.remaining():
            raise Bad("%d bytes after the last entry" % c.remaining())
        if len(used_r) != len(rtable) or len(used_w) != len(wtable):
            raise Bad("a record or writer table entry no entry names")
        return ops, rtable, wtable, len(plain)
    except (Bad, Short) as e:
        raise VaultError(DAMAGED_INDEX, "%s: %s" % (what, e))


# ---------------------------------------------------------------------------
# Opening


class Vault2:
    pass


def open_vault2(vf, h):
    last, incomplete = find_last_commit2(vf, h)
    rd = Reader(vf, h, last.pos)
    # Back to the last fold (V6): each followed trailer valid, generation and chain one less, same root.
    chain = [last]
    t = last
    while not t.fold:
        p = read_trailer2_at(vf, h, t.previous)
        if p is None:
            raise VaultError(DAMAGED_INDEX, "the trailer before generation %d (at %d) is not valid" % (
                t.generation, t.previous))
        if p.generation + 1 != t.generation or p.chain + 1 != t.chain:
            raise VaultError(DAMAGED_INDEX, "generation %d chain %d follows generation %d chain %d" % (
                t.generation, t.chain, p.generation, p.chain))
        if (p.root_offset, p.root_length, p.root_id) != (t.root_offset, t.root_length, t.root_id):
            raise VaultError(DAMAGED_INDEX, "delta commit %d names another root than its predecessor" %
                             t.generation)
        chain.append(p)
        t = p
    chain.reverse()
    fold = chain[0]
    if len(chain) - 1 > DELTA_CHAIN_MAX:
        raise VaultError(DAMAGED_INDEX, "%d delta segments (DELTA_CHAIN_MAX)" % (len(chain) - 1))
    plain = rd.page_plain(fold.root_id, fold.root_offset, fold.root_length, ROOT_MAX,
                          "index root of generation %d" % fold.generation)
    try:
        root = parse_root(plain)
    except (Bad, Short) as e:
        raise VaultError(DAMAGED_INDEX, "index root of generation %d: %s" % (fold.generation, e))
    if fold.item_count != root.live:
        raise VaultError(DAMAGED_INDEX, "fold generation %d: trailer says %d items, the root %d" % (
            fold.generation, fold.item_count, root.live))
    # Page extents of the trees end before the root (the root is the commit's last page).
    deltas = []
    total = 0
    for d in chain[1:]:
        ops, rt, wt, n = read_delta(rd, d, DELTA_TOTAL_MAX - total)
        total += n
        deltas.append((d, ops, rt, wt))
    v = Vault2()
    v.rd, v.root, v.last, v.fold, v.chain, v.deltas, v.incomplete = rd, root, last, fold, chain, deltas, incomplete
    v.delta_bytes = total
    return v


def overlay(v):
    """Later operations replace earlier ones: {(tree, key): (op, parsed or None)} over the delta chain."""
    ov = {}
    for d, ops, rt, wt in v.deltas:
        what = "delta segment of generation %d" % d.generation
        for tr, key, op, body in ops:
            parsed = parse_body(v.root, tr, key, body, rt, wt, what) if op == 1 else None
            ov[(tr, key)] = (op, parsed, d)
    return ov


def full_state(v):
    """Every tree read whole (V3.3 rules on every page), then the deltas applied in order (V6)."""
    state = {}
    v.heights = {}
    v.tree_clock = {}
    v.pages_scanned = 0
    for tr in (TREE_ITEMS, TREE_ATTRS, TREE_HISTORY):
        ref = v.root.trees[tr]
        entries = {}
        if ref is not None:
            w = TreeWalk(v.rd, v.root, tr)
            w.run(ref)
            entries = dict(w.entries)
            v.heights[tr] = w.height
            if tr != TREE_ATTRS:
                v.tree_clock[tr] = max(e.hlc for e in entries.values())
            v.pages_scanned += w.pages
        else:
            v.heights[tr] = 0
        state[tr] = entries
    # Root counts.
    live = sum(1 for it in state[TREE_ITEMS].values() if not it.tombstone)
    tomb = len(state[TREE_ITEMS]) - live
    if (live, tomb, len(state[TREE_HISTORY])) != (v.root.live, v.root.tombstones, v.root.history):
        raise VaultError(DAMAGED_INDEX, "root counts %d live, %d tombstones, %d history; the trees hold %d, %d, %d"
                         % (v.root.live, v.root.tombstones, v.root.history, live, tomb, len(state[TREE_HISTORY])))
    for d, ops, rt, wt in v.deltas:
        what = "delta segment of generation %d" % d.generation
        for tr, key, op, body in ops:
            if op == 2:
                if key not in state[tr]:
                    raise VaultError(DAMAGED_INDEX, "%s removes a %s-tree key that does not exist" % (
                        what, TREE_NAMES[tr]))
                del state[tr][key]
            else:
                state[tr][key] = parse_body(v.root, tr, key, body, rt, wt, what)
        live = sum(1 for it in state[TREE_ITEMS].values() if not it.tombstone)
        if live != d.item_count:
            raise VaultError(DAMAGED_INDEX, "generation %d: trailer says %d items, the index holds %d" % (
                d.generation, d.item_count, live))
    return state


def check_consistency(v, state):
    """Cross-tree rules: one live item per item id, the attributes tree lists exactly the indexed attributes
    of the live items, record extents do not overlap."""
    ids = {}
    expected_attr_keys = set()
    for key, it in state[TREE_ITEMS].items():
        if it.item_id in ids:
            raise VaultError(DAMAGED_INDEX, "item id %s has two items-tree entries" % it.item_id.hex())
        ids[it.item_id] = it
        if it.tombstone:
            continue
        for name, t, val in it.attrs:
            if is_indexed(v.root, name):
                expected_attr_keys.add(ordered_bytes(name.encode("utf-8")) + typed_key(t, val) + key)
    have = set(state[TREE_ATTRS])
    if have != expected_attr_keys:
        raise VaultError(DAMAGED_INDEX, "attributes tree: %d entries no live item has, %d missing" % (
            len(have - expected_attr_keys), len(expected_attr_keys - have)))
    spans = sorted((off, off + ln, rid) for rid, (off, ln) in v.rd.extents.items())
    prev_end, prev_rid = None, None
    for start, end, rid in spans:
        if prev_end is not None and start < prev_end:
            raise VaultError(DAMAGED_INDEX, "records %s and %s overlap" % (prev_rid.hex(), rid.hex()))
        if prev_end is None or end > prev_end:
            prev_end, prev_rid = end, rid


# ---------------------------------------------------------------------------
# Records (§6, unchanged)


def read_values(v, users, keep_bytes=4096):
    """users: objects with record (rid, off, len), item_id, member_index, size, data_offset. Reads each record
    once, checks the member table for every user (§7 rules), returns {id(user): (sha256, bytes or None)}."""
    by_rec = {}
    for u in users:
        by_rec.setdefault(u.record, []).append(u)
    out = {}
    h = v.rd.h
    for (rid, off, ln), us in sorted(by_rec.items(), key=lambda kv: kv[0][1]):
        what = "record %s (item %s)" % (rid.hex(), us[0].item_id.hex())
        ad = b"kcar-rec-v1" + h.vault_id + rid
        stream = v1.ChunkStream(v1.iter_chunks(v.rd.vf, h.length, off, ln, h.k_record, ad, DAMAGED_RECORD, what))
        try:
            n = read_varint(stream.u8)
            if not 1 <= n <= MEMBERS_MAX:
                raise Bad("member count %d" % n)
            table = []
            for _ in range(n):
                mid = stream.take(16)
                size = read_varint(stream.u8)
                table.append((mid, size))
            starts, acc = [], 0
            for _, size in table:
                starts.append(acc)
                acc += size
            wanted = {}
            for u in us:
                if u.member_index >= n:
                    raise Bad("item %s: member index %d of %d" % (u.item_id.hex(), u.member_index, n))
                mid, size = table[u.member_index]
                if mid != u.item_id or size != u.size or starts[u.member_index] != u.data_offset:
                    raise Bad("item %s: member %d is (%s, %d at %d), the index says (%d at %d)" % (
                        u.item_id.hex(), u.member_index, mid.hex(), size, starts[u.member_index], u.size,
                        u.data_offset))
                wanted.setdefault(u.member_index, []).append(u)
            for i, (mid, size) in enumerate(table):
                hs = hashlib.sha256() if i in wanted else None
                buf = bytearray() if i in wanted and size <= keep_bytes else None
                for piece in stream.pieces(size):
                    if hs is not None:
                        hs.update(piece)
                    if buf is not None:
                        buf += piece
                if hs is not None:
                    for u in wanted[i]:
                        out[id(u)] = (hs.hexdigest(), None if buf is None else bytes(buf))
            if not stream.at_end():
                raise Bad("bytes after the last member's data")
        except (Bad, Short) as e:
            raise VaultError(DAMAGED_RECORD, "%s: %s" % (what, e))
    return out


# ---------------------------------------------------------------------------
# Verification (V3.3, V4, V6, V7 and §8 step 3)


def verify_trailers(v):
    """Every trailer back to the first commit of the file: valid, generation one less, chain rules; no
    commit's records region holds a valid trailer."""
    vf, h = v.rd.vf, v.rd.h
    failed = [0]
    t = v.last
    while True:
        region_end = t.pos  # V7: the whole commit before its trailer
        if region_end >= t.commit_start + TRAILER2_SIZE:
            hidden = last_valid_trailer2(vf, h, t.commit_start, region_end, failed)
            if hidden is not None:
                raise VaultError(DAMAGED_INDEX, "a valid trailer of generation %d lies at %d inside the commit "
                                 "of generation %d" % (hidden.generation, hidden.pos, t.generation))
        if t.previous == NONE64:
            return
        p = read_trailer2_at(vf, h, t.previous)
        if p is None or p.generation + 1 != t.generation:
            raise VaultError(DAMAGED_INDEX, "the trailer before generation %d does not verify" % t.generation)
        if not t.fold and p.chain + 1 != t.chain:
            raise VaultError(DAMAGED_INDEX, "generation %d chain %d after chain %d" % (t.generation, t.chain,
                                                                                     p.chain))
        t = p


def check_versions(v):
    """After full_state. V4: the root's clock is the greatest hlc its trees hold; a greater one is damaged
    index, which verification MUST report. V5: every version a later (delta) commit makes is greater than
    every version before it, so above the root's clock and above every earlier delta's; kcar's commits broke
    that until 2026-12-02 (a clock taken from the root only), and a merge commit (V9) carries the other copy's
    versions, which may be below the floor, so a failure of that is returned as a warning, not a verdict."""
    for tr, top in v.tree_clock.items():
        if top > v.root.clock:
            raise VaultError(DAMAGED_INDEX, "the %s tree holds hlc %d, above the root's clock %d" % (
                TREE_NAMES[tr], top, v.root.clock))
    problems = []
    floor = v.root.clock
    for d, ops, rt, wt in v.deltas:
        what = "delta segment of generation %d" % d.generation
        hlcs = [parse_body(v.root, tr, key, body, rt, wt, what).hlc for tr, key, op, body in ops
                if op == 1 and tr == TREE_ITEMS]
        if hlcs and min(hlcs) <= floor:
            problems.append("%s makes hlc %d, not above %d (the root's clock or an earlier delta's versions)" % (
                what, min(hlcs), floor))
        floor = max([floor] + hlcs)
    return problems


def verify(v):
    state = full_state(v)
    check_consistency(v, state)
    for p in check_versions(v):
        sys.stderr.write("warning: V4/V5 clock: %s\n" % p)
    verify_trailers(v)
    users = [it for it in state[TREE_ITEMS].values() if not it.tombstone] + list(state[TREE_HISTORY].values())
    read_values(v, users, keep_bytes=0)
    return state


# ---------------------------------------------------------------------------
# Output


def attr_json(t, val):
    if t == 5:
        return base64.b64encode(val).decode("ascii")
    return val


def item_json(it, val=None):
    d = {
        "id": it.item_id.hex(),
        "class": it.cls,
        "version": {"hlc": it.hlc, "writer": it.writer.hex()},
    }
    if it.tombstone:
        d["tombstone"] = True
        d["key"] = {n: attr_json(t, x) for n, t, x in it.key_values}
        return d
    d["attributes"] = {n: attr_json(t, x) for n, t, x in it.attrs}
    d["attribute_types"] = {n: ATTR_TYPES.get(t, str(t)) for n, t, x in it.attrs}
    d["absent"] = it.absent
    d["size"] = it.size
    if val is not None:
        d["sha256"] = val[0]
        if val[1] is not None:
            try:
                d["value"] = val[1].decode("utf-8")
            except UnicodeDecodeError:
                d["value_base64"] = base64.b64encode(val[1]).decode("ascii")
    return d


WHY = {1: "replaced", 2: "lost-merge", 3: "deleted"}


def history_json(e, val=None):
    d = {
        "id": e.item_id.hex(),
        "version": {"hlc": e.hlc, "writer": e.writer.hex()},
        "why": WHY[e.why],
        "class": e.cls,
        "attributes": {n: attr_json(t, x) for n, t, x in e.attrs},
        "size": e.size,
    }
    if val is not None:
        d["sha256"] = val[0]
        if val[1] is not None:
            try:
                d["value"] = val[1].decode("utf-8")
            except UnicodeDecodeError:
                d["value_base64"] = base64.b64encode(val[1]).decode("ascii")
    return d


def parse_cli_value(s):
    if len(s) >= 2 and s[1] == ":" and s[0] in "sibdx":
        t, raw = s[0], s[2:]
        if t == "s":
            return 1, raw
        if t == "i":
            return 2, int(raw)
        if t == "b":
            return 3, raw in ("1", "true")
        if t == "d":
            return 4, int(raw)
        return 5, bytes.fromhex(raw)
    return 1, s


def lookup_item_key(v, item_key, ov):
    """One items-tree entry by its full key: the deltas first, then a descent."""
    hit = ov.get((TREE_ITEMS, item_key))
    if hit is not None:
        return hit[1] if hit[0] == 1 else None
    found = descend_range(v.rd, v.root, TREE_ITEMS, v.root.trees[TREE_ITEMS], item_key)
    for key, body, rt, wt in found:
        if key == item_key:
            return parse_body(v.root, TREE_ITEMS, key, body, rt, wt, "items tree")
    return None


def get_by_primary_key(v, cls, given):
    schema = v.root.schema.get(cls, [])
    names = [n for n, _, _ in schema]
    for n in given:
        if n not in names:
            raise VaultError("usage", "%r is not a key attribute of class %r (schema: %s)" % (n, cls, names))
    prefix = ordered_bytes(cls.encode("utf-8"))
    for name, dt, dv in schema:
        if name in given:
            t, val = given[name]
            if t == 1 and dt != 1:
                t, val = dt, (parse_cli_value("%s:%s" % ("sibdx"[dt - 1], val))[1])
        else:
            t, val = dt, dv
        prefix += typed_key(t, val)
    ov = overlay(v)
    before = v.rd.pages_read
    found = descend_range(v.rd, v.root, TREE_ITEMS, v.root.trees[TREE_ITEMS], prefix)
    pages = v.rd.pages_read - before
    result = {}
    for key, body, rt, wt in found:
        result[key] = parse_body(v.root, TREE_ITEMS, key, body, rt, wt, "items tree")
    for (tr, key), (op, parsed, d) in ov.items():
        if tr == TREE_ITEMS and key.startswith(prefix):
            if op == 1:
                result[key] = parsed
            else:
                result.pop(key, None)
    return [result[k] for k in sorted(result)], pages


def find_by_attr(v, name, t, val):
    if not is_indexed(v.root, name):
        raise VaultError("usage", "%r is not indexed (schema: %s)" % (name, v.root.indexed))
    prefix = ordered_bytes(name.encode("utf-8")) + typed_key(t, val)
    ov = overlay(v)
    before = v.rd.pages_read
    found = set(k for k, _, _, _ in descend_range(v.rd, v.root, TREE_ATTRS, v.root.trees[TREE_ATTRS], prefix))
    for (tr, key), (op, parsed, d) in ov.items():
        if tr == TREE_ATTRS and key.startswith(prefix):
            if op == 1:
                found.add(key)
            else:
                found.discard(key)
    items = []
    for key in sorted(found):
        it = lookup_item_key(v, key[len(prefix):], ov)
        if it is None or it.tombstone:
            raise VaultError(DAMAGED_INDEX, "attributes-tree entry names an item key with no live item")
        items.append(it)
    return items, v.rd.pages_read - before


def run(args):
    kind, secret = v1.load_secret(args)
    vf = v1.VaultFile(args.vault)
    h = v1.read_header(vf, versions=(1, 2))
    if h.version == 1:
        if args.get or args.find or args.history:
            raise VaultError("usage", "a version 1 vault: --get, --find and --history need version 2")
        argv = [args.vault] + (["--key-file", args.key_file] if args.key_file else
                               ["--passphrase-file", args.passphrase_file])
        return v1.main(argv + (["--verify"] if args.verify else ["--dump-json"] if args.dump_json else ["--list"]))
    v1.unlock(h, kind, secret)
    v = open_vault2(vf, h)
    if v.incomplete:
        if args.verify:
            raise VaultError(INCOMPLETE_COMMIT, "%d bytes after the last complete commit (generation %d)" % (
                v.incomplete, v.last.generation))
        sys.stderr.write("warning: incomplete commit: %d bytes after the last complete commit; reading "
                         "generation %d\n" % (v.incomplete, v.last.generation))
    if args.verify:
        state = verify(v)
        live = sum(1 for it in state[TREE_ITEMS].values() if not it.tombstone)
        print("ok: %d items, %d tombstones, %d history entries, generation %d, %d pending delta segments, "
              "heights %d/%d/%d, %d pages" % (
                  live, len(state[TREE_ITEMS]) - live, len(state[TREE_HISTORY]), v.last.generation,
                  len(v.deltas), v.heights[1], v.heights[2], v.heights[3], v.pages_scanned))
        return 0
    if args.get is not None:
        cls = args.get[0]
        given = {}
        for a in args.get[1:]:
            if "=" not in a:
                raise VaultError("usage", "NAME=VALUE expected, got %r" % a)
            n, s = a.split("=", 1)
            given[n] = parse_cli_value(s)
        items, pages = get_by_primary_key(v, cls, given)
        live = [it for it in items if not it.tombstone]
        vals = read_values(v, live)
        out = {"pages_read": pages,
               "items": [item_json(it, vals.get(id(it))) for it in live],
               "tombstones": [item_json(it) for it in items if it.tombstone]}
        json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if args.find is not None:
        if "=" not in args.find:
            raise VaultError("usage", "NAME=VALUE expected")
        n, s = args.find.split("=", 1)
        t, val = parse_cli_value(s)
        items, pages = find_by_attr(v, n, t, val)
        vals = read_values(v, items)
        out = {"pages_read": pages, "items": [item_json(it, vals.get(id(it))) for it in items]}
        json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    state = full_state(v)
    items = sorted((it for it in state[TREE_ITEMS].values() if not it.tombstone), key=lambda it: it.key)
    tombs = sorted((it for it in state[TREE_ITEMS].values() if it.tombstone), key=lambda it: it.key)
    hist = sorted(state[TREE_HISTORY].values(), key=lambda e: e.key)
    if args.history:
        vals = read_values(v, hist)
        json.dump({"tombstones": [item_json(it) for it in tombs],
                   "history": [history_json(e, vals.get(id(e))) for e in hist]},
                  sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if args.dump_json:
        vals = read_values(v, items + hist)
        out = {
            "version": 2,
            "vault_id": h.vault_id.hex(),
            "group": h.group,
            "generation": v.last.generation,
            "fold_generation": v.fold.generation,
            "pending_deltas": len(v.deltas),
            "clock": v.root.clock,
            "retention": {"keep": v.root.keep, "days": v.root.days, "tombstone_days": v.root.tombstone_days},
            "garbage": v.root.garbage,
            "schema": {c: [[n, ATTR_TYPES.get(t, str(t)), attr_json(t, x)] for n, t, x in v.root.schema[c]]
                       for c in v.root.schema_order},
            "indexed": v.root.indexed,
            "heights": {TREE_NAMES[k]: x for k, x in v.heights.items()},
            "items": [item_json(it, vals.get(id(it))) for it in items],
            "tombstones": [item_json(it) for it in tombs],
            "history": [history_json(e, vals.get(id(e))) for e in hist],
        }
        json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    # One line an item, in items-tree order: id, class, value size, attributes (key attributes first, in
    # schema order; an absent one shown as -name), then the rest.
    for it in items:
        keys = [n for n, _, _ in v.root.schema.get(it.cls, [])]
        attrs = {n: (t, x) for n, t, x in it.attrs}
        shown = []
        for i, n in enumerate(keys):
            shown.append("-" + n if it.absent >> i & 1 else "%s=%s" % (n, attr_text(*attrs[n])))
        shown += ["%s=%s" % (n, attr_text(t, x)) for n, t, x in it.attrs if n not in keys]
        print("%s  %s  %8d  %s" % (it.item_id.hex(), it.cls, it.size, " ".join(shown)))
    return 0


def attr_text(t, x):
    if t == 1:
        return json.dumps(x, ensure_ascii=False)
    if t == 5:
        return "x:" + x.hex()
    if t == 3:
        return "true" if x else "false"
    return "%s%d" % ("d:" if t == 4 else "", x)


def main(argv=None):
    ap, m = v1.arg_parser("Strict reader of kcar vault format version 2 (SPEC.md Part 4).")
    m.add_argument("--get", nargs="+", metavar="ARG")
    m.add_argument("--find", metavar="NAME=VALUE")
    m.add_argument("--history", action="store_true")
    return v1.report(run, ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
