"""The wording of web pages' furniture that line cleaning (pipelines.quality.boilerplate) removes,
in English, German, French, Spanish, Italian, Portuguese and Dutch: cookie and consent notices (the
site's own voice, as the common consent platforms word them: the IAB TCF banner, Cookiebot,
OneTrust, CookieYes, Complianz, iubenda, Usercentrics) and their buttons, rights lines, "enable
JavaScript" notices, link lines (read more, share, subscribe, sign in, skip to content), policy
links and teaser ends. Each pattern is compiled once, at import."""

from __future__ import annotations

import re


def _phrases(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


COOKIE_NOTICE = re.compile(
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
CONSENT_NOTICE = re.compile(
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
CONSENT_LABEL = re.compile(
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
RIGHTS_NOTICE = re.compile(
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
JAVASCRIPT_NOTICE = re.compile(
    _phrases(
        r"\b(?:enable|activate|turn on|requires|needs|aktivieren Sie|activez|activer|habilit[ae]|"
        r"activ[ae]|abilit[ae]|ativ[ae]|schakel)\s+(?:\w+\s+){0,2}javascript\b",
        r"(?<!if )(?<!when )\bjavascript\b.{0,20}\b(?:is (?:disabled|not enabled|required|"
        r"turned off)|must be enabled|aktivieren|deaktiviert|désactivé|desactivado|disattivato|"
        r"desativado|uitgeschakeld|inschakelen)",
    ),
    re.IGNORECASE,
)
LINK = re.compile(
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
POLICY_LINK = re.compile(
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
TEASER_END = re.compile(
    r"(?:\.\.\.|\[\.\.\.\])\s*(?:read more|continue reading|weiterlesen|lire la suite|leer más|"
    r"leggi tutto|leia mais|lees meer)\W*$|(?:read more|continue reading)\s*(?:»|›|→|>>|\.\.\.)$",
    re.IGNORECASE,
)
NOTICES = (
    ("cookie", COOKIE_NOTICE),
    ("cookie", CONSENT_NOTICE),
    ("rights", RIGHTS_NOTICE),
    ("javascript", JAVASCRIPT_NOTICE),
)
NOTICE_WORD = re.compile(
    r"cookie|javascript|©|\(c\)|copyright|reserv|réserv|riserv|vorbehalt|voorbehoud|consen|"
    r"partner|partenaire|parceiro|socios|vendor|third part|terze parti|privacy|and/or|"
    r"retrieve information|technical storage|your (?:preferen|choices)|right to object|button|"
    r"of them are essential|sind essenziell|einwilligung|zustimm|erlaubnis|toestemming|permiss|"
    r"permess|permiso|votre accord|almacen|clic|klick|klik|und/oder|et/ou|e/o|en/of"
)
"""One of which every notice holds, in lower case (a quick test before the notices' patterns)."""
