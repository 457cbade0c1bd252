"""Line cleaning before a document is judged: boilerplate lines and C4's line rules, each family
switchable by its rule name; the prose around the removed lines is kept.

`boilerplate` removes the page furniture of web text, in English, German, French, Spanish,
Italian, Portuguese and Dutch: cookie and consent notices, rights and copyright lines, "enable
JavaScript" notices, skip links, breadcrumbs, call-to-action links ("read more", "share this",
"subscribe"), account links ("sign in", "register"), policy links ("terms of use", "privacy
policy") and navigation bars. A phrase alone is not enough: notices are matched only in lines of
at most `max_notice_words` words and only in their own wording ("we use cookies", not "bake the
cookies"; "All rights reserved" unquoted, not a sentence quoting it), links only at the start of
lines of at most `max_link_words` words; a navigation bar is at least `min_nav_items` items
between separators (| » › · • → > " / " ::) of at most `max_nav_item_words` words on average, or
a line of TITLE_NAV_WORDS or more capitalised words without punctuation (a sentence, German too,
holds lower-case words).

`c4_lines` applies C4's line rules as datatrove's C4QualityFilter does, in its order: a line with
a word longer than `max_word_length` characters goes; citation marks ("[1]", "[edit]", "[citation
needed]") are cut out (`remove_citations`); a line not ending in terminal punctuation goes
(`filter_no_terminal_punct`), as does one of fewer than `min_words_per_line` words, one naming
JavaScript (`filter_javascript`) and one holding a policy phrase (`filter_policy`). Words are
whitespace tokens (C4's), a segmenter's words for Chinese, Japanese and Thai. The 0/1 parameters
switch a check. The terminal-punctuation check is off by default: it removes 70 to 78 % of the
characters of Shakespeare's plays, 12 % of Milton's and 3 % of Wikipedia's (lines ending in ":",
")" or "--"). C4's document rules ("lorem ipsum", a curly bracket) belong to `c4_document`.

A line goes to the first rule and check that matches: boilerplate first, then c4_lines.
`clean_lines` counts the lines each check removes (CHECK_COUNTER) and returns each rule's total,
which its caller counts (the chain: as quality_lines_<rule>).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Protocol

from pipelines.quality.words import SEGMENTED_LANGUAGES, TERMINAL_PUNCTUATION, split_words


class Settings(Protocol):
    """What line cleaning reads of the quality settings."""

    def enabled(self, rule: str) -> bool: ...

    def threshold(self, rule: str, param: str, language: str) -> float: ...


BOILERPLATE_PARAMS = ("max_notice_words", "max_link_words", "min_nav_items", "max_nav_item_words")
C4_PARAMS = (
    "min_words_per_line",
    "max_word_length",
    "remove_citations",
    "filter_no_terminal_punct",
    "filter_javascript",
    "filter_policy",
)
CHECK_COUNTER = "quality_linecheck_{rule}_{check}"
"""Lines removed per check (the chain counts each rule's total as quality_lines_<rule>)."""


def _phrases(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


_COOKIE_NOTICE = re.compile(
    _phrases(
        r"\b(?:we|this (?:web)?site|our (?:web)?site|this website)\s+(?:also |may |only )?"
        r"(?:use|uses|utili[sz]es?|employs?|places?|stores?|sets?)\s+(?:\w+\s+){0,3}?cookies\b",
        r"\b(?:accept|allow|reject|decline|manage) (?:all |our |the )?cookies\b",
        r"\bcookies? (?:policy|settings|preferences|consent|notice|declaration)\b",
        r"\bby (?:continuing|using|clicking|browsing)\b.{0,80}\bcookies\b",
        r"\b(?:diese|unsere) (?:web)?(?:seite|site)\b.{0,40}?\bcookies\b",
        r"\bwir (?:verwenden|nutzen|setzen)\b.{0,30}?\bcookies\b",
        r"\bcookies? (?:akzeptieren|zulassen|ablehnen)\b|\bcookie-(?:einstellungen|richtlinie)",
        r"\b(?:ce|notre) site\b.{0,40}?\bcookies\b|\bnous utilisons (?:des )?cookies\b",
        r"\baccepter (?:les |tous les )?cookies\b|\b(?:politique|gestion|paramètres) des cookies",
        r"\b(?:este|nuestro|nosso) (?:sitio|site|sítio|portal)\b.{0,40}?\bcookies\b",
        r"\b(?:utilizamos|usamos) cookies\b|\bacept(?:ar|o) (?:las |todas las )?cookies\b",
        r"\bpolítica de cookies\b|\bconfiguración de cookies\b|\baceitar (?:os )?cookies\b",
        r"\bquesto sito\b.{0,40}?\bcookie\b|\b(?:utilizziamo|usiamo) (?:i )?cookie\b",
        r"\baccett[ao] (?:i |tutti i )?cookie\b|\binformativa (?:sui |estesa sui )?cookie\b",
        r"\b(?:deze|onze) (?:web)?site\b.{0,40}?\bcookies\b|\bwij? gebruiken cookies\b",
        r"\bcookies? accepteren\b|\bcookiebeleid\b|\bcookie-instellingen\b",
    ),
    re.IGNORECASE,
)
_RIGHTS_NOTICE = re.compile(
    r"(?<![\"“'‘«„])\b"
    + _phrases(
        "all rights reserved",
        "alle rechte vorbehalten",
        "tous droits réservés",
        "todos los derechos reservados",
        "tutti i diritti riservati",
        "todos os direitos reservados",
        "alle rechten voorbehouden",
    )
    # at a sentence's end, followed by the line's end, a separator or another sentence
    + r"(?![\"”'’»])(?=[.!]?(?:$|\s*[|·•]|\s+(?-i:[A-Z0-9©])))"
    + r"|^(?:copyright\s*)?(?:©|\(c\)|copyright)\s*\d{4}",
    re.IGNORECASE,
)
_JAVASCRIPT_NOTICE = re.compile(
    _phrases(
        r"\b(?:enable|activate|turn on|requires|needs|aktivieren Sie|activez|activer|habilit[ae]|"
        r"activ[ae]|abilit[ae]|ativ[ae]|schakel)\s+(?:\w+\s+){0,2}javascript\b",
        r"(?<!if )(?<!when )\bjavascript\b.{0,20}\b(?:is (?:disabled|not enabled|required|"
        r"turned off)|must be enabled|aktivieren|deaktiviert|désactivé|desactivado|disattivato|"
        r"desativado|uitgeschakeld|inschakelen)",
    ),
    re.IGNORECASE,
)
_LINK = re.compile(
    r"^\W*(?:"
    + "|".join(
        f"(?P<{check}>{_phrases(*phrases)})"
        for check, phrases in {
            "skip": (
                r"skip to (?:the )?(?:main )?(?:content|navigation|search|menu)",
                r"jump to (?:navigation|search|content)",
                r"(?:zum|direkt zum) inhalt",
                r"(?:aller|passer) au contenu",
                r"(?:saltar|ir) al contenido",
                r"(?:vai|salta) al contenuto",
                r"(?:ir|saltar) para o conteúdo",
                r"(?:ga |spring )?naar (?:de )?(?:hoofd)?inhoud",
            ),
            "breadcrumb": (
                r"you are here\s*:",
                r"sie sind hier\s*:",
                r"vous êtes ici\s*:",
                r"(?:usted )?está aquí\s*:",
                r"(?:tu )?sei qui\s*:",
                r"você está aqui\s*:",
                r"u bent hier\s*:",
            ),
            "call_to_action": (
                r"read (?:more|the full|full)",
                r"continue reading|click here|tap here|learn more|find out more",
                r"(?:see|show|load|view) (?:more|all)\b|share (?:this|on|via)|subscribe",
                r"sign up (?:for|to)|follow us|like us on|leave a (?:comment|reply)",
                r"post a comment|add to (?:cart|basket|wishlist)|buy now|shop now",
                r"back to top|(?:previous|next) (?:post|article|page|story)",
                r"related (?:posts|articles|stories)|posted (?:by|on|in)\b|filed under|tags\s*:",
                r"weiterlesen|mehr (?:lesen|erfahren)|hier klicken|jetzt (?:kaufen|abonnieren)",
                r"lire la suite|en savoir plus|cliquez ici|partager sur|abonnez-vous",
                r"leer más|seguir leyendo|haz? (?:clic|click) aquí|suscríbete|compartir en",
                r"leggi (?:tutto|di più)|continua a leggere|clicca qui|iscriviti|condividi su",
                r"leia mais|ler mais|continue lendo|clique aqui|inscreva-se|compartilhe",
                r"lees meer|verder lezen|klik hier|abonneer|deel (?:dit|op)",
            ),
            "account": (
                r"(?:sign|log) (?:in|out)\b|log-?in\b|logout\b|register\b|create an? account",
                r"my account\b|forgot (?:your )?password",
                r"anmelden|abmelden|registrieren|einloggen|mein konto|passwort vergessen",
                r"se connecter|connexion|s'inscrire|mon compte|mot de passe oublié",
                r"iniciar sesión|registrarse|regístrate|mi cuenta",
                r"accedi|registrati|il mio account|cadastre-se|minha conta",
                r"inloggen|registreren|mijn account",
            ),
        }.items()
    )
    + r")(?!\w)",
    re.IGNORECASE,
)
_POLICY_LINK = re.compile(
    _phrases(
        r"terms (?:of (?:use|service)|(?:and|&) conditions)|privacy (?:policy|notice|statement)",
        r"cookie policy|legal notice|impressum|datenschutz(?:erklärung)?|nutzungsbedingungen",
        r"\bagb\b|mentions légales|politique de confidentialité|conditions (?:générales|d'utili)",
        r"aviso legal|política de privacidad|términos y condiciones|condiciones de uso",
        r"note legali|informativa (?:sulla )?privacy|termini e condizioni",
        r"política de privacidade|termos (?:de uso|e condições)",
        r"privacybeleid|privacyverklaring|algemene voorwaarden",
    ),
    re.IGNORECASE,
)
_TEASER_END = re.compile(
    r"(?:\.\.\.|\[\.\.\.\])\s*(?:read more|continue reading|weiterlesen|lire la suite|leer más|"
    r"leggi tutto|leia mais|lees meer)\W*$|(?:read more|continue reading)\s*(?:»|›|→|>>|\.\.\.)$",
    re.IGNORECASE,
)
_NOTICES = (
    ("cookie", _COOKIE_NOTICE),
    ("rights", _RIGHTS_NOTICE),
    ("javascript", _JAVASCRIPT_NOTICE),
)
_NOTICE_WORD = re.compile(
    r"cookie|javascript|©|\(c\)|copyright|reserv|réserv|riserv|vorbehalt|voorbehoud"
)
"""One of which every notice holds, in lower case (a quick test before the notices' patterns)."""
_SEPARATORS = ("|", "»", "›", "·", "•", "→", ">", "::", " / ")
_NAV_SEPARATOR = re.compile(r"\s*(?:\||»|›|·|•|→|>|::|\s/(?=\s))\s*")
_CAPITALISED = re.compile(r"[^\W\d_](?:[\w'’.&-]*[^\W_])?")
TITLE_NAV_WORDS = 6
"""The fewest words of a navigation bar written as capitalised words without separators."""


def _separated_items(line: str, min_items: float, max_item_words: float) -> bool:
    """At least `min_items` items between separators, of `max_item_words` words on average."""
    if not any(separator in line for separator in _SEPARATORS):
        return False
    items = [item for item in _NAV_SEPARATOR.split(line) if item]
    words = sum(item.count(" ") + 1 for item in items)
    return len(items) >= min_items and words <= max_item_words * len(items)


def _capitalised_words(line: str) -> bool:
    """TITLE_NAV_WORDS words or more, each capitalised, none ending in punctuation."""
    words = line.split()
    return len(words) >= TITLE_NAV_WORDS and all(
        word == "&" or (word[0].isupper() and _CAPITALISED.fullmatch(word)) for word in words
    )


def boilerplate_check(line: str, limits: dict[str, float]) -> str | None:
    """The boilerplate check that `line` fails (its name), or None: it is not boilerplate."""
    words = line.count(" ") + 1
    if words <= limits["max_link_words"]:
        if link := _LINK.match(line):
            return link.lastgroup
        if _POLICY_LINK.search(line):
            return "policy"
    if words <= limits["max_notice_words"]:
        if _NOTICE_WORD.search(line.lower()):
            for check, pattern in _NOTICES:
                if pattern.search(line):
                    return check
        if _capitalised_words(line):
            return "navigation"
    if _TEASER_END.search(line, max(0, len(line) - 40)):
        return "call_to_action"
    if _separated_items(line, limits["min_nav_items"], limits["max_nav_item_words"]):
        return "navigation"
    return None


_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_POLICY_PHRASES = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)


def c4_check(line: str, language: str, limits: dict[str, float]) -> tuple[str, str | None]:
    """The line after citation removal and the C4 check it fails (its name), or None."""
    if language in SEGMENTED_LANGUAGES:
        words = split_words(line, language)
        too_long = bool(words) and max(map(len, words)) > limits["max_word_length"]
        count = len(words)
    else:  # whitespace is collapsed: the spaces count the words
        too_long = len(line) > limits["max_word_length"] and (
            max(map(len, line.split())) > limits["max_word_length"]
        )
        count = line.count(" ") + 1
    if too_long:
        return line, "too_long_word"
    if limits["remove_citations"] and "[" in line:
        line = " ".join(_CITATION.sub("", line).split())
    if limits["filter_no_terminal_punct"] and (
        not line.endswith(TERMINAL_PUNCTUATION) or line.endswith("...")
    ):
        return line, "no_terminal_punct"
    if count < limits["min_words_per_line"]:
        return line, "too_few_words"
    lower = line.lower()
    if limits["filter_javascript"] and "javascript" in lower:
        return line, "javascript"
    if limits["filter_policy"] and any(phrase in lower for phrase in _POLICY_PHRASES):
        return line, "policy"
    return line, None


def _limits(settings: Settings, rule: str, params: Iterable[str], language: str) -> dict:
    return {param: settings.threshold(rule, param, language) for param in params}


def clean_lines(
    lines: Iterable[str], language: str, settings: Settings, inc: Callable[[str, int], None]
) -> tuple[tuple[str, ...], dict[str, int]]:
    """The lines kept, in order, and the lines removed per rule (rules that removed none left
    out). Counts each check's removals through `inc` as CHECK_COUNTER; the per-rule totals are
    the caller's to count."""
    boilerplate = settings.enabled("boilerplate")
    c4 = settings.enabled("c4_lines")
    if boilerplate:
        boilerplate_limits = _limits(settings, "boilerplate", BOILERPLATE_PARAMS, language)
    if c4:
        c4_limits = _limits(settings, "c4_lines", C4_PARAMS, language)
    kept: list[str] = []
    removed: Counter[tuple[str, str]] = Counter()
    for line in lines:
        if boilerplate and (check := boilerplate_check(line, boilerplate_limits)):
            removed["boilerplate", check] += 1
            continue
        if c4:
            line, check = c4_check(line, language, c4_limits)
            if check:
                removed["c4_lines", check] += 1
                continue
        kept.append(line)
    per_rule: Counter[str] = Counter()
    for (rule, check), count in sorted(removed.items()):
        inc(CHECK_COUNTER.format(rule=rule, check=check), count)
        per_rule[rule] += count
    return tuple(kept), dict(per_rule)
