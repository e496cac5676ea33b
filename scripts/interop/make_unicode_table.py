#!/usr/bin/env python3
"""Writes unicode-17.0.0-nfd.txt, the Unicode 17.0.0 data canonical equivalence needs (SPEC.md Part 2 §A4).

Needs the Unicode 17.0.0 database, which no Python of this machine's distribution carries: run it with the
unicodedata2 package of that version (pip install unicodedata2==17.0.0 in a virtual environment). The table is
checked in; kca_reader.py reads it, and Tests/KeyedArchiveTests/UnicodeTests.swift checks Swift's String
against every line of it (and every code point not in it).

One line per code point whose canonical combining class is not 0 or whose full canonical decomposition (NFD)
is not itself, Hangul syllables (decomposed by algorithm) excepted: `CODE CCC [NFD CODES...]` in hex.
"""
import sys

import unicodedata2 as u

VERSION = "17.0.0"


def main():
    if u.unidata_version != VERSION:
        sys.exit("unicodedata2 is Unicode %s, not %s" % (u.unidata_version, VERSION))
    out = ["# Unicode %s: canonical combining class and full canonical decomposition (NFD) of every code point"
           % VERSION,
           "# whose class is not 0 or that decomposes, Hangul syllables excepted. CODE CCC [NFD...], hex.",
           "# Written by make_unicode_table.py (unicodedata2 %s); SPEC.md Part 2 §A4." % VERSION]
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or 0xAC00 <= cp <= 0xD7A3:
            continue
        c = chr(cp)
        ccc = u.combining(c)
        nfd = u.normalize("NFD", c)
        if ccc or nfd != c:
            out.append("%04X %d%s" % (cp, ccc, "" if nfd == c else " " + " ".join("%04X" % ord(x) for x in nfd)))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
