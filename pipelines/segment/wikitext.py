"""Wikitext to prose paragraphs: what a Wikipedia page says, without its markup.

`wikitext_to_paragraphs` removes what is not prose: a fast pre-pass strips comments, references and
other non-prose tags, renders a few inline templates that carry words ({{convert}}, {{lang}},
{{nowrap}} ...), removes all other templates and tables (a bracket-depth scanner), file/image,
category and interlanguage links, headings, list items and reference-like sections;
mwparserfromhell then reduces the remaining markup (links, bold/italics, inline tags, entities) to
text. Localized namespace prefixes of links are made canonical before (pipelines.segment.wikipedia's
SiteInfo.canonical_links)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import mwparserfromhell

from pipelines.segment.wikipedia import CANONICAL_NAMESPACES

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

# Link targets that are not prose: any canonical namespace (media, files, categories ...) and
# interwiki/interlanguage links. Localized prefixes are made canonical first
# (SiteInfo.canonical_links).
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
_RESIDUE = re.compile(r"^\s*(?:[|!]|\{\||\|\}|thumb\||\d+px\|)")
_LETTER = re.compile(r"[^\W\d_]")
_HTML_TAG = re.compile(
    r"</?(?:a|abbr|b|big|blockquote|br|center|cite|del|div|em|font|h[1-6]|hr|i|ins|kbd|li|ol|p|q|s|"
    r"small|span|strike|strong|sub|sup|td|th|tr|tt|u|ul|var|nowiki|onlyinclude|section)"
    r"\b[^<>]{0,300}>",
    re.IGNORECASE,
)
_QUOTE_MARKUP = re.compile(r"'{2,}")
# Left where a template or reference was removed: "Greek ( , anarchia) ." -> "Greek (anarchia)."
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+(?=[.,;:!?)])")
_EMPTY_PARENTHESES = re.compile(r"\(\s*[,;]?\s*\)|(?<=\()\s*[,;]\s*")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


# Inline templates that carry words of the sentence (innermost only: no braces inside).
_INLINE_TEMPLATE = re.compile(
    r"\{\{\s*(convert|cvt|lang(?:-[\w-]+)?|transl|nowrap|nobr|small|smaller|big|abbr|as of|"
    r"circa|c\.|visible anchor|frac|sfrac|ndash|mdash|snd|nbsp|spaced ndash|okina|'|\\)"
    r"\s*(\|[^{}]*)?\}\}",
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
    """Render the few inline templates whose words belong to the sentence ({{convert|30|m}} -> 30
    m)."""
    return _INLINE_TEMPLATE.sub(_render_inline, text)


def strip_nested(text: str) -> str:
    """Remove templates `{{…}}`, tables `{|…|}` and media/category/interlanguage links, nested to
    any depth.

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
    """Lines of prose: headings, list items, indented and table lines and non-prose sections
    removed."""
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
    """Prose paragraphs of a page's wikitext (one per source line), markup removed, spaces
    collapsed."""
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
