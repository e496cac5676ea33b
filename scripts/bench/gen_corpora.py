#!/usr/bin/env python3
"""Generate the kcar benchmark corpora (python3 stdlib only, deterministic for a given seed and scale).

Corpora, written under OUT (default: bench-data/ at the repository root, which is git-ignored):

  tree/              ~200 MB of ~20,000 text files: source code (Swift, Python, Go, TypeScript, C),
                     Markdown docs and JSON, in ~40 first-level folders (services) with nested
                     subfolders. Compresses like a real source tree (gzip -6 ratio about 0.2-0.25).
  secrets/           10,000 small files of 100-1,024 bytes (base64/hex tokens, JSON credentials,
                     PEM-like blocks, .env files) in ~100 service folders, one level deep
                     (secrets/SERVICE/ACCOUNT).
  big/blob/random.bin  1 GiB of incompressible bytes.

--scale S multiplies file counts and sizes of tree/ and secrets/ (and big/ unless --big-mib is given);
--no-big skips the big file. A corpus whose parameters have not changed since the last run is kept
(see OUT/.corpora.json); --force regenerates it.

Text is produced from pools of pre-generated code blocks and sentences whose identifiers are
placeholders; every file maps the placeholders to its own set of identifiers (str.translate), so files
are not copies of each other while generation stays fast (~10 s for 200 MB).
"""

import argparse
import base64
import json
import math
import os
import random
import re
import shutil
import sys
import time
import zlib

FIXED_MTIME = 1767225600  # 2026-01-01T00:00:00Z, so that vaults made from the corpus are reproducible

# ----------------------------------------------------------------------------------------------------
# Vocabulary

STOP_WORDS = """
the of and to in is that it for as with was on be by this are from or an at which not have has but
can all will one more when if there been their other into only some these any may such than its also
each then about would should must used could between after first new over both where most through
same while under those very because many before well even make we you see use so no do does
""".split()

CODE_WORDS = """
data value file user system time number name type list index key count size buffer request response
error result state config option path node item entry record block chunk stream reader writer parser
token header body field table query cache store client server service handler manager context session
message event queue task worker job thread lock timer signal process module package library function
method class object array string byte bytes integer map set vector graph tree edge input output source
target offset length limit range start end begin finish open close read write update delete create
remove insert append apply build check parse format encode decode compress encrypt decrypt sign verify
hash digest random seed salt nonce secret password account profile group role permission policy rule
filter sort merge split join match search find load save sync flush commit rollback retry timeout
deadline interval delay rate batch page cursor iterator sequence collection element member property
attribute label description comment note status code version release deploy install environment
variable parameter argument flag default min max total average percent ratio score weight level depth
width height color image text font line column row cell view window screen layout style theme button
menu dialog panel form submit cancel confirm select toggle network socket address host port protocol
route endpoint proxy gateway channel pipeline connection pool database schema migration transaction
snapshot backup restore archive export import report metric log trace debug info warning test spec
mock fixture sample example profile local remote current next prev last first new old raw safe
""".split()

SYLLABLES = """ba be bi bo bu da de di do du fa fe fi fo ka ke ki ko ku la le li lo lu ma me mi mo mu na ne
ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo za ze zo
bar ber bor cal cor dan del dor fan fer gan gor han her kan ker lan ler lin lon man mar mer mon nar
ner nor par per pol ran rel ron sal sar ser sol tan tar ter tor van ver vor xen yal zan zor
str pla tri cla gra pro qua spe tra""".split()


def zipf_weights(n, s=1.05):
    return [1.0 / (i + 1) ** s for i in range(n)]


class Vocab:
    def __init__(self, rng, pseudo=300):
        self.rng = rng
        stop = list(dict.fromkeys(STOP_WORDS))
        code = [w for w in dict.fromkeys(CODE_WORDS) if w not in stop]
        made = set(stop) | set(code)
        extra = []
        while len(extra) < pseudo:
            w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
            if w not in made:
                made.add(w)
                extra.append(w)
        # Prose: function words first (heaviest), then the others, shuffled so made-up words mix in.
        rest = code + extra
        rng.shuffle(rest)
        self.words = stop + rest
        self.word_cum = _cum(zipf_weights(len(self.words), 1.1))
        # Identifier parts: programming words, a few made-up (domain) words.
        self.parts = code + extra[: pseudo // 5]
        self.parts_cum = _cum(zipf_weights(len(self.parts), 0.9))

    def word(self):
        return self.rng.choices(self.words, cum_weights=self.word_cum)[0]

    def words_n(self, n):
        return self.rng.choices(self.words, cum_weights=self.word_cum, k=n)

    def part(self, k=1):
        return self.rng.choices(self.parts, cum_weights=self.parts_cum, k=k)

    def ident(self, style="camel"):
        k = self.rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        p = self.part(k)
        if style == "snake":
            return "_".join(p)
        if style == "pascal":
            return "".join(x.capitalize() for x in p)
        if style == "upper":
            return "_".join(p).upper()
        return p[0] + "".join(x.capitalize() for x in p[1:])


def _cum(ws):
    out, t = [], 0.0
    for w in ws:
        t += w
        out.append(t)
    return out


# ----------------------------------------------------------------------------------------------------
# Placeholders: private-use characters mapped per file to identifiers.

V0, T0, F0, K0 = 0xE000, 0xE100, 0xE200, 0xE300  # variables, types, functions, constants
NV, NT, NF, NK = 96, 32, 48, 24
VW = _cum(zipf_weights(NV, 1.0))
TW = _cum(zipf_weights(NT, 1.0))
FW = _cum(zipf_weights(NF, 1.0))
KW = _cum(zipf_weights(NK, 0.8))
LOCALITY = 0.85  # share of names a block draws from its own few
REPEAT = 0.4  # share of a block's statements that repeat an earlier one of the block (exactly or by template)
STMT_WEIGHTS = _cum(zipf_weights(64, 0.9))  # the first statement templates of a language are the common ones
VCH = [chr(V0 + i) for i in range(NV)]
TCH = [chr(T0 + i) for i in range(NT)]
FCH = [chr(F0 + i) for i in range(NF)]
KCH = [chr(K0 + i) for i in range(NK)]


class Filler:
    """Fills templates: {v} {t} {f} {k} become placeholders, {n} {s} {c} {h} literal values."""

    def __init__(self, rng, vocab):
        self.rng = rng
        self.vocab = vocab
        self.local = None

    def focus(self):
        """Start a block: it uses a few variables, types and functions most of the time, as real code does."""
        rng = self.rng
        self.local = ([self._v() for _ in range(rng.randint(3, 7))], [self._t() for _ in range(rng.randint(1, 3))],
                      [self._f() for _ in range(rng.randint(1, 4))])

    def _v(self):
        return self.rng.choices(VCH, cum_weights=VW)[0]

    def _t(self):
        return self.rng.choices(TCH, cum_weights=TW)[0]

    def _f(self):
        return self.rng.choices(FCH, cum_weights=FW)[0]

    def v(self):
        if self.local and self.rng.random() < LOCALITY:
            return self.rng.choice(self.local[0])
        return self._v()

    def t(self):
        if self.local and self.rng.random() < LOCALITY:
            return self.rng.choice(self.local[1])
        return self._t()

    def f(self):
        if self.local and self.rng.random() < LOCALITY:
            return self.rng.choice(self.local[2])
        return self._f()

    def k(self):
        return self.rng.choices(KCH, cum_weights=KW)[0]

    def n(self):
        r = self.rng.random()
        if r < 0.45:
            return str(self.rng.randint(0, 9))
        if r < 0.75:
            return str(self.rng.randint(10, 999))
        if r < 0.9:
            return str(self.rng.choice((16, 32, 64, 128, 256, 512, 1024, 4096, 65536)))
        return str(self.rng.randint(1000, 10 ** 7))

    def s(self):
        r = self.rng.random()
        if r < 0.5:
            return " ".join(self.vocab.words_n(self.rng.randint(1, 5)))
        if r < 0.7:
            return self.vocab.ident("snake")
        if r < 0.85:
            return "/" + "/".join(self.vocab.part(self.rng.randint(1, 3)))
        return "%s: %%s" % " ".join(self.vocab.words_n(self.rng.randint(1, 3)))

    def c(self):
        n = self.rng.randint(3, 14)
        ws = self.vocab.words_n(n)
        if self.rng.random() < 0.3:
            ws.insert(self.rng.randrange(len(ws) + 1), "`" + self.v() + "`")
        return " ".join(ws)

    def h(self):
        return "%0*x" % (8, self.rng.getrandbits(32))

    _TOKEN = re.compile(r"\{\{|\}\}|\{([vtfknsch])\}")

    def fill(self, template):
        def repl(m):
            t = m.group(0)
            if t == "{{":
                return "{"
            if t == "}}":
                return "}"
            return getattr(self, m.group(1))()
        return self._TOKEN.sub(repl, template)


# ----------------------------------------------------------------------------------------------------
# Code templates. A block is: header lines, body statements (some nested), footer. "  " = one level.

LANGS = {
    "swift": {
        "ext": ".swift",
        "comment": "// ",
        "file_head": ["import Foundation", "import {t}", "", "// {c}", ""],
        "block_heads": [
            ("public func {f}(_ {v}: {t}, {v}: {t}) throws -> {t} {{", "}}"),
            ("func {f}({v}: {t}) -> {t}? {{", "}}"),
            ("private func {f}() async throws {{", "}}"),
            ("public struct {t}: Hashable, Sendable {{", "}}"),
            ("final class {t} {{", "}}"),
            ("extension {t} {{", "}}"),
            ("enum {t}: String, Codable {{", "}}"),
            ("static func {f}(_ {v}: [{t}], {v}: Int = {n}) -> [{t}] {{", "}}"),
        ],
        "stmts": [
            "let {v} = {v}.{f}({v})",
            "var {v}: {t} = .init()",
            "let {v} = try {f}({v}, {v}: {v})",
            "guard let {v} = {v}[{v}] else {{ return nil }}",
            "guard {v}.count >= {n} else {{ throw {t}Error.{v}(\"{s}\") }}",
            "{v} += {n}",
            "{v}.append({v})",
            "{v} = {v}.map {{ $0.{v} }}",
            "return {v}",
            "return {t}({v}: {v}, {v}: {n})",
            "print(\"{s}\", {v})",
            "defer {{ {v}.{f}() }}",
            "{v}[{v}] = {v}.{v}",
            "let {v} = {v}.filter {{ $0.{v} > {n} }}.sorted {{ $0.{v} < $1.{v} }}",
            "assert({v} != nil, \"{s}\")",
            "{v}.{f}(with: {v}, {v}: .{v})",
            "case {v}",
            "case {v} = \"{s}\"",
            "public var {v}: {t}",
            "let {k} = {n}",
            "// {c}",
            "/// {c}",
            "self.{v} = {v}",
            "try await {v}.{f}({v})",
        ],
        "nest": [
            ("if {v} {{", "}}"),
            ("for {v} in {v} {{", "}}"),
            ("if let {v} = {v}.{v} {{", "}}"),
            ("while {v} < {v}.count {{", "}}"),
            ("switch {v} {{", "}}"),
            ("do {{", "}} catch {{\n{I}  throw {t}Error.{v}(error)\n{I}}}"),
        ],
    },
    "python": {
        "ext": ".py",
        "comment": "# ",
        "file_head": ['"""{c}."""', "", "import os", "import {v}", "from {v} import {t}, {f}", "", "{k} = {n}", ""],
        "block_heads": [
            ("def {f}({v}, {v}={n}):", ""),
            ("def {f}(self, {v}, *, {v}=None):", ""),
            ("class {t}({t}):", ""),
            ("async def {f}({v}: {t}, {v}: int = {n}) -> {t}:", ""),
            ("@property\ndef {v}(self):", ""),
        ],
        "stmts": [
            "{v} = {f}({v}, {v})",
            "{v} = self.{v}.{f}({v})",
            "self.{v} = {v}",
            "return {v}",
            "return {t}({v}={v}, {v}={n})",
            "{v}.append({v})",
            "{v}[{v}] = {v}.get(\"{s}\", {n})",
            "raise {t}Error(\"{s}\" % {v})",
            "{v} += {n}",
            "log.debug(\"{s}\", {v})",
            "{v} = [{v} for {v} in {v} if {v}.{v}]",
            "{v} = {{\"{v}\": {v}, \"{v}\": {n}}}",
            "# {c}",
            "assert {v} is not None, \"{s}\"",
            "{v}, {v} = {f}({v})",
            "yield {v}",
            "await {v}.{f}({v})",
            "{k} = \"{s}\"",
        ],
        "nest": [
            ("if {v}:", None),
            ("for {v} in {v}:", None),
            ("if {v} is None:", None),
            ("while {v} < len({v}):", None),
            ("with open({v}, \"rb\") as {v}:", None),
            ("try:", "except {t}Error as exc:\n{I}  raise {t}Error(\"{s}\") from exc"),
        ],
    },
    "go": {
        "ext": ".go",
        "comment": "// ",
        "file_head": ["// Package {v} {c}.", "package {v}", "", "import (", "  \"fmt\"", "  \"{s}\"", ")", ""],
        "block_heads": [
            ("func {f}({v} {t}, {v} int) ({t}, error) {{", "}}"),
            ("func ({v} *{t}) {f}({v} []byte) error {{", "}}"),
            ("type {t} struct {{", "}}"),
            ("func New{t}({v} *{t}) *{t} {{", "}}"),
        ],
        "stmts": [
            "{v} := {f}({v}, {v})",
            "{v}, err := {v}.{f}({v})",
            "if err != nil {{\n{I}  return nil, fmt.Errorf(\"{s}: %w\", err)\n{I}}}",
            "{v}.{v} = {v}",
            "return {v}, nil",
            "return &{t}{{{v}: {v}, {v}: {n}}}",
            "{v} = append({v}, {v})",
            "{v} += {n}",
            "{v} {t} `json:\"{v}\"`",
            "defer {v}.Close()",
            "// {c}",
            "log.Printf(\"{s} %d\", {v})",
            "{v}[{v}] = {v}",
            "var {v} []{t}",
        ],
        "nest": [
            ("if {v} != nil {{", "}}"),
            ("for _, {v} := range {v} {{", "}}"),
            ("for {v} := 0; {v} < {n}; {v}++ {{", "}}"),
            ("switch {v} {{", "}}"),
            ("select {{", "}}"),
        ],
    },
    "ts": {
        "ext": ".ts",
        "comment": "// ",
        "file_head": ["import {{ {t}, {f} }} from \"./{v}\";", "import * as {v} from \"{s}\";", "", "/** {c} */", ""],
        "block_heads": [
            ("export function {f}({v}: {t}, {v}?: number): {t} {{", "}}"),
            ("export async function {f}({v}: {t}[]): Promise<{t}> {{", "}}"),
            ("export class {t} extends {t} {{", "}}"),
            ("export interface {t} {{", "}}"),
            ("const {f} = ({v}: {t}) => {{", "}};"),
        ],
        "stmts": [
            "const {v} = {f}({v}, {v});",
            "let {v}: {t} | undefined;",
            "const {v} = await {v}.{f}({v});",
            "this.{v} = {v};",
            "return {v};",
            "return {{ {v}, {v}: {n}, {v}: \"{s}\" }};",
            "{v}.push({v});",
            "{v} += {n};",
            "{v}?: {t};",
            "readonly {v}: {t};",
            "console.log(`{s} ${{{v}}}`);",
            "throw new {t}Error(\"{s}\");",
            "// {c}",
            "const {v} = {v}.filter(({v}) => {v}.{v} > {n}).map(({v}) => {v}.{v});",
        ],
        "nest": [
            ("if ({v}) {{", "}}"),
            ("for (const {v} of {v}) {{", "}}"),
            ("if ({v} === undefined) {{", "}}"),
            ("try {{", "}} catch ({v}) {{\n{I}  throw new {t}Error(\"{s}\");\n{I}}}"),
            ("switch ({v}) {{", "}}"),
        ],
    },
    "c": {
        "ext": ".c",
        "comment": "/* ",
        "file_head": ["/* {c} */", "#include <stdio.h>", "#include <string.h>", "#include \"{v}.h\"", "",
                      "#define {k} {n}", ""],
        "block_heads": [
            ("static int {f}(struct {v} *{v}, size_t {v})\n{{", "}}"),
            ("int {f}(const char *{v}, int {v})\n{{", "}}"),
            ("struct {v} {{", "}};"),
            ("void {f}(void)\n{{", "}}"),
        ],
        "stmts": [
            "int {v} = {f}({v}, {v});",
            "{v}->{v} = {v};",
            "if ({v} < 0)\n{I}  return -{n};",
            "memcpy({v}, {v}->{v}, {n});",
            "return {v};",
            "{v} += {n};",
            "size_t {v};",
            "unsigned char {v}[{n}];",
            "fprintf(stderr, \"{s}: %d\\n\", {v});",
            "/* {c} */",
            "{v}[{v}] = {v};",
            "goto {v};",
        ],
        "nest": [
            ("if ({v}) {{", "}}"),
            ("for ({v} = 0; {v} < {n}; {v}++) {{", "}}"),
            ("while ({v}->{v}) {{", "}}"),
            ("switch ({v}) {{", "}}"),
        ],
    },
}


def make_block(rng, fl, lang):
    spec = LANGS[lang]
    fl.focus()
    head, foot = rng.choice(spec["block_heads"])
    lines = []
    if rng.random() < 0.5:
        lines.append(spec["comment"] + fl.c() + (" */" if lang == "c" else ""))
    lines.extend(fl.fill(head).split("\n"))

    stmts = spec["stmts"]
    weights = STMT_WEIGHTS[: len(stmts)]
    done = []  # (template, filled) of this block's statements, for near-repeats

    def body(depth, n):
        ind = "  " * depth if lang != "python" else "    " * depth
        for _ in range(n):
            if depth < 4 and rng.random() < 0.18:
                nh, nf = rng.choice(spec["nest"])
                lines.append(ind + fl.fill(nh))
                body(depth + 1, rng.randint(1, 5))
                if nf is None:
                    continue
                lines.extend(ind + x for x in fl.fill(nf.replace("{I}", ind)).split("\n"))
                continue
            r = rng.random()
            if done and r < REPEAT:
                # Real code repeats itself: the same statement again, or its template with other names.
                tmpl, filled = rng.choice(done)
                st = filled if r < REPEAT / 3 else fl.fill(tmpl)
            else:
                tmpl = rng.choices(stmts, cum_weights=weights)[0]
                st = fl.fill(tmpl)
                done.append((tmpl, st))
            st = st.replace("{I}", ind)
            lines.extend(ind + x if i == 0 else x for i, x in enumerate(st.split("\n")))

    body(1, rng.randint(2, 14))
    if foot:
        lines.append(fl.fill(foot))
    fl.local = None
    lines.append("")
    return "\n".join(lines) + "\n"


def make_sentence(rng, fl, vocab):
    n = rng.randint(6, 24)
    ws = vocab.words_n(n)
    r = rng.random()
    if r < 0.25:
        ws.insert(rng.randrange(len(ws) + 1), "`" + fl.v() + "`")
    elif r < 0.35:
        ws.insert(rng.randrange(len(ws) + 1), "`" + fl.t() + "." + fl.f() + "()`")
    elif r < 0.4:
        ws.insert(rng.randrange(len(ws) + 1), str(rng.randint(2, 5000)))
    s = " ".join(ws)
    return s[0].upper() + s[1:] + rng.choice((".", ".", ".", ".", ",", ":", "?"))


class Pools:
    def __init__(self, rng, vocab, blocks_per_lang=1500, sentences=12000):
        fl = Filler(rng, vocab)
        self.fl = fl
        self.blocks = {lang: [make_block(rng, fl, lang) for _ in range(blocks_per_lang)] for lang in LANGS}
        self.heads = {lang: ["\n".join(fl.fill(x) for x in LANGS[lang]["file_head"]) + "\n" for _ in range(200)]
                      for lang in LANGS}
        self.sentences = [make_sentence(rng, fl, vocab) for _ in range(sentences)]


# ----------------------------------------------------------------------------------------------------
# Per-file rendering


SHORT_NAMES = ["i", "j", "n", "x", "ok", "err", "key", "value", "data", "buf", "result", "count", "item", "name",
               "path", "size", "idx", "ctx", "out", "len"]


def ident_pool(vocab, style, n=5000):
    """n distinct identifiers of a style, made once per vocabulary."""
    cache = vocab.__dict__.setdefault("_idents", {})
    if style not in cache:
        seen = {}
        tries = 0
        while len(seen) < n and tries < n * 20:
            seen.setdefault(vocab.ident(style), None)
            tries += 1
        cache[style] = list(seen)
    return cache[style]


def file_table(rng, vocab, lang):
    """Maps the placeholders of one file to its own identifiers."""
    style = {"python": "snake", "c": "snake"}.get(lang, "camel")
    names = rng.sample(ident_pool(vocab, style), NV)
    short = rng.sample(SHORT_NAMES, 8)
    for i in range(8):
        if rng.random() < 0.5:
            names[i] = short[i]
    tab = dict(zip(range(V0, V0 + NV), names))
    tab.update(zip(range(T0, T0 + NT), rng.sample(ident_pool(vocab, "pascal"), NT)))
    tab.update(zip(range(F0, F0 + NF), rng.sample(ident_pool(vocab, "snake" if style == "snake" else "camel"), NF)))
    tab.update(zip(range(K0, K0 + NK), rng.sample(ident_pool(vocab, "upper"), NK)))
    return tab


def render_code(rng, pools, vocab, lang, size):
    parts = [rng.choice(pools.heads[lang])]
    n = len(parts[0])
    blocks = pools.blocks[lang]
    while n < size:
        b = rng.choice(blocks)
        parts.append(b)
        n += len(b) + 8  # placeholders expand; roughly
    text = "".join(parts).translate(file_table(rng, vocab, lang))
    return text.encode()[: max(size, 64)].rsplit(b"\n", 1)[0] + b"\n"


def render_markdown(rng, pools, vocab, size):
    sents = pools.sentences
    out = ["# " + " ".join(vocab.words_n(rng.randint(2, 5))).title() + "\n\n"]
    n = len(out[0])
    while n < size:
        r = rng.random()
        if r < 0.12:
            s = "\n" + "#" * rng.choice((2, 2, 3)) + " " + " ".join(vocab.words_n(rng.randint(1, 5))).capitalize() + "\n\n"
        elif r < 0.62:
            s = " ".join(rng.choice(sents) for _ in range(rng.randint(2, 7))) + "\n\n"
        elif r < 0.8:
            s = "".join(rng.choice(("- ", "* ", "1. ")) + rng.choice(sents) + "\n"
                        for _ in range(rng.randint(2, 6))) + "\n"
        elif r < 0.92:
            lang = rng.choice(list(LANGS))
            b = rng.choice(pools.blocks[lang])
            s = "```" + lang + "\n" + b + "```\n\n"
        else:
            cols = rng.randint(2, 4)
            hdr = [vocab.word().capitalize() for _ in range(cols)]
            rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * cols]
            for _ in range(rng.randint(2, 8)):
                rows.append("| " + " | ".join(rng.choice((pools.fl.v(), vocab.word(), str(rng.randint(0, 999)),
                                                          "`" + pools.fl.f() + "`")) for _ in range(cols)) + " |")
            s = "\n".join(rows) + "\n\n"
        out.append(s)
        n += len(s)
    text = "".join(out).translate(file_table(rng, vocab, "md"))
    return text.encode()[: max(size, 64)].rsplit(b"\n", 1)[0] + b"\n"


def json_value(rng, vocab, depth, keys):
    r = rng.random()
    if depth < 3 and r < 0.12:
        return {rng.choice(keys): json_value(rng, vocab, depth + 1, keys) for _ in range(rng.randint(1, 6))}
    if depth < 3 and r < 0.18:
        return [json_value(rng, vocab, depth + 1, keys) for _ in range(rng.randint(1, 5))]
    r = rng.random()
    if r < 0.2:
        return rng.randint(0, 5000)
    if r < 0.28:
        return round(rng.random() * 100, rng.choice((1, 2, 3, 6)))
    if r < 0.38:
        return rng.random() < 0.5
    if r < 0.42:
        return None
    if r < 0.52:
        return "%08x-%04x-4%03x-%04x-%012x" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12),
                                               rng.getrandbits(16), rng.getrandbits(48))
    if r < 0.6:
        return "2026-%02d-%02dT%02d:%02d:%02dZ" % (rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
                                                  rng.randint(0, 59), rng.randint(0, 59))
    if r < 0.68:
        return "https://%s.example.com/%s" % (vocab.part()[0], "/".join(vocab.part(rng.randint(1, 3))))
    return " ".join(vocab.words_n(rng.randint(1, 6)))


def render_json(rng, vocab, size):
    keys = [vocab.ident(rng.choice(("camel", "snake"))) for _ in range(rng.randint(8, 40))]
    if rng.random() < 0.6:
        # A list of records sharing a schema (fixtures, API dumps, lock files).
        schema = rng.sample(keys, min(len(keys), rng.randint(3, 10)))
        doc, n = [], 2
        # Most fields take one of a few values (status, type, flags); ids, dates and numbers vary.
        choices = {k: [json_value(rng, vocab, 2, keys) for _ in range(rng.randint(2, 8))] for k in schema}
        varying = {k: rng.random() < 0.35 for k in schema}
        while n < size:
            rec = {k: json_value(rng, vocab, 2, keys) if varying[k] else rng.choice(choices[k]) for k in schema}
            doc.append(rec)
            n += len(json.dumps(rec, indent=2)) + 4
        obj = {"version": rng.randint(1, 9), "items": doc}
    else:
        obj, n = {}, 2
        while n < size:
            k = rng.choice(keys) + ("" if rng.random() < 0.7 else "_" + vocab.part()[0])
            v = json_value(rng, vocab, 0, keys)
            obj[k] = v
            n += len(json.dumps({k: v}, indent=2))
    return (json.dumps(obj, indent=2) + "\n").encode()


# ----------------------------------------------------------------------------------------------------
# tree/


def gen_tree(out, scale, seed):
    rng = random.Random("kcar-tree-%d" % seed)
    vocab = Vocab(rng)
    pools = Pools(rng, vocab)
    nfiles = max(40, int(round(20000 * scale)))
    total = int(200 * 1000 * 1000 * scale)
    nserv = max(2, min(40, nfiles // 10))

    # File sizes: log-normal, scaled to hit the total; clamp to [60 B, 2 MB].
    raw = [rng.lognormvariate(0, 1.25) for _ in range(nfiles)]
    f = total / sum(raw)
    sizes = [min(2_000_000, max(60, int(x * f))) for x in raw]

    services = []
    seen = set()
    while len(services) < nserv:
        name = "-".join(vocab.part(rng.choice((1, 2, 2))))
        if name not in seen:
            seen.add(name)
            services.append(name)
    weights = [rng.uniform(0.3, 2.0) for _ in services]

    # Each service: a primary language, and a set of directories for code, docs and config.
    layout = {}
    for svc in services:
        lang = rng.choice(list(LANGS))
        src_root = {"swift": "Sources", "python": svc.replace("-", "_"), "go": "pkg", "ts": "src", "c": "src"}[lang]
        code_dirs = [src_root]
        for _ in range(rng.randint(3, 12)):
            parent = rng.choice(code_dirs)
            if parent.count("/") < 4:
                code_dirs.append(parent + "/" + vocab.ident("snake" if lang in ("python", "c") else "pascal"))
        doc_dirs = ["docs"] + ["docs/" + vocab.part()[0] for _ in range(rng.randint(0, 3))]
        json_dirs = [rng.choice(("config", "fixtures", "data", "schemas"))] + \
                    [rng.choice(("config", "fixtures", "data")) + "/" + vocab.part()[0] for _ in range(rng.randint(0, 3))]
        if lang != "swift":
            code_dirs.append("tests")
        layout[svc] = (lang, code_dirs, doc_dirs, json_dirs)

    tree = os.path.join(out, "tree")
    used_names = set()
    written = 0
    made_dirs = set()
    for size in sizes:
        svc = rng.choices(services, weights=weights)[0]
        lang, code_dirs, doc_dirs, json_dirs = layout[svc]
        r = rng.random()
        if r < 0.68:
            kind = rng.choice((lang, lang, lang, rng.choice(list(LANGS))))
            d = rng.choice(code_dirs)
            ext = LANGS[kind]["ext"]
            base = vocab.ident("snake" if kind in ("python", "c") else "pascal")
            data = render_code(rng, pools, vocab, kind, size)
        elif r < 0.86:
            d = rng.choice(doc_dirs)
            ext = ".md"
            base = "-".join(vocab.part(rng.randint(1, 3)))
            data = render_markdown(rng, pools, vocab, size)
        else:
            d = rng.choice(json_dirs)
            ext = ".json"
            base = "-".join(vocab.part(rng.randint(1, 2)))
            data = render_json(rng, vocab, size)
        rel = os.path.join(svc, d, base + ext)
        k = 2
        while rel in used_names:
            rel = os.path.join(svc, d, "%s%d%s" % (base, k, ext))
            k += 1
        used_names.add(rel)
        path = os.path.join(tree, rel)
        parent = os.path.dirname(path)
        if parent not in made_dirs:
            os.makedirs(parent, exist_ok=True)
            made_dirs.add(parent)
        with open(path, "wb") as fh:
            fh.write(data)
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))
        written += len(data)
    return {"files": len(sizes), "bytes": written, "services": len(services)}


# ----------------------------------------------------------------------------------------------------
# secrets/

B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def secret_value(rng, vocab, target, svc):
    kind = rng.random()
    if kind < 0.25:  # API token with a prefix
        prefix = rng.choice(("ghp_", "sk_live_", "xoxb-", "AKIA", "glpat-", "tok_", ""))
        n = max(8, target - len(prefix) - 1)
        tok = base64.urlsafe_b64encode(rng.randbytes(n)).decode().rstrip("=")[:n]
        return (prefix + tok + "\n").encode()
    if kind < 0.4:  # hex key
        n = max(8, (target - 1) // 2)
        return (rng.randbytes(n).hex() + "\n").encode()
    if kind < 0.65:  # JSON credentials
        base = {
            "type": rng.choice(("service_account", "oauth_client", "api_key", "database")),
            "client_id": str(rng.randint(10 ** 17, 10 ** 18)),
            "client_email": "%s@%s" % (vocab.ident("snake"), svc),
            "key_id": rng.randbytes(20).hex(),
            "created": "2026-%02d-%02dT%02d:%02d:00Z" % (rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
                                                         rng.randint(0, 59)),
            "secret": "",
        }
        rest = len(json.dumps(base, indent=2)) + 1
        n = max(8, target - rest)
        base["secret"] = base64.b64encode(rng.randbytes(n)).decode()[:n]
        return (json.dumps(base, indent=2) + "\n").encode()
    if kind < 0.85:  # PEM-like block
        label = rng.choice(("PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "CERTIFICATE"))
        head = "-----BEGIN %s-----\n" % label
        foot = "-----END %s-----\n" % label
        room = max(16, target - len(head) - len(foot))
        nchar = room - room // 65
        b = base64.b64encode(rng.randbytes(nchar * 3 // 4 + 3)).decode()[:nchar]
        lines = [b[i:i + 64] for i in range(0, len(b), 64)]
        return (head + "\n".join(lines) + "\n" + foot).encode()
    # .env file
    out = []
    n = 0
    while n < target - 40:
        k = vocab.ident("upper")
        v = base64.b64encode(rng.randbytes(rng.randint(8, 40))).decode()
        line = "%s=%s\n" % (k, v)
        out.append(line)
        n += len(line)
    return "".join(out).encode() if out else (vocab.ident("upper") + "=x\n").encode()


def gen_secrets(out, scale, seed):
    rng = random.Random("kcar-secrets-%d" % seed)
    vocab = Vocab(rng)
    nfiles = max(10, int(round(10000 * scale)))
    nserv = max(2, min(100, nfiles // 10))
    tlds = ("com", "io", "net", "org", "dev", "cloud")
    services = []
    seen = set()
    while len(services) < nserv:
        name = "%s.%s" % ("-".join(vocab.part(rng.choice((1, 1, 2)))), rng.choice(tlds))
        if rng.random() < 0.3:
            name = rng.choice(("api", "auth", "db", "login", "vault", "mail")) + "." + name
        if name not in seen:
            seen.add(name)
            services.append(name)
    root = os.path.join(out, "secrets")
    for s in services:
        os.makedirs(os.path.join(root, s), exist_ok=True)
    used = set()
    total = 0
    for i in range(nfiles):
        svc = services[i % nserv] if i < nserv else rng.choice(services)
        r = rng.random()
        if r < 0.4:
            acct = "%s@%s" % (vocab.part()[0], svc)
        elif r < 0.7:
            acct = "%s-%s" % (rng.choice(("deploy", "ci", "backup", "admin", "readonly", "svc", "bot")), vocab.part()[0])
        else:
            acct = vocab.ident("snake") + rng.choice((".json", ".pem", ".key", ".env", ".txt", ""))
        rel = svc + "/" + acct
        k = 2
        while rel in used:
            rel = "%s/%s-%d" % (svc, acct, k)
            k += 1
        used.add(rel)
        target = int(math.exp(rng.uniform(math.log(100), math.log(1024))))
        data = secret_value(rng, vocab, target, svc)
        if len(data) > 1024:
            data = data[:1023] + b"\n"
        if len(data) < 100:
            data = data.rstrip(b"\n") + base64.b64encode(rng.randbytes(80))[: 100 - len(data)] + b"\n"
        path = os.path.join(root, rel)
        with open(path, "wb") as fh:
            fh.write(data)
        os.chmod(path, 0o600)
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))
        total += len(data)
    return {"files": nfiles, "bytes": total, "services": nserv}


# ----------------------------------------------------------------------------------------------------
# big/


def gen_big(out, mib, seed):
    rng = random.Random("kcar-big-%d" % seed)
    d = os.path.join(out, "big", "blob")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "random.bin")
    left = mib << 20
    with open(path, "wb") as fh:
        while left > 0:
            n = min(left, 8 << 20)
            fh.write(rng.randbytes(n))
            left -= n
    os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    return {"files": 1, "bytes": mib << 20, "services": 1}


# ----------------------------------------------------------------------------------------------------


def gzip_ratio(root, sample_bytes=8 << 20):
    """gzip -6 ratio of up to sample_bytes of files, each compressed on its own (as tar|gzip would see them
    concatenated; per-file is within a few percent for files of a few KB)."""
    paths = []
    for dp, dn, fn in os.walk(root):
        dn.sort()
        for f in sorted(fn):
            paths.append(os.path.join(dp, f))
    rng = random.Random(0)
    rng.shuffle(paths)
    raw = comp = 0
    c = zlib.compressobj(6)
    for p in paths:
        with open(p, "rb") as fh:
            b = fh.read()
        raw += len(b)
        comp += len(c.compress(b))
        if raw >= sample_bytes:
            break
    comp += len(c.flush())
    return comp / raw if raw else 0.0


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=os.path.join(repo_root(), "bench-data"),
                    help="output directory (default: bench-data/ at the repository root)")
    ap.add_argument("--scale", type=float, default=1.0, help="scale file counts and sizes (e.g. 0.05)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--no-big", action="store_true", help="skip big/blob/random.bin")
    ap.add_argument("--big-mib", type=int, default=None,
                    help="size of big/blob/random.bin in MiB (default 1024 x scale, at least 16)")
    ap.add_argument("--only", default="tree,secrets,big", help="comma-separated subset of tree,secrets,big")
    ap.add_argument("--force", action="store_true", help="regenerate even if the parameters match")
    ap.add_argument("--check-ratio", action="store_true", help="print the gzip -6 ratio of a sample of tree/")
    args = ap.parse_args()

    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    stamp_path = os.path.join(out, ".corpora.json")
    try:
        with open(stamp_path) as fh:
            stamps = json.load(fh)
    except (OSError, ValueError):
        stamps = {}

    only = [x.strip() for x in args.only.split(",") if x.strip()]
    if args.no_big and "big" in only:
        only.remove("big")
    big_mib = args.big_mib if args.big_mib is not None else max(16, int(round(1024 * args.scale)))
    jobs = {
        "tree": ({"scale": args.scale, "seed": args.seed, "v": 3}, lambda: gen_tree(out, args.scale, args.seed)),
        "secrets": ({"scale": args.scale, "seed": args.seed, "v": 2}, lambda: gen_secrets(out, args.scale, args.seed)),
        "big": ({"mib": big_mib, "seed": args.seed, "v": 1}, lambda: gen_big(out, big_mib, args.seed)),
    }
    for name in only:
        if name not in jobs:
            sys.exit("unknown corpus %r" % name)
        params, run = jobs[name]
        target = os.path.join(out, name)
        old = stamps.get(name)
        if not args.force and old and old.get("params") == params and os.path.isdir(target):
            print("%-8s up to date: %d files, %.1f MB (%s)" % (name, old["files"], old["bytes"] / 1e6, target))
            continue
        if os.path.exists(target):
            shutil.rmtree(target)
        stamps.pop(name, None)
        with open(stamp_path, "w") as fh:
            json.dump(stamps, fh, indent=2, sort_keys=True)
        t = time.monotonic()
        info = run()
        dt = time.monotonic() - t
        info["params"] = params
        stamps[name] = info
        with open(stamp_path, "w") as fh:
            json.dump(stamps, fh, indent=2, sort_keys=True)
        print("%-8s %d files, %.1f MB in %d services, %.1f s (%s)" %
              (name, info["files"], info["bytes"] / 1e6, info["services"], dt, target))
    if args.check_ratio and os.path.isdir(os.path.join(out, "tree")):
        print("tree     gzip -6 ratio of a sample: %.3f" % gzip_ratio(os.path.join(out, "tree")))


if __name__ == "__main__":
    main()
