/// The subkeys derived once per open from the vault key (SPEC.md §2).
package struct Subkeys: Sendable {
    package let header: SecureBytes
    package let trailer: SecureBytes
    let index: SecureBytes
    let record: SecureBytes

    package init(vaultKey: SecureBytes) {
        header = Sodium.deriveSubkey(vaultKey, id: 1)
        trailer = Sodium.deriveSubkey(vaultKey, id: 2)
        index = Sodium.deriveSubkey(vaultKey, id: 3)
        record = Sodium.deriveSubkey(vaultKey, id: 4)
    }
}

/// A key slot as stored in the header (SPEC.md §5).
public enum KeySlot: Hashable, Sendable {
    /// A passphrase slot: Argon2id at these parameters and salt wraps the vault key.
    case passphrase(KDFParameters, salt: [UInt8], nonce: [UInt8], wrapped: [UInt8])
    /// A key-file slot: a 32-byte key wraps the vault key.
    case keyFile(nonce: [UInt8], wrapped: [UInt8])
    /// An X25519 slot: the vault key sealed to a public key.
    case recipient(sealed: [UInt8])

    /// The slot kind's name, as `kcar info` prints it.
    public var kindName: String {
        switch self {
        case .passphrase: return "passphrase"
        case .keyFile: return "key file"
        case .recipient: return "x25519"
        }
    }

    var kind: UInt8 {
        switch self {
        case .passphrase: return 1
        case .keyFile: return 2
        case .recipient: return 3
        }
    }

    static func ad(kind: UInt8, vaultID: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.append("kcar-slot-v1")
        w.append(contentsOf: vaultID)
        w.append(kind)
        return w.bytes
    }

    package func encode() -> [UInt8] {
        var w = ByteWriter()
        w.append(kind)
        switch self {
        case .passphrase(let p, let salt, let nonce, let wrapped):
            w.appendLE(p.ops)
            w.appendLE(p.memKiB)
            w.append(contentsOf: salt)
            w.append(contentsOf: nonce)
            w.append(contentsOf: wrapped)
        case .keyFile(let nonce, let wrapped):
            w.append(contentsOf: nonce)
            w.append(contentsOf: wrapped)
        case .recipient(let sealed):
            w.append(contentsOf: sealed)
        }
        return w.bytes
    }

    static func decode(_ value: [UInt8]) throws -> KeySlot {
        var r = ByteReader(value, failure: .damagedHeader, what: "key slot")
        let slot: KeySlot
        switch try r.readU8() {
        case 1:
            guard value.count == 97 else { throw r.fail("passphrase slot of \(value.count) bytes, not 97") }
            let p = KDFParameters(ops: try r.readLE(UInt32.self), memKiB: try r.readLE(UInt32.self))
            try p.check(.damagedHeader)
            slot = .passphrase(p, salt: try r.readBytes(16), nonce: try r.readBytes(24), wrapped: try r.readBytes(48))
        case 2:
            guard value.count == 73 else { throw r.fail("key-file slot of \(value.count) bytes, not 73") }
            slot = .keyFile(nonce: try r.readBytes(24), wrapped: try r.readBytes(48))
        case 3:
            guard value.count == 97 else { throw r.fail("x25519 slot of \(value.count) bytes, not 97") }
            slot = .recipient(sealed: try r.readBytes(96))
        case let k:
            throw r.fail("unknown slot kind \(k)")
        }
        return slot
    }

    /// Wraps `vaultKey` for `secret`.
    package static func make(for secret: SlotSecret, vaultKey: SecureBytes, vaultID: [UInt8], random: RandomSource)
        throws -> KeySlot
    {
        switch secret {
        case .passphrase(let pass, let params):
            try params.check(.invalidArgument)
            let salt = random.bytes(16)
            let nonce = random.bytes(24)
            guard let kek = Sodium.pwhash(pass, salt: salt, params: params) else {
                throw VaultError(.io, "Argon2id could not allocate \(params.memKiB) KiB")
            }
            let wrapped = vaultKey.withUnsafeBytes {
                Sodium.seal(key: kek, nonce: nonce, plaintext: $0, ad: ad(kind: 1, vaultID: vaultID))
            }
            return .passphrase(params, salt: salt, nonce: nonce, wrapped: wrapped)
        case .keyFile(let key):
            guard key.count == 32 else { throw VaultError(.invalidArgument, "a key file holds exactly 32 bytes") }
            let nonce = random.bytes(24)
            let kek = Sodium.macKey(key: key, Array("kcar-keyfile-v1".utf8))
            let wrapped = vaultKey.withUnsafeBytes {
                Sodium.seal(key: kek, nonce: nonce, plaintext: $0, ad: ad(kind: 2, vaultID: vaultID))
            }
            return .keyFile(nonce: nonce, wrapped: wrapped)
        case .recipient(let pk):
            guard pk.count == 32 else { throw VaultError(.invalidArgument, "an X25519 public key is 32 bytes") }
            let message = SecureBytes(count: 48) { m in
                vaultKey.withUnsafeBytes { m.copyMemory(from: $0) }
                for i in 0..<16 { m[32 + i] = vaultID[i] }
            }
            return .recipient(sealed: Sodium.sealBox(publicKey: pk, message: message, random: random))
        }
    }

    /// Whether `secret` opens this slot of the vault `vaultID` (runs Argon2id for a passphrase slot).
    public func opens(with secret: UnlockSecret, vaultID: [UInt8]) -> Bool {
        unwrap(with: secret, vaultID: vaultID) != nil
    }

    /// The vault key, if `secret` opens this slot.
    package func unwrap(with secret: UnlockSecret, vaultID: [UInt8]) -> SecureBytes? {
        switch (self, secret) {
        case (.passphrase(let p, let salt, let nonce, let wrapped), .passphrase(let pass)):
            guard let kek = Sodium.pwhash(pass, salt: salt, params: p),
                var vk = Sodium.open(
                    key: kek, nonce: nonce, ciphertext: wrapped, ad: KeySlot.ad(kind: 1, vaultID: vaultID))
            else { return nil }
            defer { wipe(&vk) }
            return SecureBytes(copying: vk)
        case (.keyFile(let nonce, let wrapped), .keyFile(let key)):
            guard key.count == 32 else { return nil }
            let kek = Sodium.macKey(key: key, Array("kcar-keyfile-v1".utf8))
            guard
                var vk = Sodium.open(
                    key: kek, nonce: nonce, ciphertext: wrapped, ad: KeySlot.ad(kind: 2, vaultID: vaultID))
            else { return nil }
            defer { wipe(&vk) }
            return SecureBytes(copying: vk)
        case (.recipient(let sealed), .keyFile(let sk)):
            guard let m = Sodium.openBox(secretKey: sk, ciphertext: sealed), m.count == 48 else { return nil }
            let matches = m.withUnsafeBytes { Array($0[32..<48]) == vaultID }
            guard matches else { return nil }
            return SecureBytes(count: 32) { o in
                m.withUnsafeBytes { o.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<32])) }
            }
        default:
            return nil
        }
    }
}

/// A secret that a new key slot wraps the vault key for.
public enum SlotSecret: Sendable {
    /// A passphrase, stretched with Argon2id at these parameters.
    case passphrase(SecureBytes, KDFParameters)
    /// A 32-byte key file.
    case keyFile(SecureBytes)
    /// An X25519 public key (32 bytes): only its secret key opens the slot.
    case recipient([UInt8])
}

extension SlotSecret {
    /// A slot for an age recipient (`age1...`, as `age-keygen` and `kcar keygen --x25519` print it): the same
    /// X25519 key as ``recipient(_:)``, whose identity (``UnlockSecret/identities(atPath:)``) opens the vault.
    /// Throws ``VaultError/Code/invalidArgument`` for text that is not one.
    public static func ageRecipient(_ text: String) throws -> SlotSecret {
        guard let key = AgeKey.recipient(text) else {
            // The text is not repeated: the likely mistake is an identity, a secret key, given in its place.
            if text.uppercased().hasPrefix("AGE-SECRET-KEY-") {
                throw VaultError(
                    .invalidArgument,
                    "an age identity (a secret key) was given where a recipient goes: give its public key, age1...")
            }
            throw VaultError(.invalidArgument, "not an age recipient (age1..., 62 characters)")
        }
        return .recipient(key)
    }
}

/// A secret that opens a vault.
public enum UnlockSecret: Sendable {
    /// A passphrase (tried on every passphrase slot).
    case passphrase(SecureBytes)
    /// A 32-byte key file, or an X25519 secret key file (32 bytes too): tried on key-file and x25519 slots.
    case keyFile(SecureBytes)
}

/// The plaintext header of a vault (SPEC.md §4).
public struct Header: Sendable {
    /// The 8 bytes every vault starts with (SPEC.md §4).
    public static let magic: [UInt8] = [0x89, 0x4B, 0x43, 0x56, 0x0D, 0x0A, 0x1A, 0x0A]
    /// The first format version (SPEC.md Part 1); ``Vault/formatVersion`` says a file's.
    public static let version: UInt16 = 1
    package static let tagVaultID: UInt16 = 0x8001
    package static let tagGroup: UInt16 = 0x8002
    package static let tagSlot: UInt16 = 0x8010
    static let critical: UInt16 = 0x8000

    /// 16 random bytes, fixed for the vault's life.
    public let vaultID: [UInt8]
    /// The access group the vault holds.
    public let group: String
    /// The key slots, in order.
    public let slots: [KeySlot]
    /// Tags of non-critical fields this reader skipped.
    public var unknownFields: [UInt16] { unknown.map(\.tag) }
    /// The non-critical fields this reader does not know, as read (tag order): every rewrite of the header
    /// (passwd, rekey, compact) carries them over unchanged (SPEC.md §4).
    let unknown: [(tag: UInt16, value: [UInt8])]
    /// Bytes of the header (the body starts here).
    public let length: Int
    /// The format version the header names: 1 (SPEC.md Part 1) or 2 (Part 4, the version new vaults are
    /// written in by the kcar tool).
    public let formatVersion: UInt16

    /// A header to write: `unknown` are the non-critical fields of the header it replaces (kept as they were).
    init(
        vaultID: [UInt8], group: String, slots: [KeySlot], unknown: [(tag: UInt16, value: [UInt8])] = [],
        formatVersion: UInt16 = 1
    ) {
        self.formatVersion = formatVersion
        self.vaultID = vaultID
        self.group = group
        self.slots = slots
        self.unknown = unknown
        length =
            16 + unknown.reduce(0) { $0 + 4 + $1.value.count } + 4 + 16 + 4 + group.utf8.count
            + slots.reduce(0) { $0 + 4 + $1.encode().count } + 64
    }

    private init(
        vaultID: [UInt8], group: String, slots: [KeySlot], unknown: [(tag: UInt16, value: [UInt8])], length: Int,
        formatVersion: UInt16
    ) {
        self.formatVersion = formatVersion
        self.vaultID = vaultID
        self.group = group
        self.slots = slots
        self.unknown = unknown
        self.length = length
    }

    /// This header with other key slots, every other field as it was.
    func with(slots: [KeySlot]) -> Header {
        Header(vaultID: vaultID, group: group, slots: slots, unknown: unknown, formatVersion: formatVersion)
    }
    func with(formatVersion v: UInt16) -> Header {
        Header(vaultID: vaultID, group: group, slots: slots, unknown: unknown, formatVersion: v)
    }

    /// Throws `code` if the passphrase slots together cost more Argon2id work than ``Limits/kdfTotalMax``.
    static func checkKDFBudget(_ slots: [KeySlot], _ code: VaultError.Code) throws {
        var total: UInt64 = 0
        for case .passphrase(let p, _, _, _) in slots { total += UInt64(p.memKiB) * UInt64(p.ops) }
        guard total <= Limits.kdfTotalMax else {
            throw VaultError(
                code,
                "the passphrase slots together ask for \(total) KiB x passes of Argon2id (limit \(Limits.kdfTotalMax))")
        }
    }

    /// Checks an access group name: 1 to 255 bytes of UTF-8 without NUL (``VaultError/Code/invalidArgument``).
    public static func checkGroupName(_ group: String) throws { try checkGroup(group) }

    static func checkGroup(_ group: String) throws {
        let n = group.utf8.count
        guard n >= 1, n <= Limits.groupMax, !group.utf8.contains(0) else {
            throw VaultError(.invalidArgument, "an access group is 1 to \(Limits.groupMax) bytes of UTF-8 without NUL")
        }
    }

    /// The header's bytes, with checksum and MAC under `macKey`.
    func encode(macKey: SecureBytes) -> [UInt8] {
        var w = ByteWriter(capacity: length)
        w.append(contentsOf: Header.magic)
        w.appendLE(formatVersion)
        w.appendLE(UInt16(0))
        w.appendLE(UInt32(length))
        func field(_ tag: UInt16, _ value: [UInt8]) {
            w.appendLE(tag)
            w.appendLE(UInt16(value.count))
            w.append(contentsOf: value)
        }
        // Non-critical tags are below 0x8000: they come first, in the order read (which is tag order).
        for f in unknown { field(f.tag, f.value) }
        field(Header.tagVaultID, vaultID)
        field(Header.tagGroup, Array(group.utf8))
        for s in slots { field(Header.tagSlot, s.encode()) }
        w.append(contentsOf: Sodium.hash(w.bytes))
        w.append(contentsOf: Sodium.mac(key: macKey, w.bytes))
        precondition(w.bytes.count == length)
        return w.bytes
    }

    /// Steps 1-3 of SPEC.md §4: magic, version, length, checksum, fields. `prefix` holds at least the
    /// first 16 bytes of the file (more is fine); `readRest` fetches the whole header once its length is known.
    package static func parse(
        prefix: [UInt8], fileSize: UInt64, versions: ClosedRange<UInt16> = 1...1,
        readRest: (Int) throws -> [UInt8]
    ) throws -> (Header, [UInt8]) {
        guard prefix.count >= 16, Array(prefix[0..<8]) == magic else { throw VaultError(.notAVault) }
        let version = prefix.readLE(UInt16.self, at: 8)
        guard versions.contains(version) else {
            throw VaultError(
                .unsupportedVersion,
                "format version \(version); this reader knows \(versions.map(String.init).joined(separator: ", "))")
        }
        guard prefix.readLE(UInt16.self, at: 10) == 0 else {
            throw VaultError(.damagedHeader, "reserved bytes are not zero")
        }
        let length = Int(prefix.readLE(UInt32.self, at: 12))
        guard length >= Limits.headerMin, length <= Limits.headerMax else {
            throw VaultError(
                .damagedHeader, "header length \(length) outside \(Limits.headerMin)...\(Limits.headerMax)")
        }
        guard fileSize >= UInt64(length) else { throw VaultError(.truncated, "the file ends inside the header") }
        let bytes = prefix.count >= length ? Array(prefix[0..<length]) : try readRest(length)
        let checksum = Sodium.hash(Array(bytes[0..<length - 64]))
        guard checksum == Array(bytes[length - 64..<length - 32]) else {
            throw VaultError(.damagedHeader, "header checksum does not match (accidental damage)")
        }
        var r = ByteReader(bytes, from: 16, to: length - 64, failure: .damagedHeader, what: "header")
        var vaultID: [UInt8]?
        var group: String?
        var slots: [KeySlot] = []
        var unknown: [(tag: UInt16, value: [UInt8])] = []
        var lastTag = -1
        while !r.isAtEnd {
            let tag = try r.readLE(UInt16.self)
            let value = try r.readBytes(Int(try r.readLE(UInt16.self)))
            guard Int(tag) > lastTag || (tag == tagSlot && lastTag == Int(tagSlot)) else {
                throw r.fail("field 0x\(String(tag, radix: 16)) out of order")
            }
            lastTag = Int(tag)
            switch tag {
            case tagVaultID:
                guard value.count == 16 else { throw r.fail("vault id of \(value.count) bytes") }
                vaultID = value
            case tagGroup:
                guard let g = String(validating: value, as: UTF8.self), (try? checkGroup(g)) != nil else {
                    throw r.fail("invalid access group")
                }
                group = g
            case tagSlot:
                guard slots.count < Limits.slotsMax else { throw r.fail("more than \(Limits.slotsMax) key slots") }
                slots.append(try KeySlot.decode(value))
            default:
                guard tag & critical == 0 else { throw r.fail("unknown critical field 0x\(String(tag, radix: 16))") }
                unknown.append((tag, value))
            }
        }
        guard let vaultID, let group else { throw r.fail("vault id or access group missing") }
        guard !slots.isEmpty else { throw r.fail("no key slot") }
        try checkKDFBudget(slots, .damagedHeader)
        return (
            Header(
                vaultID: vaultID, group: group, slots: slots, unknown: unknown, length: length, formatVersion: version),
            bytes
        )
    }

    /// Step 5: the MAC over `bytes` (the whole header as read), in constant time.
    package static func verifyMAC(_ bytes: [UInt8], key: SecureBytes) -> Bool {
        let n = bytes.count
        return Sodium.constantTimeEqual(Sodium.mac(key: key, Array(bytes[0..<n - 32])), Array(bytes[n - 32..<n]))
    }
}

/// X25519 key pairs for recipient slots.
public enum X25519 {
    /// The public key of a 32-byte secret key.
    public static func publicKey(secretKey: SecureBytes) -> [UInt8] { Sodium.publicKey(secretKey: secretKey) }
}
