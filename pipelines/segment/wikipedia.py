"""MediaWiki XML dumps: pages streamed with constant memory, namespaces, redirects, disambiguation.

`iter_pages` walks a dump with `iterparse`, clearing each page once read, so memory stays flat for
any dump size; each page carries the dump's `SiteInfo` (its language and `<namespaces>` list), whose
`canonical_links` rewrites localized namespace prefixes (`[[Категория:…]]`, `[[Datei:…]]`) to
MediaWiki's canonical names, which are valid on every wiki. A page's wikitext becomes prose in
pipelines.segment.wikitext."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO

MAIN_NAMESPACE = 0

# MediaWiki's canonical namespace names (valid on every wiki, whatever its language) by number.
CANONICAL_NAMESPACES = {
    -2: "Media",
    -1: "Special",
    1: "Talk",
    2: "User",
    3: "User talk",
    4: "Project",
    5: "Project talk",
    6: "File",
    7: "File talk",
    8: "MediaWiki",
    9: "MediaWiki talk",
    10: "Template",
    11: "Template talk",
    12: "Help",
    13: "Help talk",
    14: "Category",
    15: "Category talk",
}
FILE_NAMESPACE = 6
# Aliases of the File namespace that a dump's <namespaces> list does not name (MediaWiki's
# $namespaceAliases), by language: the older local word for "Image" on large wikis ("Image" itself
# is an alias on every wiki and always dropped).
_FILE_ALIASES = {
    "bg": ("Картинка",),
    "de": ("Bild",),
    "sv": ("Bild",),
    "ru": ("Изображение",),
    "es": ("Imagen",),
    "it": ("Immagine",),
    "pt": ("Imagem",),
    "nl": ("Afbeelding",),
    "pl": ("Grafika",),
}
_REDIRECT = re.compile(r"\s*#\s*redirect", re.IGNORECASE)
_DISAMBIGUATION = re.compile(
    r"\{\{\s*(?:disambiguation|disambig|disamb|dab|dis|hndis|geodis|numberdis|mathdab|schooldis|"
    r"shipindex|letter-numbercombdisambig|[^{}|]*disambiguation)\s*[|}]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SiteInfo:
    """A dump's language (`xml:lang`) and local namespace names by number (its `<namespaces>`
    list)."""

    language: str = ""
    namespaces: dict[int, str] = field(default_factory=dict)

    @cached_property
    def _local_names(self) -> tuple[re.Pattern | None, dict[str, str]]:
        """(pattern of `[[` + a local or alias prefix + `:`, canonical name by case-folded local
        name)."""
        local = {
            name: key
            for key, name in self.namespaces.items()
            if key in CANONICAL_NAMESPACES and name
        }
        local.update(
            (alias, FILE_NAMESPACE) for alias in _FILE_ALIASES.get(self.language.split("-")[0], ())
        )
        canonical = {name.casefold(): CANONICAL_NAMESPACES[key] for name, key in local.items()}
        renamed = sorted(
            (n for n in local if n.casefold() != canonical[n.casefold()].casefold()),
            key=len,
            reverse=True,
        )
        if not renamed:
            return None, canonical
        alternatives = "|".join("[ _]+".join(map(re.escape, name.split())) for name in renamed)
        return re.compile(rf"\[\[(\s*:?\s*)({alternatives})(\s*:)", re.IGNORECASE), canonical

    def canonical_links(self, wikitext: str) -> str:
        """`wikitext` with localized namespace prefixes of links made canonical ([[Категория:X]] ->
        [[Category:X]])."""
        pattern, canonical = self._local_names
        if pattern is None:
            return wikitext
        return pattern.sub(
            lambda m: (
                f"[[{m.group(1)}"
                f"{canonical[re.sub(r'[ _]+', ' ', m.group(2)).casefold()]}{m.group(3)}"
            ),
            wikitext,
        )


@dataclass(frozen=True)
class Page:
    """One `<page>` of a dump; `redirect` is true for `<redirect/>` pages.

    `namespace` is None and `problem` says why when the page's `<ns>` is not a number.
    """

    page_id: str
    title: str
    namespace: int | None
    redirect: bool
    text: str
    site: SiteInfo = field(default_factory=SiteInfo)
    problem: str = ""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def iter_pages(stream: IO[bytes]) -> Iterator[Page]:
    """Pages of a MediaWiki XML export in file order, clearing each one after use.

    Every page carries the dump's SiteInfo (read from `<siteinfo>`, which precedes the pages).
    Raises `xml.etree.ElementTree.ParseError` on malformed XML (and whatever the byte stream raises,
    e.g. EOFError for a truncated bz2)."""
    context = ET.iterparse(stream, events=("start", "end"))
    _, root = next(context)
    if _local(root.tag) != "mediawiki":
        raise ET.ParseError(f"not a MediaWiki export: root element <{_local(root.tag)}>")
    language = root.get("{http://www.w3.org/XML/1998/namespace}lang", "")
    namespaces: dict[int, str] = {}
    site = SiteInfo(language)
    title = page_id = text = None
    namespace, redirect, depth, problem = 0, False, 0, ""
    for event, element in context:
        name = _local(element.tag)
        if event == "start":
            if name == "page":
                title, page_id, text, namespace, redirect, problem = None, None, None, 0, False, ""
            elif name == "revision":
                depth += 1
            continue
        if name == "title":
            title = element.text or ""
        elif name == "namespace" and element.get("key", "").lstrip("-").isdigit():
            namespaces[int(element.get("key"))] = (element.text or "").strip()
        elif name == "siteinfo":
            site = SiteInfo(language, dict(namespaces))
        elif name == "ns":
            raw = (element.text or "0").strip()
            try:
                namespace = int(raw)
            except ValueError:
                namespace, problem = None, f"<ns> is not a number ({raw[:40]!r})"
        elif name == "id" and depth == 0 and page_id is None:
            page_id = element.text or ""
        elif name == "redirect":
            redirect = True
        elif name == "text":
            text = element.text or ""
        elif name == "revision":
            depth -= 1
        elif name == "page":
            yield Page(
                page_id or title or "", title or "", namespace, redirect, text or "", site, problem
            )
            root.clear()


def is_redirect(page: Page) -> bool:
    return page.redirect or bool(_REDIRECT.match(page.text))


def is_disambiguation(page: Page) -> bool:
    """Disambiguation pages: a `(disambiguation)` title or a disambiguation template."""
    return page.title.endswith("(disambiguation)") or bool(_DISAMBIGUATION.search(page.text))
