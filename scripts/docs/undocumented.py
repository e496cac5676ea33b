#!/usr/bin/env python3
"""Lists the public symbols of a module that carry no doc comment of their own, from the symbol graphs
`make docs` emits (MODULE.symbols.json and MODULE@OTHER.symbols.json, its extensions of other modules' types).

Counted: what the module declares public (types, members, functions, properties, cases, initializers).
Not counted: what the compiler makes (memberwise initializers, Equatable's and Hashable's witnesses, enum
cases' synthesized members), what a symbol inherits from a protocol's doc (an implementation of a documented
requirement, as `description` of CustomStringConvertible: the graph marks it by `sourceOrigin`), and
conformance extensions themselves.

Usage: undocumented.py GRAPH_DIR MODULE [--max N]   (exit 1 when more than N are undocumented, N = 0 by
default; each is printed as `kind path (file:line)`)
"""
import glob
import json
import os
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    graphs, module = sys.argv[1], sys.argv[2]
    allowed = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--max" else 0
    files = [os.path.join(graphs, module + ".symbols.json")] + sorted(
        glob.glob(os.path.join(graphs, module + "@*.symbols.json")))
    seen, missing, total = set(), [], 0
    for path in files:
        if not os.path.exists(path):
            continue
        for s in json.load(open(path))["symbols"]:
            if s.get("accessLevel") not in ("public", "open"):
                continue
            if s["kind"]["identifier"] in ("swift.extension",):
                continue
            ident = s["identifier"]["precise"]
            if ident in seen:
                continue
            seen.add(ident)
            # An implementation of a documented protocol requirement takes that doc (DocC shows it).
            if "sourceOrigin" in s:
                continue
            loc = s.get("location")
            if loc is None:
                continue  # made by the compiler: no place in a source file
            total += 1
            if not s.get("docComment", {}).get("lines"):
                where = "%s:%d" % (os.path.basename(loc["uri"]), loc["position"]["line"] + 1)
                missing.append("%s %s (%s)" % (s["kind"]["displayName"], ".".join(s["pathComponents"]), where))
    for m in sorted(missing):
        print(m)
    print("%s: %d of %d public symbols undocumented" % (module, len(missing), total))
    return 1 if len(missing) > allowed else 0


if __name__ == "__main__":
    sys.exit(main())
