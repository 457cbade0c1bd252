"""Line cleaning before a document is judged: boilerplate lines and C4's line rules, each family
switchable by its rule name; the prose around the removed lines is kept.

`boilerplate` removes the page furniture of web text, in English, German, French, Spanish,
Italian, Portuguese and Dutch: cookie and consent notices, rights and copyright lines, "enable
JavaScript" notices, skip links, breadcrumbs, call-to-action links ("read more", "share this",
"subscribe"), account links ("sign in", "register"), policy links ("terms of use", "privacy
policy") and navigation bars. A phrase alone is not enough: notices are matched only in lines of
at most `max_notice_words` words and only in their own wording ("we use cookies", not "bake the
cookies"; "All rights reserved" unquoted, not a sentence quoting it); links only at the start of
lines of at most `max_link_words` words, policy links anywhere in such a line that is not a
sentence (no terminal punctuation); the buttons and headings of consent banners ("Accept all",
"Manage preferences", "Your privacy choices") only as whole lines of that length. Consent
notices are the standard texts of the consent-management platforms (the IAB TCF banner,
Cookiebot, OneTrust, CookieYes, Complianz, iubenda, Usercentrics) in the site's voice ("we and
our partners", "your consent"): an article on consent law, of users and their consent, stays. A
navigation bar is at least `min_nav_items` items between separators (| » › · • → > " / " ::) of
at most `max_nav_item_words` words on average, or a line of TITLE_NAV_WORDS or more capitalised
words without punctuation (a sentence, German too, holds lower-case words).

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
_CONSENT_NOTICE = re.compile(
    # The standard texts of consent-management platforms (the IAB TCF banner of Quantcast,
    # Sourcepoint, Didomi and others; Cookiebot, OneTrust, CookieYes, Complianz, Usercentrics,
    # iubenda), spoken by the site ("we and our partners") to the reader ("your consent"): an
    # article reporting on consent law speaks of users and their consent instead.
    _phrases(
        r"\bwe and (?:our|selected) (?:\d+ |trusted |advertising )?"
        r"(?:partners|vendors|third parties)\b",
        r"\b(?:store|stores|storing|to store) and/or access\b",
        r"\bstore or retrieve information on your\b",
        r"\bwith your (?:permission|consent),? (?:we|our partners)\b",
        r"\b(?:click|tap|press) (?:here )?to consent\b|\b(?:before|refuse|not) consenting\b",
        r"\bconsenting to these technologies\b|\bthe technical storage or access\b",
        r"\b(?:change|withdraw|revoke|manage|update|review|adjust) your (?:cookie |privacy )?"
        r"(?:consent|preferences|choices)\b.{0,60}\b(?:at any time|this (?:web)?site|cookies)\b",
        r"\b(?:give|deny|refuse|withdraw|revoke),? (?:or |and )?(?:\w+,? (?:or |and )?)?"
        r"(?:withdraw )?your consent\b",
        r"\b(?:may not require|without|based on) your consent\b",
        r"\byou have (?:a|the) right to object\b",
        r"\bby clicking\b.{0,50}\byou (?:agree|consent|accept)\b|\buse the\W+accept\W+button\b",
        r"\bwe value your privacy\b|\brespect your right to privacy\b",
        r"\bshare information about your use of our (?:web)?site\b",
        r"\basks? for (?:your )?consent to use your\b|\bdenying consent may\b",
        r"\b(?:necessary|essential|functional|functionality|performance|analytics?|analytical|"
        r"statistics?|statistical|marketing|advertising|advertisement|targeting|preference) "
        r"cookies (?:are|help|enable|allow|collect|ensure|track|may|do|will|cannot)\b"
        r".{0,80}\b(?:website|site|browser|visitors?|personal|information|data|track\w*|"
        r"advertis\w*|functionalit\w*|navigation)\b",
        r"\bthese cookies\b.{0,60}\b(?:personal|information|data|browser|website|track\w*|"
        r"analytic\w*|advertis\w*|functionalit\w*|switched off|consent)\b",
        r"\bsome of them are essential\b",
        # German
        r"\bwir und unsere (?:\d+ )?partner\b|\b(?:speichern|zu speichern) und/oder\b",
        r"\bmit ihrer (?:erlaubnis|einwilligung|zustimmung),? (?:können|dürfen) wir\b",
        r"\b(?:ihre|deine) (?:einwilligung|zustimmung) (?:\w+ ){0,3}(?:geben|erteilen|verweigern|"
        r"widerrufen|ändern)\b|\bbevor sie (?:ihre )?(?:einwilligung|zustimmung)\b",
        r"\bwenn (?:sie|du) (?:auf )?.{0,40}\bklick(?:en|st)\b.{0,60}\b(?:stimm|akzeptier|zu\b)",
        r"\b(?:verwenden|nutzen|setzen) wir\b.{0,40}?\bcookies\b|\bdiesen technologien zustimm",
        r"\b(?:notwendige|essenzielle|essentielle|funktionale|statistik|marketing|präferenz)[- ]?"
        r"cookies (?:helfen|ermöglichen|werden|sind|dienen)\b|\beinige von ihnen sind essenziell\b",
        # French
        r"\bnous et nos (?:\d+ )?partenaires\b|\b(?:stockons|stocker) et/ou accéd",
        r"\bavec votre (?:permission|consentement|accord),? (?:nos partenaires et )?nous\b",
        r"\b(?:avant de|refuser de) consentir\b|\bcliquer pour consentir\b|\b(?:retirer|modifier) "
        r"votre consentement\b|\bnécessiter votre consentement\b|\ben cliquant sur\b.{0,50}"
        r"\bvous (?:acceptez|consentez)\b",
        # Spanish
        r"\bnosotros y nuestros (?:\d+ )?socios\b|\b(?:almacenamos|almacenar) (?:y/)?o acced",
        r"\bcon su (?:permiso|consentimiento),? (?:nosotros|nuestros socios|podemos)\b",
        r"\b(?:otorgar|dar|negar|retirar|requiera[n]?) su consentimiento\b|\bal hacer clic en\b"
        r".{0,50}\b(?:usted )?(?:acepta|consiente)\b",
        # Italian
        r"\bnoi e (?:i nostri (?:\d+ )?partner|terze parti selezionate)\b|\b(?:archiviamo|"
        r"memorizzare) e/o accede",
        r"\bcon il (?:tuo|suo) (?:consenso|permesso),? noi\b|\b(?:prima di acconsentire|negare il "
        r"consenso|revocare il (?:tuo |suo )?consenso|rifiuto del consenso)\b",
        r"\bcliccando su\b.{0,50}\b(?:accett|acconsent)",
        # Portuguese
        r"\bnós e (?:os )?(?:nossos|nossas) (?:\d+ )?parceiros\b|\b(?:armazenamos|armazenar) e/ou "
        r"ace",
        r"\bcom (?:a )?sua permissão,? nós\b|\b(?:antes de consentir|recusar o consentimento|"
        r"retirar o (?:seu )?consentimento)\b",
        r"\bao clicar em\b.{0,50}\b(?:concorda|aceita|consente)\b",
        # Dutch
        r"\bwij en onze (?:\d+ )?partners\b|\b(?:opslaan|op te slaan) en/of\b",
        r"\bmet (?:uw|je) (?:toestemming|permissie),? (?:kunnen )?(?:wij|we)\b|\bvoordat (?:u|je) "
        r"toestemming\b|\b(?:uw|je) toestemming (?:in te trekken|intrekken|weigeren)\b",
        r"\bdoor op\b.{0,50}\bte klikken\b|\bgebruiken (?:wij|we)\b.{0,40}?\bcookies\b",
    ),
    re.IGNORECASE,
)
_CONSENT_LABEL = re.compile(
    # The buttons, headings and tabs of consent banners, as whole lines.
    r"^\W*"
    + _phrases(
        r"(?:i )?(?:accept|allow|agree|reject|decline|deny|refuse|disagree|do not agree|do not "
        r"consent|consent)(?: all| selection| selected| all cookies| cookies"
        r"| necessary(?: cookies)?(?: only)?| essential(?: cookies)?(?: only)?)?"
        r"(?:(?: and| &) (?:close|continue))?",
        r"(?:use |only |allow only |accept only )?(?:strictly )?(?:necessary|essential|required) "
        r"cookies(?: only)?",
        r"manage (?:cookie |consent |privacy )?(?:preferences|options|settings|choices|cookies|"
        r"consent)",
        r"(?:cookie|privacy|consent) (?:settings|preferences|options|choices"
        r"|preference cent(?:er|re))",
        r"(?:your )?privacy(?: preference cent(?:er|re)| choices| options| settings| overview)",
        r"we value your privacy|do not sell(?: or share)? my(?: personal)? (?:information|data)",
        r"customi[sz]e(?: (?:consent |cookie )?(?:preferences|settings|choices))?",
        r"(?:save|confirm) (?:and exit|and close"
        r"|(?:my )?(?:preferences|settings|choices|selection))",
        r"(?:show|hide|view) (?:details|purposes|vendors|partners|preferences|cookie details)",
        r"(?:vendor|partner) list|list of (?:partners|vendors)(?: \(vendors\))?",
        r"legitimate interests?",
        r"continue without (?:accepting|agreeing)|always active",
        r"(?:performance|functional|functionality|targeting|marketing|analytics|analytical|"
        r"statistics?|advertising|advertisement|preference|social media|unclassified) cookies",
        # German
        r"alle (?:cookies )?(?:akzeptieren|ablehnen|zulassen|erlauben)|(?:akzeptieren|ablehnen|"
        r"zustimmen|zulassen)(?: und (?:schließen|weiter))?",
        r"auswahl (?:erlauben|zulassen|speichern|bestätigen)|nur (?:notwendige|essenzielle|"
        r"essentielle|erforderliche) cookies(?: (?:verwenden|akzeptieren|zulassen))?",
        r"(?:einstellungen|präferenzen|optionen) (?:verwalten|anpassen|speichern)|(?:cookie|"
        r"datenschutz|privatsphäre)-?(?:einstellungen|präferenzen)|individuelle "
        r"datenschutzeinstellungen|weiter ohne (?:einwilligung|zustimmung|zu akzeptieren)",
        # French
        r"tout (?:accepter|refuser)|(?:accepter|refuser|autoriser)(?: tout| les cookies| tous les "
        r"cookies)?(?: (?:et|&) (?:fermer|continuer))?|continuer sans accepter",
        r"personnaliser(?: mes choix)?",
        r"gérer (?:mes |les )?(?:choix|préférences|cookies|paramètres)|"
        r"paramétrer (?:les )?cookies|centre de préférences(?: de (?:la )?confidentialité)?",
        # Spanish
        r"(?:aceptar|rechazar|permitir)(?: todo| todas| todas las cookies| cookies| selección)?|"
        r"rechazarlas todas|continuar sin aceptar",
        r"(?:configurar|gestionar|administrar) (?:las )?(?:cookies|preferencias|opciones)|"
        r"centro de preferencias(?: de privacidad)?",
        # Italian
        r"(?:accetta|rifiuta)(?: tutti| tutto| tutti i cookie)?(?: e (?:chiudi|continua))?|"
        r"continua senza accettare|gestisci (?:le )?(?:preferenze|opzioni|cookie)|personalizza",
        # Portuguese
        r"(?:aceitar|rejeitar|recusar)(?: todos| tudo| todos os cookies)?|continuar sem aceitar|"
        r"(?:gerir|gerenciar) (?:as )?(?:preferências|opções|cookies)",
        # Dutch
        r"(?:alles?|alle cookies) (?:accepteren|weigeren|toestaan)|accepteren|weigeren|"
        r"(?:voorkeuren|instellingen) (?:beheren|aanpassen|opslaan)",
        r"doorgaan zonder (?:te )?accepteren",
    )
    + r"\W*$",
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
    ("cookie", _CONSENT_NOTICE),
    ("rights", _RIGHTS_NOTICE),
    ("javascript", _JAVASCRIPT_NOTICE),
)
_NOTICE_WORD = re.compile(
    r"cookie|javascript|©|\(c\)|copyright|reserv|réserv|riserv|vorbehalt|voorbehoud|consen|"
    r"partner|partenaire|parceiro|socios|vendor|third part|terze parti|privacy|and/or|"
    r"retrieve information|technical storage|your (?:preferen|choices)|right to object|button|"
    r"of them are essential|sind essenziell|einwilligung|zustimm|erlaubnis|toestemming|permiss|"
    r"permess|permiso|votre accord|almacen|clic|klick|klik|und/oder|et/ou|e/o|en/of"
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
        if _POLICY_LINK.search(line) and (
            _POLICY_LINK.match(line) or not line.endswith(TERMINAL_PUNCTUATION)
        ):  # a link's text, not a sentence naming the law ("Die Datenschutz-Grundverordnung ...")
            return "policy"
        if _CONSENT_LABEL.match(line):
            return "cookie"
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
