#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An error from reading or writing a vault: a stable ``Code`` that callers compare, and a context that
/// says where. The context never contains secret material.
///
/// Two errors are equal when their codes are (as swift-asn1's `ASN1Error`): the context is for people, and
/// the file, merge side and item the error is about are fields (``path``, ``item``), so that no caller reads
/// the message to learn them.
public struct VaultError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as an open set of codes (new codes may be added in later versions).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as ``VaultError/description`` shows it.
        public let rawValue: String
        /// A code by its name (the codes below are the ones kcar throws).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name, as messages show it.
        public var description: String { rawValue }

        /// The file does not start with the vault magic.
        public static let notAVault = Code(rawValue: "not a vault")
        /// The header names a format version this reader does not support.
        public static let unsupportedVersion = Code(rawValue: "unsupported version")
        /// The header checksum failed or a header field or key slot is malformed (accidental damage).
        public static let damagedHeader = Code(rawValue: "damaged header")
        /// The header is intact but no key slot opens with the secret given.
        public static let wrongKey = Code(rawValue: "wrong passphrase or key")
        /// A key slot opened but the header MAC does not verify: the header was changed deliberately.
        public static let tamperedHeader = Code(rawValue: "tampered header")
        /// The file ends inside the header or holds no complete commit.
        public static let truncated = Code(rawValue: "truncated")
        /// Bytes follow the last complete commit (an interrupted write).
        public static let incompleteCommit = Code(rawValue: "incomplete commit")
        /// A trailer chain or index segment failed to authenticate or to parse.
        public static let damagedIndex = Code(rawValue: "damaged index")
        /// A record failed to authenticate, inflate or parse.
        public static let damagedRecord = Code(rawValue: "damaged record")
        /// No item matched.
        public static let itemNotFound = Code(rawValue: "item not found")
        /// An ``Item`` handed to a read was taken before its item was deleted or its value replaced (by
        /// this instance, or by another process once caught up): look the item up again.
        public static let staleItem = Code(rawValue: "stale item")
        /// The destination exists and overwriting was not allowed.
        public static let exists = Code(rawValue: "already exists")
        /// A system call failed (``VaultError/errnoCode`` says how, when one did), or the input of a write
        /// changed while it was read.
        public static let io = Code(rawValue: "I/O error")
        /// The file at the vault's path is no longer the one this instance opened, or no longer opens with its
        /// key: another process rekeyed it (`kcar rekey`) or renamed another vault over it. Nothing was read
        /// from or written to it; open it again, with a secret that opens it now.
        public static let replaced = Code(rawValue: "vault replaced")
        /// Another process held the vault's lock longer than the timeout allowed.
        public static let lockTimeout = Code(rawValue: "lock timeout")
        /// A file or folder kcar refuses to use: owned by another user, writable by others, a symlink, or not
        /// a regular file where a vault or key file must be.
        public static let unsafeFile = Code(rawValue: "unsafe file")
        /// A copy to merge, sync or join holds versions more than a day ahead of this machine's clock (SPEC.md
        /// Part 4, V5.1): refused, nothing written.
        public static let clockAhead = Code(rawValue: "clock ahead")
        /// The ``SharedVault`` was closed: open the file again.
        public static let closed = Code(rawValue: "vault closed")
        /// An argument is outside what the format allows (a limit, an empty name, ...).
        public static let invalidArgument = Code(rawValue: "invalid argument")
    }

    /// What went wrong: compare it (`error.code == .wrongKey`), never the message.
    public let code: Code
    /// Where and what: never contains secrets.
    public let context: String
    /// The copy of a merge or sync the error is about (BASE, OURS or THEIRS), which ``context`` names first as
    /// `SIDE (PATH)`: a field, so that a caller tells which file failed without reading the message.
    public let side: MergeSide?
    /// The file the error is about: the vault's, for every error thrown by a ``Vault`` (``description`` names
    /// it), and the file a system call failed on.
    public private(set) var path: String?
    /// The `errno` of the system call that failed, for an ``Code/io`` error that comes from one (`ENOENT` for a
    /// missing file, `ENOSPC` for a full disk, ...).
    public package(set) var errnoCode: Int32?
    /// The item the error is about (a damaged record read for it, a value that changed size, an id not in the
    /// vault), when the code that threw it knew one; ``context`` names it too.
    public private(set) var item: ItemID?

    /// An error of `code` whose `context` says where and what (never a secret).
    public init(_ code: Code, _ context: String = "") {
        self.code = code
        self.context = context
        side = nil
        path = nil
        item = nil
    }

    /// An error about `item`, which `context` names.
    public init(_ code: Code, item: ItemID, _ context: String) {
        self.code = code
        self.context = context
        side = nil
        path = nil
        self.item = item
    }

    /// An error about the file at `path`, which `context` names.
    public init(_ code: Code, path: String, _ context: String) {
        self.code = code
        self.context = context
        side = nil
        self.path = path
        item = nil
    }

    /// A failed system call on the file at `path`: an ``Code/io`` error with its `errno`.
    package init(path: String, errno: Int32, _ context: String) {
        self.init(.io, path: path, context)
        errnoCode = errno
    }

    /// An error about `side` of a merge, the copy at `path`: its context is `SIDE (PATH)` followed by `rest`
    /// (which starts with `: `, `, ` or a space).
    package init(_ code: Code, side: MergeSide, path: String, item: ItemID? = nil, _ rest: String) {
        self.code = code
        context = "\(side.rawValue) (\(path))" + rest
        self.side = side
        self.path = path
        self.item = item
    }

    /// The code and context, preceded by ``path`` unless the context names it.
    public var description: String { described(as: path) }

    /// ``description`` with ``path`` shown as `shown` (the CLI shows a copy of standard input as
    /// "standard input").
    package func described(as shown: String?) -> String {
        var text = context
        if let path, let shown, shown != path { text = text.replacing(path, with: shown) }
        let base = text.isEmpty ? code.rawValue : "\(code.rawValue): \(text)"
        guard let path, let shown, !context.contains(path) else { return base }
        return "\(shown): \(base)"
    }

    /// This error as one about the file at `path` (which ``description`` then names first), unless it already
    /// names a file.
    package func about(_ path: String) -> VaultError {
        guard self.path == nil, side == nil else { return self }
        var e = self
        e.path = path
        return e
    }

    /// Two errors are equal when their codes are (as swift-asn1's `ASN1Error`): what a caller tells them by.
    public static func == (a: VaultError, b: VaultError) -> Bool { a.code == b.code }
    /// Hashes the code, as ``==(_:_:)`` compares it.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension VaultError: LocalizedError {
    /// ``description``: the file, the code and the context, so that `localizedDescription` says what went
    /// wrong and where (never a secret).
    public var errorDescription: String? { description }
}
