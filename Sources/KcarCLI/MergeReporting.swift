import VaultFormat

/// What `kcar merge` and `kcar sync` say about a merge: each conflict by item, with the side that won, why, and
/// how to bring the losing version back; with -v every item taken.
enum MergeReporting {
    /// One line per conflict: `vault` names the merged vault as the user knows it (git's %P, not the driver's
    /// temporary), `ours`/`theirs` the sides; `restore` gives the command that brings back a kept version of
    /// an item (nil: none to give, a keychain group's history is read with `kcar history`).
    static func conflicts(
        _ report: MergeReport, in vault: Versioning, ours: String, theirs: String,
        restore: ((_ item: String, _ version: Int) -> String)?
    ) -> [String] {
        var text = VersionText()
        func when(_ s: ItemState) -> String {
            let parts = text(s.version).split(separator: "/", maxSplits: 1).map(String.init)
            return "\(parts[0]) by writer \(parts.count > 1 ? parts[1] : "?")"
        }
        func change(_ side: String, _ s: ItemState?) -> String {
            guard let s else { return "\(side) held none" }
            return s.item == nil ? "\(side)'s deletion (\(when(s)))" : "\(side)'s change (\(when(s)))"
        }
        return report.conflictDetails.map { c in
            let name = c.item.map(ItemPath.name) ?? "item \(c.id)"
            let (won, lost) =
                c.winner == .theirs ? ((theirs, c.theirs), (ours, c.ours)) : ((ours, c.ours), (theirs, c.theirs))
            var line = "conflict on \(name): \(change(won.0, won.1)) is newer than \(change(lost.0, lost.1)) and won"
            if let loser = lost.1, loser.item != nil {
                // The losing live version went to history (V9): its number as `kcar history` counts them now.
                let kept = (try? vault.keptVersions(of: c.id)) ?? []
                if let i = kept.lastIndex(where: { $0.version == loser.version }) {
                    let n = kept.count - i
                    line +=
                        restore.map { "; \(lost.0)'s version is kept: \($0(name, n))" }
                        ?? "; \(lost.0)'s version is kept in history (version \(n))"
                } else {
                    line += "; \(lost.0)'s version was not kept (retention)"
                }
            } else if lost.1 != nil, won.1?.item != nil {
                line += "; the item is back"
            }
            return line
        }
    }

    /// With -v: every item taken from THEIRS, one line each.
    static func taken(_ report: MergeReport, from theirs: String) -> [String] {
        report.takenItems.map { t in
            let name = t.item.map(ItemPath.name) ?? "item \(t.id)"
            return t.deleted ? "deleted \(name) (from \(theirs))" : "took \(name) (from \(theirs))"
        }
    }

    /// `word` as one shell word: as it is when it needs no quoting, else in single quotes.
    static func shellWord(_ word: String) -> String {
        let plain =
            !word.isEmpty
            && word.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                    || Array("._/@%+=:,-".utf8).contains(c)
            }
        return plain
            ? word : "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
