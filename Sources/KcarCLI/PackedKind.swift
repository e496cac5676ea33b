import VaultFormat

/// What a packed item stands for on disk (SPEC.md §7.1): a regular file (its value), an
/// empty folder or a symbolic link, and the permission bits `pack` stored. Read from three user attributes,
/// so that a vault packed before them (no such attribute) is all regular files of unknown mode, as it was.
struct PackedKind: Equatable {
    /// `@kcar.mode`: an integer, the permission bits (`st_mode & 0o777`; pack never stores setuid, setgid or sticky).
    static let modeAttribute = "@kcar.mode"
    /// `@kcar.link`: a string, the target of a symbolic link, as readlink(2) gives it (the value is empty).
    static let linkAttribute = "@kcar.link"
    /// `@kcar.folder`: the bool true: the item is a folder that held nothing pack stored (the value is empty).
    static let folderAttribute = "@kcar.folder"
    /// Link targets are at most PATH_MAX - 1 bytes, as the kernel takes them.
    static let linkTargetMax = 4095

    enum Kind: Equatable {
        case file
        case folder
        case link(String)
    }

    let kind: Kind
    /// The stored permission bits (0...0o7777 accepted; only 0o777 is ever applied), nil when none was stored.
    let mode: UInt32?

    /// The kind of `attributes`, or why they cannot be taken for one (a type that is not the one SPEC names, a
    /// mode out of range, a link that is also a folder, an empty target or one with NUL or over 4095 bytes).
    static func of(_ attributes: Attributes) -> Result<PackedKind, Malformed> {
        var mode: UInt32?
        switch attributes[modeAttribute] {
        case nil: break
        case .integer(let m)? where (0...0o7777).contains(m): mode = UInt32(m)
        default: return .failure(Malformed(reason: "its \(modeAttribute) is not an integer from 0 to 0o7777"))
        }
        let folder: Bool
        switch attributes[folderAttribute] {
        case nil: folder = false
        case .bool(true)?: folder = true
        default: return .failure(Malformed(reason: "its \(folderAttribute) is not the bool true"))
        }
        switch attributes[linkAttribute] {
        case nil: return .success(PackedKind(kind: folder ? .folder : .file, mode: mode))
        case .string(let target)?:
            guard !folder else { return .failure(Malformed(reason: "it is marked both a folder and a link")) }
            guard !target.isEmpty, target.utf8.count <= linkTargetMax, !target.utf8.contains(0) else {
                return .failure(
                    Malformed(reason: "its link target is empty, holds NUL or is over \(linkTargetMax) bytes"))
            }
            return .success(PackedKind(kind: .link(target), mode: mode))
        default: return .failure(Malformed(reason: "its \(linkAttribute) is not a string"))
        }
    }

    struct Malformed: Error {
        let reason: String
    }

    /// The kind of an item, with attributes that make no kind taken for a regular file (for listing only:
    /// extract reports and skips such an item).
    static func lenient(_ item: Item) -> PackedKind {
        (try? of(item.attributes).get()) ?? PackedKind(kind: .file, mode: nil)
    }

    /// The permissions extract gives a file or folder: without `preserve`, 0600 for a file (0700 when the
    /// stored mode lets its owner execute it) and 0700 for a folder; with it, the stored bits (setuid, setgid
    /// and sticky never), or those defaults when none were stored.
    func permissions(preserve: Bool) -> UInt32 {
        let safe: UInt32 = kind == .folder || (mode ?? 0) & 0o100 != 0 ? 0o700 : 0o600
        guard preserve, let mode else { return safe }
        return mode & 0o777
    }

    /// `-rw-r--r--` as `ls -l` and `tar -tv` print it; the permissions `?` when none were stored, and a link's
    /// always `rwxrwxrwx` (Linux gives links no permissions of their own).
    var modeString: String {
        let type: Character =
            switch kind {
            case .file: "-"
            case .folder: "d"
            case .link: "l"
            }
        if case .link = kind { return "lrwxrwxrwx" }
        guard let mode else { return String(type) + "?????????" }
        let letters: [Character] = ["r", "w", "x"]
        return String(type) + String((0..<9).map { i in mode & (0o400 >> UInt32(i)) != 0 ? letters[i % 3] : "-" })
    }

    /// Whether extract may create a link with `target` at `parts` (service, folders..., name) below its
    /// folder: a relative target whose `..` components all come first, no more of them than the folders the
    /// link is in. Such a target stays below the folder even through other links made this way (each of
    /// those stays below it too, and no `..` follows a name that could be one); absolute targets and targets
    /// that climb out are what a hostile vault would plant (`x -> /etc`, `x -> ../../.ssh`).
    static func isContained(_ target: String, at parts: [String]) -> Bool {
        guard !target.startsWithSlash else { return false }
        var climbs = 0
        var descended = false
        for c in target.slashSeparated(omittingEmpty: true) where c != "." {
            if c == ".." {
                guard !descended else { return false }
                climbs += 1
            } else {
                descended = true
            }
        }
        return climbs <= parts.count - 1
    }
}
