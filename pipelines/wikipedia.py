"""MediaWiki XML dumps: stream pages with constant memory and reduce wikitext to prose paragraphs.

`iter_pages` walks a dump with `iterparse`, clearing each page once read, so memory stays flat for
any dump size; each page carries the dump's `SiteInfo` (its language and `<namespaces>` list), whose
`canonical_links` rewrites localized namespace prefixes (`[[Категория:…]]`, `[[Datei:…]]`) to
MediaWiki's canonical names, which are valid on every wiki. `wikitext_to_paragraphs` removes what is not prose: a fast pre-pass strips comments,
references and other non-prose tags, renders a few inline templates that carry words ({{convert}},
{{lang}}, {{nowrap}} ...), removes all other templates and tables (a bracket-depth scanner), file/image,
category and interlanguage links, headings, list items and reference-like sections; mwparserfromhell
then reduces the remaining markup (links, bold/italics, inline tags, entities) to text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO

import mwparserfromhell

MAIN_NAMESPACE = 0

# Tags whose content is never prose: dropped with their content before parsing.
_DROPPED_TAGS = (
    "ref",
    "references",
    "math",
    "chem",
    "ce",
    "gallery",
    "timeline",
    "imagemap",
    "score",
    "graph",
    "syntaxhighlight",
    "source",
    "pre",
    "code",
    "hiero",
    "mapframe",
    "maplink",
    "templatedata",
    "templatestyles",
    "table",
    "noinclude",
    "includeonly",
    "poem",
    "inputbox",
    "categorytree",
)
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_PAIRED_TAGS = re.compile(
    r"<({})\b[^>]*?(?<!/)>(?:(?!<\1\b).)*?</\1\s*>".format("|".join(_DROPPED_TAGS)),
    re.DOTALL | re.IGNORECASE,
)
# Self-closing tags, and opening/closing tags left unpaired (their content is then kept).
_LONE_TAGS = re.compile(r"</?(?:{})\b[^>]*>".format("|".join(_DROPPED_TAGS)), re.IGNORECASE)
_BRACKETS = re.compile(r"\{\{|\}\}|^[ \t]*\{\||^[ \t]*\|\}|\[\[|\]\]", re.MULTILINE)
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
# Link targets that are not prose: any canonical namespace (media, files, categories ...) and
# interwiki/interlanguage links. Localized prefixes are made canonical first (SiteInfo.canonical_links).
_DROPPED_LINK = re.compile(
    r"\s*:?\s*(?:{}|image|wikt|wiktionary|commons|wikisource|s|q|n|b|v|voy|meta|mw|species|d|"
    r"[a-z]{{2,3}}(?:-[a-z]{{2,8}})?)\s*:".format(
        "|".join(
            sorted(
                (n.replace(" ", "[ _]+") for n in CANONICAL_NAMESPACES.values()),
                key=len,
                reverse=True,
            )
        )
    ),
    re.IGNORECASE,
)
_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$")
_BEHAVIOUR_SWITCH = re.compile(r"__[A-Z]+__")
# Sections whose content is lists of references or links, not prose.
_NON_PROSE_SECTIONS = frozenset(
    {
        "references",
        "external links",
        "see also",
        "further reading",
        "notes",
        "bibliography",
        "sources",
        "footnotes",
        "citations",
        "notes and references",
        "works cited",
        "gallery",
        "selected bibliography",
        "discography",
        "filmography",
        "works",
        "publications",
    }
)
_REDIRECT = re.compile(r"\s*#\s*redirect", re.IGNORECASE)
_DISAMBIGUATION = re.compile(
    r"\{\{\s*(?:disambiguation|disambig|disamb|dab|dis|hndis|geodis|numberdis|mathdab|schooldis|"
    r"shipindex|letter-numbercombdisambig|[^{}|]*disambiguation)\s*[|}]",
    re.IGNORECASE,
)
_RESIDUE = re.compile(r"^\s*(?:[|!]|\{\||\|\}|thumb\||\d+px\|)")
_LETTER = re.compile(r"[^\W\d_]")
_HTML_TAG = re.compile(
    r"</?(?:a|abbr|b|big|blockquote|br|center|cite|del|div|em|font|h[1-6]|hr|i|ins|kbd|li|ol|p|q|s|"
    r"small|span|strike|strong|sub|sup|td|th|tr|tt|u|ul|var|nowiki|onlyinclude|section)\b[^<>]{0,300}>",
    re.IGNORECASE,
)
_QUOTE_MARKUP = re.compile(r"'{2,}")
# Left where a template or reference was removed: "Greek ( , anarchia) ." -> "Greek (anarchia)."
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+(?=[.,;:!?)])")
_EMPTY_PARENTHESES = re.compile(r"\(\s*[,;]?\s*\)|(?<=\()\s*[,;]\s*")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


@dataclass(frozen=True)
class SiteInfo:
    """A dump's language (`xml:lang`) and local namespace names by number (its `<namespaces>` list)."""

    language: str = ""
    namespaces: dict[int, str] = field(default_factory=dict)

    @cached_property
    def _local_names(self) -> tuple[re.Pattern | None, dict[str, str]]:
        """(pattern of `[[` + a local or alias prefix + `:`, canonical name by case-folded local name)."""
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
        """`wikitext` with localized namespace prefixes of links made canonical ([[Категория:X]] -> [[Category:X]])."""
        pattern, canonical = self._local_names
        if pattern is None:
            return wikitext
        return pattern.sub(
            lambda m: (
                f"[[{m.group(1)}{canonical[re.sub(r'[ _]+', ' ', m.group(2)).casefold()]}{m.group(3)}"
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
    e.g. EOFError for a truncated bz2).
    """
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


# Inline templates that carry words of the sentence (innermost only: no braces inside).
_INLINE_TEMPLATE = re.compile(
    r"\{\{\s*(convert|cvt|lang(?:-[\w-]+)?|transl|nowrap|nobr|small|smaller|big|abbr|as of|circa|c\.|"
    r"visible anchor|frac|sfrac|ndash|mdash|snd|nbsp|spaced ndash|okina|'|\\)\s*(\|[^{}]*)?\}\}",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"[\d.,]+")
_ARGUMENT_PIPE = re.compile(r"\|(?![^\[]*\]\])")  # a pipe that is not inside [[link|label]]


def _render_inline(match: re.Match) -> str:
    name = match.group(1).lower()
    args = [a.strip() for a in _ARGUMENT_PIPE.split(match.group(2) or "")[1:] if "=" not in a]
    if name in ("ndash", "snd", "spaced ndash"):
        return " – " if name != "ndash" else "–"
    if name == "mdash":
        return "—"
    if name == "nbsp":
        return " "
    if name == "okina":
        return "ʻ"
    if name in ("'", "\\"):
        return "'" if name == "'" else " / "
    if not args:
        return ""
    if name in ("convert", "cvt"):
        words = [args[0]]
        for arg in args[1:]:
            words.append(arg)
            if not (
                _NUMBER.fullmatch(arg) or arg in ("to", "and", "-", "–", "or", "by", "x", "+/-")
            ):
                break
        return " ".join(words).replace(" - ", "–").replace(" – ", "–")
    if name.startswith("lang") or name == "transl":
        return args[-1]
    if name == "as of":
        return "As of " + " ".join(args[:3])
    if name in ("circa", "c."):
        return "c. " + args[0]
    if name in ("frac", "sfrac"):
        return "/".join(args[-2:]) if len(args) > 1 else "1/" + args[0]
    return args[0]


def expand_inline_templates(text: str) -> str:
    """Render the few inline templates whose words belong to the sentence ({{convert|30|m}} -> 30 m)."""
    return _INLINE_TEMPLATE.sub(_render_inline, text)


def strip_nested(text: str) -> str:
    """Remove templates `{{…}}`, tables `{|…|}` and media/category/interlanguage links, nested to any depth.

    Ordinary wikilinks `[[…]]` are kept for mwparserfromhell. A closer ends the innermost open
    bracket of its kind (and any left unclosed inside it); a closer with no opener is dropped.
    """
    out: list[str] = []
    stack: list[
        tuple[str, bool]
    ] = []  # open brackets: (closer expected, whether it removes content)
    dropping = 0  # how many open brackets remove content
    position = 0
    for match in _BRACKETS.finditer(text):
        token = match.group().strip()
        start, end = match.span()
        if dropping == 0:
            out.append(text[position:start])
        position = end
        if token in ("{{", "{|", "[["):
            drops = token != "[[" or bool(_DROPPED_LINK.match(text, end))
            stack.append(({"{{": "}}", "{|": "|}", "[[": "]]"}[token], drops))
            dropping += drops
            if dropping == 0:
                out.append(token)
        elif any(closer == token for closer, _ in stack):
            # close the innermost matching bracket, and any left unclosed inside it
            while True:
                closer, drops = stack.pop()
                if dropping == 0 and closer == "]]":
                    out.append("]]")
                dropping -= drops
                if closer == token:
                    break
        elif dropping == 0 and token == "]]":
            out.append(token)  # unbalanced: left to mwparserfromhell as text
    if dropping == 0:
        out.append(text[position:])
    return "".join(out)


def _prose_lines(text: str) -> Iterator[str]:
    """Lines of prose: headings, list items, indented and table lines and non-prose sections removed."""
    skipping_section = False
    for line in text.split("\n"):
        stripped = line.strip()
        heading = _HEADING.match(stripped)
        if heading:
            skipping_section = heading.group(2).strip().lower() in _NON_PROSE_SECTIONS
            continue
        if skipping_section or not stripped or stripped[0] in "*#:;" or _RESIDUE.match(stripped):
            continue
        yield stripped


def wikitext_to_paragraphs(wikitext: str) -> list[str]:
    """Prose paragraphs of a page's wikitext (one per source line), markup removed, spaces collapsed."""
    text = _COMMENT.sub("", wikitext)
    text = _LONE_TAGS.sub("", _PAIRED_TAGS.sub("", text))
    text = strip_nested(expand_inline_templates(text))
    text = _BEHAVIOUR_SWITCH.sub("", _BREAK.sub(" ", text))
    prose = "\n".join(_prose_lines(text))
    if not prose:
        return []
    plain = mwparserfromhell.parse(prose, skip_style_tags=False).strip_code(
        normalize=True, collapse=True
    )
    plain = _QUOTE_MARKUP.sub("", _HTML_TAG.sub(" ", plain))
    plain = _SPACE_BEFORE_PUNCTUATION.sub("", _EMPTY_PARENTHESES.sub("", plain))
    paragraphs = []
    for line in plain.split("\n"):
        line = " ".join(line.split())
        if line and _LETTER.search(line) and not _RESIDUE.match(line):
            paragraphs.append(line)
    return paragraphs
