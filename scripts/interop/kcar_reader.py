#!/usr/bin/python3
"""Independent, strict reader of kcar vault format v1, written from SPEC.md alone.

Usage: kcar_reader.py VAULT (--key-file F | --passphrase-file F) [--list | --dump-json | --verify]

Dependencies: python3 standard library + PyNaCl (nacl.bindings, i.e. libsodium).
On failure prints `error: <SPEC.md §11 error name>: detail` to stderr and exits 1.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import struct
import sys
import zlib

try:
    import nacl.bindings as sodium
    import nacl.exceptions
except ImportError:  # pragma: no cover
    sys.stderr.write("error: internal: PyNaCl (python3-nacl) is required\n")
    sys.exit(2)

# ---------------------------------------------------------------------------
# Error names (§11)

NOT_A_VAULT = "not a vault"
UNSUPPORTED_VERSION = "unsupported version"
DAMAGED_HEADER = "damaged header"
WRONG_SECRET = "wrong passphrase or key"
TAMPERED_HEADER = "tampered header"
TRUNCATED = "truncated"
INCOMPLETE_COMMIT = "incomplete commit"
DAMAGED_INDEX = "damaged index"
DAMAGED_RECORD = "damaged record"


class VaultError(Exception):
    def __init__(self, kind, detail):
        super().__init__("%s: %s" % (kind, detail))
        self.kind = kind
        self.detail = detail


class Short(Exception):
    """Ran out of bytes while parsing (converted to the caller's error)."""


class Bad(Exception):
    """A parse rule was violated (converted to the caller's error)."""


# ---------------------------------------------------------------------------
# Named limits (§3)

HEADER_MIN = 96
HEADER_MAX = 65536
SLOTS_MAX = 32
GROUP_MAX = 255
KDF_OPS_MIN, KDF_OPS_MAX = 1, 32
KDF_MEM_MIN, KDF_MEM_MAX = 8192, 1048576
KDF_TOTAL_MAX = KDF_MEM_MAX * KDF_OPS_MAX  # SPEC §3: all passphrase slots together, KiB x passes
CHUNK_SIZE = 1048576
MEMBERS_MAX = 65536
INDEX_MAX = 268435456
ITEMS_MAX = 4000000
ATTRS_MAX = 256
ATTR_NAME_MAX = 255
ATTR_VALUE_MAX = 65536
CHAIN_MAX = 64
CHAIN_INDEX_MAX = INDEX_MAX  # SPEC §3: plaintext of all the segments of a chain together
CHAIN_OPS_MAX = 2 * ITEMS_MAX  # SPEC §3: operations of all the segments of a chain together
TRAILER_PROBES_MAX = 16  # SPEC §8: candidates whose MAC fails before the backward search gives up
VALUE_MAX = 1 << 48
U64_MAX = (1 << 64) - 1

MAGIC = b"\x89KCV\r\n\x1a\n"
TRAILER_MAGIC = b"KCARTRL1"
TRAILER_SIZE = 96
NO_PREVIOUS = 0xFFFFFFFFFFFFFFFF
BLOCK_HEAD = 4 + 24
BLOCK_S_MIN = 22
BLOCK_S_MAX = CHUNK_SIZE + 21

SLOT_TAG = 0x8010
TAG_VAULT_ID = 0x8001
TAG_GROUP = 0x8002
CRITICAL = 0x8000

KIND_PASSPHRASE, KIND_KEYFILE, KIND_X25519 = 1, 2, 3

# ---------------------------------------------------------------------------
# Primitives (§2)


def H(m):
    return sodium.crypto_generichash_blake2b_salt_personal(m, 32)


def MAC(k, m):
    return sodium.crypto_generichash_blake2b_salt_personal(m, 32, key=k)


def KDF(vk, subkey_id, ctx=b"kcarvlt1"):
    # libsodium crypto_kdf_derive_from_key (not exposed by PyNaCl 1.5):
    # BLAKE2b(out=32, key=vk, salt=LE64(id)||0^8, personal=ctx||0^8, message=empty)
    salt = struct.pack("<Q", subkey_id) + b"\x00" * 8
    personal = ctx + b"\x00" * 8
    return sodium.crypto_generichash_blake2b_salt_personal(
        b"", 32, key=vk, salt=salt, person=personal)


def AEAD_open(k, nonce, c, ad):
    """Returns the plaintext or None."""
    try:
        return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(c, ad, nonce, k)
    except nacl.exceptions.CryptoError:
        return None


def PWHASH(p, salt, ops, mem_kib):
    return sodium.crypto_pwhash_alg(32, p, salt, ops, mem_kib * 1024,
                                    sodium.crypto_pwhash_ALG_ARGON2ID13)


def SEAL_open(sk, c):
    try:
        pk = sodium.crypto_scalarmult_base(sk)
        return sodium.crypto_box_seal_open(c, pk, sk)
    except nacl.exceptions.CryptoError:
        return None


# ---------------------------------------------------------------------------
# Encodings (§1)


class Cursor:
    """Parser over an in-memory byte string."""

    def __init__(self, buf, pos=0, end=None):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def remaining(self):
        return self.end - self.pos

    def take(self, n):
        if n < 0 or self.end - self.pos < n:
            raise Short("need %d bytes at %d, %d left" % (n, self.pos, self.end - self.pos))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)

    def u8(self):
        if self.pos >= self.end:
            raise Short("need 1 byte at %d" % self.pos)
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def u16(self):
        return struct.unpack("<H", self.take(2))[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def i64(self):
        return struct.unpack("<q", self.take(8))[0]

    def varint(self):
        return read_varint(self.u8)

    def string(self, lo, hi, what):
        n = self.varint()
        if n < lo or n > hi:
            raise Bad("%s length %d outside %d..%d" % (what, n, lo, hi))
        raw = self.take(n)
        return utf8(raw, what)


def read_varint(next_byte):
    value = 0
    for i in range(10):
        b = next_byte()
        if i == 9 and b > 0x01:
            raise Bad("varint exceeds 64 bits")
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if b == 0 and i > 0:
                raise Bad("non-minimal varint")
            return value
    raise Bad("varint longer than 10 bytes")  # unreachable: 10th byte <= 1


def utf8(raw, what):
    try:
        return raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise Bad("%s is not valid UTF-8" % what)


# ---------------------------------------------------------------------------
# File access


class VaultFile:
    def __init__(self, path):
        try:
            self.fd = os.open(path, os.O_RDONLY)
            self.size = os.fstat(self.fd).st_size
        except OSError as e:
            raise VaultError(NOT_A_VAULT, "cannot read %s: %s" % (path, e.strerror))

    def pread(self, off, n):
        out = bytearray()
        while len(out) < n:
            try:
                b = os.pread(self.fd, n - len(out), off + len(out))
            except OSError as e:
                raise VaultError(TRUNCATED, "read error at %d: %s" % (off, e.strerror))
            if not b:
                break
            out += b
        return bytes(out)


# ---------------------------------------------------------------------------
# Header (§4) and key slots (§5)


class Slot:
    def __init__(self, kind, raw):
        self.kind = kind
        self.raw = raw


def parse_slot(value):
    if len(value) < 1:
        raise Bad("empty key slot")
    kind = value[0]
    if kind == KIND_PASSPHRASE:
        if len(value) != 97:
            raise Bad("passphrase slot of %d bytes (must be 97)" % len(value))
        ops, mem = struct.unpack("<II", value[1:9])
        if not KDF_OPS_MIN <= ops <= KDF_OPS_MAX:
            raise Bad("Argon2id passes %d outside %d..%d" % (ops, KDF_OPS_MIN, KDF_OPS_MAX))
        if not KDF_MEM_MIN <= mem <= KDF_MEM_MAX:
            raise Bad("Argon2id memory %d KiB outside %d..%d" % (mem, KDF_MEM_MIN, KDF_MEM_MAX))
        s = Slot(kind, value)
        s.ops, s.mem = ops, mem
        s.salt, s.nonce, s.ct = value[9:25], value[25:49], value[49:97]
        return s
    if kind == KIND_KEYFILE:
        if len(value) != 73:
            raise Bad("key-file slot of %d bytes (must be 73)" % len(value))
        s = Slot(kind, value)
        s.nonce, s.ct = value[1:25], value[25:73]
        return s
    if kind == KIND_X25519:
        if len(value) != 97:
            raise Bad("X25519 slot of %d bytes (must be 97)" % len(value))
        s = Slot(kind, value)
        s.sealed = value[1:97]
        return s
    raise Bad("unknown slot kind %d" % kind)


class Header:
    pass


def read_header(vf, versions=(1,)):
    """§4. versions: the format versions the caller reads (this v1 reader: 1 only; kcar2_reader.py: 1 and 2,
    whose header is the same, SPEC.md V1)."""
    # Step 1.
    if vf.size < 16:
        raise VaultError(NOT_A_VAULT, "file is %d bytes, shorter than 16" % vf.size)
    fixed = vf.pread(0, 16)
    if len(fixed) < 16:
        raise VaultError(NOT_A_VAULT, "file shorter than 16 bytes")
    if fixed[0:8] != MAGIC:
        raise VaultError(NOT_A_VAULT, "magic differs")
    version, reserved, L = struct.unpack("<HHI", fixed[8:16])
    if version not in versions:
        raise VaultError(UNSUPPORTED_VERSION, "version %d" % version)
    if reserved != 0:
        raise VaultError(DAMAGED_HEADER, "reserved bytes 0x%04x not zero" % reserved)
    if not HEADER_MIN <= L <= HEADER_MAX:
        raise VaultError(DAMAGED_HEADER, "header length %d outside %d..%d" % (L, HEADER_MIN, HEADER_MAX))
    if vf.size < L:
        raise VaultError(TRUNCATED, "file (%d bytes) ends inside the header (%d bytes)" % (vf.size, L))
    hdr = vf.pread(0, L)
    if len(hdr) != L:
        raise VaultError(TRUNCATED, "file ends inside the header")
    # Step 2.
    if not hmac.compare_digest(H(hdr[:L - 64]), hdr[L - 64:L - 32]):
        raise VaultError(DAMAGED_HEADER, "header checksum differs")
    # Step 3.
    h = Header()
    h.version = version
    h.length = L
    h.raw = hdr
    h.vault_id = None
    h.group = None
    h.slots = []
    h.unknown_fields = []
    try:
        c = Cursor(hdr, 16, L - 64)
        prev_tag = -1
        while c.remaining() > 0:
            if c.remaining() < 4:
                raise Bad("%d stray bytes after the last field" % c.remaining())
            tag = c.u16()
            length = c.u16()
            if length > c.remaining():
                raise Bad("field 0x%04x of %d bytes overruns the field area" % (tag, length))
            value = c.take(length)
            if tag < prev_tag or (tag == prev_tag and tag != SLOT_TAG):
                raise Bad("field 0x%04x out of order or repeated (after 0x%04x)" % (tag, prev_tag))
            prev_tag = tag
            if tag == TAG_VAULT_ID:
                if length != 16:
                    raise Bad("vault id of %d bytes" % length)
                h.vault_id = value
            elif tag == TAG_GROUP:
                if not 1 <= length <= GROUP_MAX:
                    raise Bad("access group of %d bytes outside 1..%d" % (length, GROUP_MAX))
                if b"\x00" in value:
                    raise Bad("access group contains NUL")
                h.group = utf8(value, "access group")
            elif tag == SLOT_TAG:
                if len(h.slots) >= SLOTS_MAX:
                    raise Bad("more than %d key slots" % SLOTS_MAX)
                h.slots.append(parse_slot(value))
            elif tag & CRITICAL:
                raise Bad("unknown critical field 0x%04x" % tag)
            else:
                h.unknown_fields.append(tag)  # skipped, still covered by checksum and MAC
        if h.vault_id is None:
            raise Bad("no vault id field")
        if h.group is None:
            raise Bad("no access group field")
        if not h.slots:
            raise Bad("no key slot")
        total = sum(sl.mem * sl.ops for sl in h.slots if sl.kind == KIND_PASSPHRASE)
        if total > KDF_TOTAL_MAX:
            raise Bad("passphrase slots ask for %d KiB x passes in all (KDF_TOTAL_MAX %d)" % (total, KDF_TOTAL_MAX))
    except (Bad, Short) as e:
        raise VaultError(DAMAGED_HEADER, str(e))
    return h


def slot_ad(vault_id, kind):
    return b"kcar-slot-v1" + vault_id + bytes([kind])


def unlock(h, secret_kind, secret):
    """Step 4 and 5: returns VK."""
    vk = None
    for i, s in enumerate(h.slots):
        if secret_kind == "passphrase" and s.kind == KIND_PASSPHRASE:
            k = PWHASH(secret, s.salt, s.ops, s.mem)
            pt = AEAD_open(k, s.nonce, s.ct, slot_ad(h.vault_id, KIND_PASSPHRASE))
            if pt is not None and len(pt) == 32:
                vk = pt
        elif secret_kind == "key" and s.kind == KIND_KEYFILE:
            k = MAC(secret, b"kcar-keyfile-v1")
            pt = AEAD_open(k, s.nonce, s.ct, slot_ad(h.vault_id, KIND_KEYFILE))
            if pt is not None and len(pt) == 32:
                vk = pt
        elif secret_kind == "key" and s.kind == KIND_X25519:
            pt = SEAL_open(secret, s.sealed)
            if pt is not None and len(pt) == 48 and hmac.compare_digest(pt[32:], h.vault_id):
                vk = pt[:32]
        if vk is not None:
            h.opened_slot = i
            break
    if vk is None:
        raise VaultError(WRONG_SECRET, "no key slot opens with the %s given" % (
            "passphrase" if secret_kind == "passphrase" else "key file"))
    h.k_header = KDF(vk, 1)
    h.k_trailer = KDF(vk, 2)
    h.k_index = KDF(vk, 3)
    h.k_record = KDF(vk, 4)
    L = h.length
    if not hmac.compare_digest(MAC(h.k_header, h.raw[:L - 32]), h.raw[L - 32:L]):
        raise VaultError(TAMPERED_HEADER, "header MAC differs (slot %d opened)" % h.opened_slot)
    return vk


# ---------------------------------------------------------------------------
# Blocks and chunks (§6), shared by records and index segments


def iter_chunks(vf, body_start, ext_off, ext_len, key, ad_prefix, err, what, total_max=None):
    """Yield the plaintext chunks of the blocks filling body extent [ext_off, ext_off+ext_len)."""
    pos = ext_off
    end = ext_off + ext_len
    index = 0
    total = 0
    if ext_len <= 0:
        raise VaultError(err, "%s: empty extent (no blocks)" % what)
    while pos < end:
        if end - pos < BLOCK_HEAD:
            raise VaultError(err, "%s: %d stray bytes after block %d" % (what, end - pos, index))
        head = vf.pread(body_start + pos, BLOCK_HEAD)
        if len(head) != BLOCK_HEAD:
            raise VaultError(err, "%s: block %d past end of file" % (what, index))
        S = struct.unpack("<I", head[:4])[0]
        if not BLOCK_S_MIN <= S <= BLOCK_S_MAX:
            raise VaultError(err, "%s: block %d sealed length %d outside %d..%d" % (
                what, index, S, BLOCK_S_MIN, BLOCK_S_MAX))
        if S > end - pos - BLOCK_HEAD:
            raise VaultError(err, "%s: block %d overruns the extent" % (what, index))
        nonce = head[4:28]
        sealed = vf.pread(body_start + pos + BLOCK_HEAD, S)
        if len(sealed) != S:
            raise VaultError(err, "%s: block %d past end of file" % (what, index))
        pos += BLOCK_HEAD + S
        last = pos == end
        if index > 0xFFFFFFFF:
            raise VaultError(err, "%s: too many chunks" % what)
        ad = ad_prefix + struct.pack("<IB", index, 1 if last else 0)
        P = AEAD_open(key, nonce, sealed, ad)
        if P is None:
            raise VaultError(err, "%s: chunk %d does not authenticate%s" % (
                what, index, " (as the last chunk)" if last else ""))
        codec = P[0]
        clen = struct.unpack("<I", P[1:5])[0]
        payload = P[5:]
        if last:
            if not 1 <= clen <= CHUNK_SIZE:
                raise VaultError(err, "%s: last chunk %d length %d outside 1..%d" % (what, index, clen, CHUNK_SIZE))
        elif clen != CHUNK_SIZE:
            raise VaultError(err, "%s: chunk %d length %d, not %d" % (what, index, clen, CHUNK_SIZE))
        total += clen
        if total_max is not None and total > total_max:
            raise VaultError(err, "%s: plaintext exceeds %d bytes" % (what, total_max))
        if codec == 0:
            if len(payload) != clen:
                raise VaultError(err, "%s: stored chunk %d declares %d bytes, holds %d" % (
                    what, index, clen, len(payload)))
            chunk = payload
        elif codec == 1:
            if len(payload) >= clen:
                raise VaultError(err, "%s: zlib chunk %d payload %d not shorter than chunk length %d" % (
                    what, index, len(payload), clen))
            chunk = inflate_exact(payload, clen, err, "%s: chunk %d" % (what, index))
        else:
            raise VaultError(err, "%s: chunk %d unknown codec %d" % (what, index, codec))
        yield chunk
        index += 1


def inflate_exact(payload, clen, err, what):
    try:
        d = zlib.decompressobj(zlib.MAX_WBITS)
        out = d.decompress(payload, clen)
        if len(out) == clen and not d.eof:
            # More input pending: it may only finish the stream (checksum), never produce data.
            extra = d.decompress(d.unconsumed_tail, 1)
            if extra:
                raise VaultError(err, "%s: zlib stream inflates to more than %d bytes" % (what, clen))
        if d.unconsumed_tail:
            raise VaultError(err, "%s: zlib stream inflates to more than %d bytes" % (what, clen))
        if not d.eof:
            raise VaultError(err, "%s: zlib stream incomplete" % what)
        if d.unused_data:
            raise VaultError(err, "%s: %d bytes after the zlib stream" % (what, len(d.unused_data)))
        if len(out) != clen:
            raise VaultError(err, "%s: zlib stream inflates to %d bytes, not %d" % (what, len(out), clen))
        return out
    except zlib.error as e:
        raise VaultError(err, "%s: zlib: %s" % (what, e))


class ChunkStream:
    """Sequential reader over a chunk iterator."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.buf = b""
        self.pos = 0

    def _fill(self):
        while self.pos >= len(self.buf):
            nxt = next(self.chunks, None)
            if nxt is None:
                return False
            self.buf, self.pos = nxt, 0
        return True

    def u8(self):
        if not self._fill():
            raise Short("record ends early")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def take(self, n):
        out = bytearray()
        while len(out) < n:
            if not self._fill():
                raise Short("record ends early")
            k = min(n - len(out), len(self.buf) - self.pos)
            out += self.buf[self.pos:self.pos + k]
            self.pos += k
        return bytes(out)

    def pieces(self, n):
        left = n
        while left:
            if not self._fill():
                raise Short("record data ends %d bytes early" % left)
            k = min(left, len(self.buf) - self.pos)
            yield self.buf[self.pos:self.pos + k]
            self.pos += k
            left -= k

    def at_end(self):
        return not self._fill()


# ---------------------------------------------------------------------------
# Trailers (§8)


class Trailer:
    pass


def trailer_mac_ok(h, raw):
    if len(raw) != TRAILER_SIZE or raw[:8] != TRAILER_MAGIC:
        return False
    m = MAC(h.k_trailer, b"kcar-trl-v1" + h.vault_id + raw[:64])
    return hmac.compare_digest(m, raw[64:96])


def parse_trailer(raw, pos):
    """Fields of 96 bytes at body offset pos; raises Bad on any rule of §8 (no MAC checked here)."""
    t = Trailer()
    t.pos = pos
    (magic, t.generation, t.commit_start, t.index_offset, t.index_length, t.previous,
     t.item_count, t.flags, t.chain, reserved) = struct.unpack("<8sQQQQQIHHQ", raw[:64])
    if magic != TRAILER_MAGIC:
        raise Bad("trailer magic differs")
    if t.generation < 1:
        raise Bad("trailer generation 0")
    if reserved != 0:
        raise Bad("trailer reserved bytes not zero")
    if t.flags & ~1:
        raise Bad("trailer flags 0x%04x has reserved bits" % t.flags)
    t.checkpoint = bool(t.flags & 1)
    if t.checkpoint and t.chain != 0:
        raise Bad("checkpoint with chain %d" % t.chain)
    if not t.checkpoint and not 1 <= t.chain <= CHAIN_MAX - 1:
        raise Bad("delta with chain %d outside 1..%d" % (t.chain, CHAIN_MAX - 1))
    if t.index_length == 0:
        raise Bad("index length 0")
    if t.index_offset + t.index_length != pos:
        raise Bad("index segment [%d+%d) does not end at the trailer (%d)" % (
            t.index_offset, t.index_length, pos))
    if not t.commit_start <= t.index_offset:
        raise Bad("commit start %d after index offset %d" % (t.commit_start, t.index_offset))
    if t.previous == NO_PREVIOUS:
        if t.commit_start != 0:
            raise Bad("first commit starts at %d, not 0" % t.commit_start)
        if not t.checkpoint:
            raise Bad("first commit is not a checkpoint")
    else:
        if t.previous + TRAILER_SIZE != t.commit_start:
            raise Bad("commit start %d does not follow the previous trailer at %d" % (
                t.commit_start, t.previous))
    return t


def trailer_candidate(raw, pos):
    """The fields of raw if they could be a trailer at pos (§8: magic and every field rule), else None."""
    try:
        return parse_trailer(raw, pos)
    except Bad:
        return None


def read_trailer_at(vf, h, body_len, pos):
    """Returns a valid trailer at body offset pos (fields, then MAC), or None."""
    if pos < 0 or pos + TRAILER_SIZE > body_len:
        return None
    raw = vf.pread(h.length + pos, TRAILER_SIZE)
    t = trailer_candidate(raw, pos)
    if t is None or not trailer_mac_ok(h, raw):
        return None
    return t


def last_valid_trailer(vf, h, lo_limit, end, failed, magic=TRAILER_MAGIC, size=TRAILER_SIZE,
                       candidate=None, mac_ok=None):
    """The valid trailer at the highest body offset p with lo_limit <= p and p + size <= end (newest first,
    a MAC only for candidates), or None; failed[0] counts MAC failures up to TRAILER_PROBES_MAX. The version 2
    reader passes its trailer's magic, size, field rules and MAC (SPEC.md V7 keeps §8's search)."""
    candidate = candidate or trailer_candidate
    mac_ok = mac_ok or trailer_mac_ok
    start_limit = end - size + 1  # candidate positions are < start_limit
    window_size = 1 << 20
    while start_limit > lo_limit:
        lo = max(lo_limit, start_limit - window_size)
        window = vf.pread(h.length + lo, start_limit - lo + size - 1)
        found = []
        j = window.find(magic)
        while 0 <= j < start_limit - lo:
            found.append(lo + j)
            j = window.find(magic, j + 1)
        for pos in reversed(found):
            raw = window[pos - lo:pos - lo + size]
            t = candidate(raw, pos) if len(raw) == size else None
            if t is None:
                continue
            if mac_ok(h, raw):
                return t
            failed[0] += 1
            if failed[0] >= TRAILER_PROBES_MAX:
                raise VaultError(DAMAGED_INDEX, "%d trailer candidates do not verify (TRAILER_PROBES_MAX)" % failed[0])
        start_limit = lo
    return None


def hidden_commits(vf, h, last):
    """§8 verification: walk every trailer back to the first commit; no commit's records hold a valid trailer."""
    body_len = vf.size - h.length
    failed = [0]
    t = last
    while True:
        if t.index_offset >= t.commit_start + TRAILER_SIZE:
            hidden = last_valid_trailer(vf, h, t.commit_start, t.index_offset, failed)
            if hidden is not None:
                raise VaultError(DAMAGED_INDEX, "a valid trailer of generation %d lies at body offset %d, inside the "
                                 "records of generation %d" % (hidden.generation, hidden.pos, t.generation))
        if t.previous == NO_PREVIOUS:
            return
        p = read_trailer_at(vf, h, body_len, t.previous)
        if p is None or p.generation + 1 != t.generation:
            raise VaultError(DAMAGED_INDEX, "the trailer before generation %d does not verify" % t.generation)
        t = p


ZERO_END_MIN = 16


def damaged_end(vf, h, last_pos, magic=TRAILER_MAGIC, size=TRAILER_SIZE, candidate=None, mac_ok=None):
    """§8, "a damaged last trailer is not an interrupted write": when at least a trailer's worth of bytes follows
    the last valid trailer (at body offset last_pos) and the file's last `size` bytes are a complete trailer
    (their magic in place, or the candidate rules holding with the magic aside; not ending in ZERO_END_MIN zero
    bytes) whose MAC fails, the file is damaged index, not an incomplete commit. The version 2 reader passes its
    trailer's magic, size, field rules and MAC (V7)."""
    candidate = candidate or trailer_candidate
    mac_ok = mac_ok or trailer_mac_ok
    q = vf.size - h.length - size
    if q < last_pos + size:
        return
    raw = vf.pread(h.length + q, size)
    if raw[-ZERO_END_MIN:] == bytes(ZERO_END_MIN):
        return
    if raw[:len(magic)] != magic and candidate(magic + raw[len(magic):], q) is None:
        return
    if not mac_ok(h, raw):
        raise VaultError(DAMAGED_INDEX, "the file ends in a complete trailer (body offset %d) whose MAC does not "
                         "verify: damage, not an interrupted write (§8)" % q)


def find_last_commit(vf, h):
    """Returns (trailer, incomplete_bytes), as §8 "Finding the last commit" says: offsets newest first, a
    MAC only for a candidate, and at most TRAILER_PROBES_MAX candidates whose MAC fails; then the bytes after
    it must not end in a damaged trailer."""
    body_len = vf.size - h.length
    if body_len < TRAILER_SIZE:
        raise VaultError(TRUNCATED, "no complete commit after the header")
    t = last_valid_trailer(vf, h, 0, body_len, [0])
    if t is None:
        raise VaultError(TRUNCATED, "no complete commit after the header")
    damaged_end(vf, h, t.pos)
    return t, body_len - (t.pos + TRAILER_SIZE)


# ---------------------------------------------------------------------------
# Index (§7)

ATTR_TYPES = {1: "string", 2: "integer", 3: "bool", 4: "date", 5: "data"}


class Entry:
    __slots__ = ("item_id", "cls", "attrs", "size", "record_id", "record_offset",
                 "record_length", "member_index", "data_offset")


def parse_entry(c, item_id):
    e = Entry()
    e.item_id = item_id
    e.cls = c.string(1, ATTR_NAME_MAX, "class")
    n = c.varint()
    if n > ATTRS_MAX:
        raise Bad("item %s: %d attributes (over %d)" % (item_id.hex(), n, ATTRS_MAX))
    attrs = []
    prev_name = None
    for _ in range(n):
        nlen = c.varint()
        if not 1 <= nlen <= ATTR_NAME_MAX:
            raise Bad("item %s: attribute name length %d" % (item_id.hex(), nlen))
        raw_name = c.take(nlen)
        name = utf8(raw_name, "attribute name")
        if prev_name is not None and not raw_name > prev_name:
            raise Bad("item %s: attribute %r not in strictly ascending order" % (item_id.hex(), name))
        prev_name = raw_name
        t = c.u8()
        if t == 1:
            v = c.string(0, ATTR_VALUE_MAX, "string attribute")
        elif t == 2:
            v = c.i64()
        elif t == 3:
            b = c.u8()
            if b > 1:
                raise Bad("item %s: bool attribute %r = %d" % (item_id.hex(), name, b))
            v = bool(b)
        elif t == 4:
            v = c.i64()
        elif t == 5:
            dlen = c.varint()
            if dlen > ATTR_VALUE_MAX:
                raise Bad("item %s: data attribute of %d bytes" % (item_id.hex(), dlen))
            v = c.take(dlen)
        else:
            raise Bad("item %s: attribute %r has unknown type %d" % (item_id.hex(), name, t))
        attrs.append((name, t, v))
    e.attrs = attrs
    e.size = c.varint()
    if e.size > VALUE_MAX:
        raise Bad("item %s: value size %d over %d" % (item_id.hex(), e.size, VALUE_MAX))
    e.record_id = c.take(16)
    e.record_offset = c.varint()
    e.record_length = c.varint()
    e.member_index = c.varint()
    if e.member_index >= MEMBERS_MAX:
        raise Bad("item %s: member index %d outside 0..%d" % (item_id.hex(), e.member_index, MEMBERS_MAX - 1))
    e.data_offset = c.varint()
    if e.data_offset + e.size > U64_MAX:
        raise Bad("item %s: data offset + value size overflows" % item_id.hex())
    return e


def parse_segment(plain, checkpoint, ops_max=CHAIN_OPS_MAX, stored=None):
    c = Cursor(plain)
    count = c.varint()
    if stored is not None and count > stored // 16:
        raise Bad("%d operations in %d stored bytes: fewer than 16 per (random) item id" % (count, stored))
    if count > ops_max:
        raise Bad("%d operations: the chain would pass CHAIN_OPS_MAX (%d)" % (count, CHAIN_OPS_MAX))
    ops = []
    prev = None
    for _ in range(count):
        op = c.u8()
        if op not in (1, 2):
            raise Bad("unknown operation %d" % op)
        item_id = c.take(16)
        if prev is not None and not item_id > prev:
            raise Bad("item id %s not after %s (ascending, at most once)" % (item_id.hex(), prev.hex()))
        prev = item_id
        if op == 2:
            if checkpoint:
                raise Bad("delete of %s in a checkpoint" % item_id.hex())
            ops.append((2, item_id, None))
        else:
            ops.append((1, item_id, parse_entry(c, item_id)))
    if c.remaining():
        raise Bad("%d bytes after the last operation" % c.remaining())
    return ops


def read_segment(vf, h, t, total_max=INDEX_MAX):
    ad = b"kcar-idx-v1" + h.vault_id + struct.pack("<Q", t.generation)
    parts = []
    for chunk in iter_chunks(vf, h.length, t.index_offset, t.index_length, h.k_index, ad,
                             DAMAGED_INDEX, "index segment of generation %d" % t.generation,
                             total_max=min(INDEX_MAX, total_max)):
        parts.append(chunk)
    return b"".join(parts)


def load_index(vf, h, last):
    """Follow the trailers back to the checkpoint, apply the segments; returns the item dict."""
    body_len = vf.size - h.length
    chain = [last]
    t = last
    while not t.checkpoint:
        if len(chain) >= CHAIN_MAX:
            raise VaultError(DAMAGED_INDEX, "more than %d segments back to a checkpoint" % CHAIN_MAX)
        try:
            p = read_trailer_at(vf, h, body_len, t.previous)
        except Bad as e:
            raise VaultError(DAMAGED_INDEX, "trailer at %d: %s" % (t.previous, e))
        if p is None:
            raise VaultError(DAMAGED_INDEX, "previous trailer at %d of generation %d does not verify" % (
                t.previous, t.generation))
        if p.generation + 1 != t.generation:
            raise VaultError(DAMAGED_INDEX, "generation %d follows generation %d" % (t.generation, p.generation))
        if p.chain + 1 != t.chain:
            raise VaultError(DAMAGED_INDEX, "chain %d follows chain %d" % (t.chain, p.chain))
        chain.append(p)
        t = p
    chain.reverse()

    state = {}
    extents = {}  # record id -> (offset, length), over every entry read in the chain
    chain_bytes = 0
    chain_ops = 0
    for t in chain:
        try:
            # §7: the chain's segments share CHAIN_INDEX_MAX and CHAIN_OPS_MAX.
            plain = read_segment(vf, h, t, CHAIN_INDEX_MAX - chain_bytes)
            chain_bytes += len(plain)
            ops = parse_segment(plain, t.checkpoint, CHAIN_OPS_MAX - chain_ops, t.index_length)
            chain_ops += len(ops)
        except (Bad, Short) as e:
            raise VaultError(DAMAGED_INDEX, "index segment of generation %d: %s" % (t.generation, e))
        if t.checkpoint:
            state = {}
        for op, item_id, e in ops:
            if op == 2:
                if item_id not in state:
                    raise VaultError(DAMAGED_INDEX, "generation %d deletes missing item %s" % (
                        t.generation, item_id.hex()))
                del state[item_id]
                continue
            if item_id not in state and len(state) >= ITEMS_MAX:
                raise VaultError(DAMAGED_INDEX, "more than %d items" % ITEMS_MAX)
            ext = (e.record_offset, e.record_length)
            known = extents.get(e.record_id)
            if known is None:
                if e.record_offset + e.record_length > t.index_offset:
                    raise VaultError(DAMAGED_INDEX, "item %s: record [%d+%d) not inside the body before "
                                     "the index of generation %d (at %d)" % (
                                         item_id.hex(), e.record_offset, e.record_length,
                                         t.generation, t.index_offset))
                extents[e.record_id] = ext
            elif known != ext:
                raise VaultError(DAMAGED_INDEX, "record %s named with two extents" % e.record_id.hex())
            state[item_id] = e
        if len(state) != t.item_count:
            raise VaultError(DAMAGED_INDEX, "generation %d: trailer says %d items, the index holds %d" % (
                t.generation, t.item_count, len(state)))
        check_state(state, extents, t)
    return state


def check_state(state, extents, t):
    # Two different records never overlap.
    spans = sorted((off, off + ln, rid) for rid, (off, ln) in extents.items())
    prev_end, prev_rid = None, None
    for start, end, rid in spans:
        if prev_end is not None and start < prev_end and start < end:
            raise VaultError(DAMAGED_INDEX, "generation %d: records %s and %s overlap" % (
                t.generation, prev_rid.hex(), rid.hex()))
        if prev_end is None or end > prev_end:
            prev_end, prev_rid = end, rid
    # Members of one record: distinct member indexes, non-overlapping data ranges.
    by_record = {}
    for e in state.values():
        by_record.setdefault(e.record_id, []).append(e)
    for rid, members in by_record.items():
        if len(members) < 2:
            continue
        idx = set()
        for e in members:
            if e.member_index in idx:
                raise VaultError(DAMAGED_INDEX, "record %s: member index %d used twice" % (
                    rid.hex(), e.member_index))
            idx.add(e.member_index)
        ranges = sorted((e.data_offset, e.data_offset + e.size) for e in members if e.size)
        for (a0, a1), (b0, b1) in zip(ranges, ranges[1:]):
            if b0 < a1:
                raise VaultError(DAMAGED_INDEX, "record %s: member data ranges overlap" % rid.hex())


# ---------------------------------------------------------------------------
# Records (§6)


def read_record(vf, h, rid, off, length, items):
    """Reads one record; checks every listed item against the member table.

    Returns {item_id: sha256 hex}. Errors are damaged record naming the (first) item."""
    names = ", ".join(sorted(e.item_id.hex() for e in items))
    what = "item %s record %s" % (names, rid.hex())
    ad = b"kcar-rec-v1" + h.vault_id + rid
    stream = ChunkStream(iter_chunks(vf, h.length, off, length, h.k_record, ad, DAMAGED_RECORD, what))
    try:
        n = read_varint(stream.u8)
        if not 1 <= n <= MEMBERS_MAX:
            raise Bad("member count %d outside 1..%d" % (n, MEMBERS_MAX))
        table = []
        for _ in range(n):
            mid = stream.take(16)
            size = read_varint(stream.u8)
            if size > VALUE_MAX:
                raise Bad("member size %d over %d" % (size, VALUE_MAX))
            table.append((mid, size))
        starts = []
        acc = 0
        for _, size in table:
            starts.append(acc)
            acc += size
        wanted = {}
        for e in items:
            if e.member_index >= n:
                raise VaultError(DAMAGED_RECORD, "item %s: member index %d, record %s has %d members" % (
                    e.item_id.hex(), e.member_index, rid.hex(), n))
            mid, size = table[e.member_index]
            if mid != e.item_id:
                raise VaultError(DAMAGED_RECORD, "item %s: record %s member %d names item %s" % (
                    e.item_id.hex(), rid.hex(), e.member_index, mid.hex()))
            if size != e.size:
                raise VaultError(DAMAGED_RECORD, "item %s: member table size %d, index size %d" % (
                    e.item_id.hex(), size, e.size))
            if starts[e.member_index] != e.data_offset:
                raise VaultError(DAMAGED_RECORD, "item %s: members before it add up to %d, data offset %d" % (
                    e.item_id.hex(), starts[e.member_index], e.data_offset))
            wanted[e.member_index] = e.item_id
        digests = {}
        for i, (mid, size) in enumerate(table):
            hsh = hashlib.sha256() if i in wanted else None
            for piece in stream.pieces(size):
                if hsh is not None:
                    hsh.update(piece)
            if hsh is not None:
                digests[wanted[i]] = hsh.hexdigest()
        if not stream.at_end():
            raise Bad("bytes after the last member's data")
        return digests
    except (Bad, Short) as e:
        raise VaultError(DAMAGED_RECORD, "%s: %s" % (what, e))


def read_all_records(vf, h, state):
    groups = {}
    for e in state.values():
        groups.setdefault(e.record_id, []).append(e)
    digests = {}
    for rid, items in sorted(groups.items(), key=lambda kv: (kv[1][0].record_offset, kv[0])):
        e0 = items[0]
        digests.update(read_record(vf, h, rid, e0.record_offset, e0.record_length, items))
    return digests


# ---------------------------------------------------------------------------
# Command line


def attr_json(t, v):
    if t == 5:
        return base64.b64encode(v).decode("ascii")
    return v


def entry_json(e, digest):
    return {
        "id": e.item_id.hex(),
        "class": e.cls,
        "attributes": {name: attr_json(t, v) for name, t, v in e.attrs},
        "attribute_types": {name: ATTR_TYPES[t] for name, t, v in e.attrs},
        "size": e.size,
        "sha256": digest,
    }


def load_secret(args):
    if args.key_file is not None:
        path, kind = args.key_file, "key"
    else:
        path, kind = args.passphrase_file, "passphrase"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise VaultError(WRONG_SECRET, "cannot read %s: %s" % (path, e.strerror))
    if kind == "key":
        if len(data) != 32:
            raise VaultError(WRONG_SECRET, "a key file is exactly 32 bytes, %s has %d" % (path, len(data)))
    elif data.endswith(b"\n"):
        data = data[:-1]  # kcar strips one trailing newline from a passphrase file
    return kind, data


def run(args):
    kind, secret = load_secret(args)
    vf = VaultFile(args.vault)
    h = read_header(vf)
    unlock(h, kind, secret)
    last, incomplete = find_last_commit(vf, h)
    state = load_index(vf, h, last)
    if incomplete:
        if args.verify:
            raise VaultError(INCOMPLETE_COMMIT, "%d bytes after the last complete commit (generation %d)" % (
                incomplete, last.generation))
        sys.stderr.write("warning: incomplete commit: %d bytes after the last complete commit; "
                         "reading generation %d\n" % (incomplete, last.generation))
    items = sorted(state.values(), key=lambda e: e.item_id)
    if args.verify:
        hidden_commits(vf, h, last)
        read_all_records(vf, h, state)
        print("ok: %d items, generation %d, group %s" % (len(items), last.generation, h.group))
    elif args.dump_json:
        digests = read_all_records(vf, h, state)
        out = {
            "vault_id": h.vault_id.hex(),
            "group": h.group,
            "generation": last.generation,
            "items": [entry_json(e, digests[e.item_id]) for e in items],
        }
        json.dump(out, sys.stdout, indent=1, ensure_ascii=False, sort_keys=False)
        sys.stdout.write("\n")
    else:
        for e in items:
            a = dict((n, v) for n, t, v in e.attrs)
            name = "/".join(str(a[k]) for k in ("svce", "acct") if k in a)
            print("%s  %s  %10d  %s" % (e.item_id.hex(), e.cls, e.size, name))
    return 0


def main(argv=None):
    ap, _ = arg_parser("Strict reader of kcar vault format v1 (from SPEC.md).")
    return report(run, ap.parse_args(argv))


def arg_parser(description):
    """VAULT, one secret, and the group of modes (--list, --dump-json, --verify) a reader may add to."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("vault")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--key-file")
    g.add_argument("--passphrase-file")
    m = ap.add_mutually_exclusive_group()
    m.add_argument("--list", action="store_true")
    m.add_argument("--dump-json", action="store_true")
    m.add_argument("--verify", action="store_true")
    return ap, m


def report(run, args):
    """Runs `run(args)`: a format verdict is `error: <§11 name>: detail` and exit 1; a bug in the reader exit 2."""
    try:
        return run(args)
    except VaultError as e:
        sys.stdout.flush()
        sys.stderr.write("error: %s: %s\n" % (e.kind, e.detail))
        return 1
    except MemoryError:
        sys.stderr.write("error: internal: out of memory\n")
        return 1
    except Exception as e:  # a bug in this reader, never a format verdict
        sys.stderr.write("error: internal: %s: %s\n" % (type(e).__name__, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
