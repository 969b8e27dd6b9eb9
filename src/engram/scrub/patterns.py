"""The built-in secret patterns: one named kind each, checked in this order.

Every regex is written to run in linear time on Python's backtracking engine:

- a token pattern starts with a negative lookbehind of its own character class, so inside a
  long run of token characters only the run's first position can start a match (no rescans);
- runs are possessive (``*+``, ``{n,}+``) or bounded (``{1,1024}``), so a failed attempt never
  backtracks through a run;
- repetitions are unambiguous (each ``_NAME`` segment begins with the ``_`` that ends the last).

``tests/test_scrub.py`` pins this with adversarial inputs (thousands of repeated separators and
base64-like runs) and a doubling check. A pattern's optional group ``secret`` is the part that is
replaced (the rest, such as a header name or ``NAME=``, is kept); without it the whole match is.

Each built-in pattern names its ``needles``, literals it cannot match without (lowercase for a
case-insensitive one), so that most texts are searched by a few patterns rather than all of
them; ``tests/test_scrub_prefilter.py`` checks that skipping never changes a result.
"""

from __future__ import annotations

TYPE_CHECKING = False  # re is imported when a pattern is first compiled: the hook starts faster
if TYPE_CHECKING:
    import re

IGNORECASE = 2
"""``re.IGNORECASE`` (its value is fixed by the ``re`` module; ``tests/test_scrub.py`` checks it),
so that defining the patterns does not import ``re``."""


class Pattern:
    """A kind of secret, the regex that finds it, and the literals it cannot match without.

    ``needles``: the regex can only match a text that contains one of them (checked against the
    text folded to lowercase when ``fold``, as a case-insensitive regex needs), so a text with
    none is not searched at all. Empty: always searched. The regex is compiled on first use, so a
    process that never needs a pattern (the hook client, mostly) never compiles it.
    """

    __slots__ = ("_regex", "flags", "fold", "kind", "needles", "source")

    def __init__(
        self,
        kind: str,
        source: str,
        flags: int = 0,
        needles: tuple[str, ...] = (),
        fold: bool = False,
    ) -> None:
        self.kind = kind
        self.source = source
        self.flags = flags
        self.needles = needles
        self.fold = fold
        self._regex: re.Pattern[str] | None = None

    @classmethod
    def compile(cls, kind: str, source: str, flags: int = 0) -> Pattern:
        """A pattern compiled now (``re.error`` if ``source`` is not a valid regex), searched in
        every text."""
        import re

        pattern = cls(kind, source, flags)
        pattern._regex = re.compile(source, flags)
        return pattern

    @property
    def regex(self) -> re.Pattern[str]:
        regex = self._regex
        if regex is None:  # a race compiles twice, harmlessly
            import re

            regex = self._regex = re.compile(self.source, self.flags)
        return regex

    def may_match(self, text: str, folded: str) -> bool:
        """False only when the regex cannot match ``text`` (``folded``: :func:`fold` of it)."""
        if not self.needles:
            return True
        haystack = folded if self.fold else text
        return any(n in haystack for n in self.needles)

    def __repr__(self) -> str:
        return f"Pattern({self.kind!r}, {self.source!r})"


_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
"""The non-ASCII letters a case-insensitive regex matches to ASCII ones (``İ ı ſ K``)."""


def fold(text: str) -> str:
    """``text`` lowercased so that every ASCII letter a case-insensitive regex would match is
    that lowercase letter: a needle absent from it cannot be matched."""
    return text.lower() if text.isascii() else text.translate(_FOLD).lower()


_NOT_MARKER = r"(?!\[REDACTED)"
"""Before a ``secret`` group: never redact a marker again (scrubbing twice changes nothing)."""

_HEADERS = (
    r"(?:proxy-)?authorization|x-api-key|api-key|x-auth-token|x-access-token|private-token|"
    r"x-amz-security-token|x-goog-api-key|x-vault-token|ocp-apim-subscription-key|"
    r"x-csrf-token|x-xsrf-token"
)
_VALUE = (
    _NOT_MARKER + r"(?![$<{%(])(?!(?:None|null|true|false|True|False|undefined)\b)"
    r"(?P<secret>(?<=\")[^\"\r\n]{1,1024}(?=\")|(?<=')[^'\r\n]{1,1024}(?=')"
    r"|[^\s\"'`,;&]{1,1024})"
)
"""The value of an assignment: inside its quotes when quoted, else up to a space or separator;
never a variable reference (``$X``, ``${X}``, ``<X>``, ``%X%``) or a null/boolean literal."""

_SAID_OF = (
    r"wrong|incorrect|invalid|expired|expiring|required|missing|empty|correct|changed|reset|"
    r"stored|saved|kept|weak|strong|long|short|not|too|still|being|hidden|masked|redacted|"
    r"encrypted|hashed|protected|needed|same|different|fine|okay|case|now|also|what|that|this|"
    r"your|their|there|here|only|just|never|always|set|sent|shared|printed|logged|given|"
    r"rotated|updated|provided|displayed|shown|visible|known|unknown|blank|none|null|longer|"
    r"shorter|secure|insecure|from|valid|about|enough|optional|mandatory|private|public|"
    r"sensitive|unique|simple|complex|easy|hard|available|unavailable|temporary|permanent|"
    r"random|different|identical|in|on|at|for|with|under|inside|within|somewhere|elsewhere"
)
"""Words that follow "the password is" when the sentence is about it, not giving it."""

_NOT_A_CALL = r"(?![A-Za-z0-9_.]{0,200}+\()"
"""Before a value: not code that computes it (``os.getcwd()``, ``os.environ.get(...)``)."""
_ARGS = (
    r"(?:[ \t]++(?:\"[^\"\r\n]{0,1024}+\"|'[^'\r\n]{0,1024}+'|[^\s;&|<>\"']++)++"
    r"(?![;&|<>])){0,30}?"
)
"""Up to 30 arguments of one command (unquoted runs with no shell operator, quoted ones with
anything inside): never past a ``;``, ``&&``, ``|``, ``<`` or ``>`` outside quotes."""

BUILTIN: tuple[Pattern, ...] = (
    # whole blocks first: their bodies would otherwise match shorter patterns piecemeal;
    # an unterminated block is redacted to the end of the text
    Pattern(
        "private_key",
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[^-]|-(?!----END))*+"
        r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
        needles=("-----BEGIN",),
    ),
    Pattern(
        "jwt",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+",
        needles=(".eyJ",),
    ),
    Pattern(
        "url_credentials",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s/?#@:]{0,256}:"
        + _NOT_MARKER
        # a password with an '@' of its own (p@ss@word@host) runs to the authority's last '@'
        + r"(?P<secret>(?:[^\s/?#@]{0,256}+@(?=[^\s/?#@]{0,256}+@))*+[^\s/?#@]{1,256})@",
        needles=("://",),
    ),
    Pattern(
        "auth_header",
        r"(?<![A-Za-z0-9_-])(?:"
        + _HEADERS
        + r")[\"']?[ \t]*+[:=][ \t]*+[\"']?"
        + _NOT_MARKER
        # an optional scheme word (Bearer, Basic, token...) and a credential of 8+ characters
        + r"(?P<secret>(?:[A-Za-z]{2,20}[ \t]++)?[^\s\"',;]{8,1024})",
        IGNORECASE,
        needles=("authorization", "api-key", "-token", "subscription-key"),
        fold=True,
    ),
    Pattern(
        "cookie",
        r"(?<![A-Za-z0-9_-])(?:set-)?cookie[\"']?[ \t]*+:[ \t]*+[\"']?"
        + _NOT_MARKER
        + r"(?P<secret>[^\r\n\"']{8,4096})",
        IGNORECASE,
        needles=("cookie",),
        fold=True,
    ),
    Pattern(
        "bearer_token",
        r"(?<![A-Za-z0-9_-])[Bb]earer[ \t]++"
        + _NOT_MARKER
        + r"(?P<secret>[A-Za-z0-9._~+/-]{16,}+=*+)",
        needles=("earer",),
    ),
    Pattern(
        "github_token",
        r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}+",
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    Pattern(
        "github_token", r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}+", needles=("github_pat_",)
    ),
    Pattern("gitlab_token", r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}+", needles=("glpat-",)),
    Pattern(
        "stripe_key",
        r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}+",
        needles=("_live_", "_test_"),
    ),
    # OpenAI, Anthropic and other "sk-" keys; a digit is required so that words like
    # "sk-learn-compatible-estimator" survive
    Pattern(
        "api_key",
        r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]{0,300}?[0-9])[A-Za-z0-9_-]{20,}+",
        needles=("sk-",),
    ),
    # case-insensitive: tags and categories arrive lowercased
    Pattern(
        "aws_access_key_id",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        IGNORECASE,
        needles=("akia", "asia"),
        fold=True,
    ),
    Pattern(
        "aws_secret_key",
        r"(?<![A-Za-z0-9_])(?:aws_?)?(?:secret_?access_?key|session_?token)[\"']?[ \t]*+[:=]"
        r"[ \t]*+[\"']?" + _NOT_MARKER + r"(?P<secret>[A-Za-z0-9/+=]{16,4096}+)",
        IGNORECASE,
        needles=("secretaccess", "secret_access", "sessiontoken", "session_token"),
        fold=True,
    ),
    Pattern(
        "google_api_key",
        r"(?<![A-Za-z0-9_-])(?i:AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
        needles=("aiza",),
        fold=True,
    ),
    Pattern("slack_token", r"(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}+", needles=("xox",)),
    Pattern("slack_token", r"(?<![A-Za-z0-9_-])xapp-[0-9]-[A-Za-z0-9-]{10,}+", needles=("xapp-",)),
    Pattern(
        "slack_webhook",
        r"hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}+",
        needles=("hooks.slack.com/services/",),
    ),
    Pattern("npm_token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", needles=("npm_",)),
    Pattern(
        "telegram_bot_token",
        r"(?<![0-9A-Za-z_])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])",
        needles=(":AA",),
    ),
    # NAME_KEY=value, NAME_TOKEN: value, DB_PASS=, SECRET_KEY_BASE=, ... (environment-variable
    # style names; a last segment of just PASS, as in DB_PASS), and libpq's PGPASSWORD
    Pattern(
        "secret_assignment",
        r"(?<![A-Za-z0-9_])(?:(?:[A-Z0-9]+_)+(?:[A-Z0-9]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|"
        r"CREDENTIALS?)(?:_BASE)?|PASS)|PGPASSWORD)(?![A-Za-z0-9_])[\"']?[ \t]*+[:=][ \t]*+[\"']?"
        # an unquoted number of at most three digits is a count or a flag (TEST_PASS=1)
        r"(?:(?<=[\"'])|(?![0-9]{1,3}(?![^\s\"'`,;&])))" + _VALUE,
        needles=("KEY", "TOKEN", "SECRET", "PASS", "PWD", "CREDENTIAL"),
    ),
    # the password glued to -p on a MySQL/MariaDB client's command line: mysql -u root -pSECRET,
    # -p"two words" (a bare -p asks for it; -P is the port); the arguments of that command only,
    # never past a shell operator (mysql ... && less -pattern)
    Pattern(
        "mysql_password",
        r"(?<![A-Za-z0-9_.-])(?i:(?:mysql|mariadb)[a-z_-]{0,20})"
        + _ARGS
        + r"[ \t]++-p[\"']?"
        + _NOT_MARKER
        + r"(?P<secret>(?<=\")[^\"\r\n]{1,1024}(?=\")|(?<=')[^'\r\n]{1,1024}(?=')"
        r"|[^\s\"']{1,1024})",
        needles=("mysql", "mariadb"),
        fold=True,
    ),
    # well-known lowercase and camelCase names: api_key = "...", password: ..., clientSecret=...
    Pattern(
        "secret_assignment",
        r"(?<![A-Za-z0-9_])(?:api[_-]?key|secret[_-]?key|client[_-]?secret|access[_-]?token|"
        r"refresh[_-]?token|auth[_-]?token|password|passwd)(?![A-Za-z0-9_])[\"']?[ \t]*+"
        r"[:=][ \t]*+[\"']?" + _VALUE,
        IGNORECASE,
        needles=("api_key", "api-key", "apikey", "secret", "token", "passw"),
        fold=True,
    ),
    # secret: ... / secret = "...", not a type annotation (def f(secret: str), secret: SecretStr)
    # nor a call (secret = os.environ.get(...))
    Pattern(
        "secret_assignment",
        r"(?<![A-Za-z0-9_])secret[\"']?[ \t]*+[:=][ \t]*+[\"']?"
        r"(?!(?-i:str|bytes|int|bool|float|Any|None|Optional|Secret[A-Za-z]*|dict|list)\b)"
        + _NOT_A_CALL
        + _VALUE,
        IGNORECASE,
        needles=("secret",),
        fold=True,
    ),
    # pwd=... (ODBC's Uid=sa;Pwd=...), never a path (PWD=/home/me in an environment dump)
    Pattern(
        "secret_assignment",
        r"(?<![A-Za-z0-9_$])pwd[\"']?[ \t]*+[:=][ \t]*+[\"']?(?![/~.])"
        + _NOT_A_CALL  # nor a call: pwd = os.getcwd()
        + _VALUE,
        IGNORECASE,
        needles=("pwd",),
        fold=True,
    ),
    # the value of a command-line flag that takes a secret: --password SECRET, --token ...,
    # --api-key ... (the '=' form is a secret_assignment); not another flag after it
    Pattern(
        "cli_password",
        r"(?<![A-Za-z0-9_-])--(?:password|passwd|pass|token|api-?key|api-token|auth-token|"
        r"access-token|private-token|client-secret|secret-key)(?![A-Za-z0-9_-])[ \t]++(?!-)"
        # prose about the flag: "the --password flag is deprecated"
        r"(?!(?:is|was|are|flag|option|and|or|to|takes|argument|value|of|in|on|for|with|the|"
        r"a|an|instead|first|if|when)\b)"
        r"[\"']?" + _VALUE,
        IGNORECASE,
        needles=("--pass", "--token", "--api", "-token", "--client-secret", "--secret-key"),
        fold=True,
    ),
    # the password after -p of a login command: sshpass -p SECRET, docker login -u me -p SECRET
    # (podman, nerdctl, buildah, skopeo, oras, helm registry); that command's arguments only
    Pattern(
        "cli_password",
        r"(?<![A-Za-z0-9_.-])(?i:sshpass|(?:docker|podman|nerdctl|buildah|skopeo|oras|"
        r"helm[ \t]++registry)[ \t]++login)"
        + _ARGS
        + r"[ \t]++-p(?:[ \t]++|(?=[^\s-]))[\"']?"
        + _NOT_MARKER
        + r"(?!-)"
        r"(?P<secret>(?<=\")[^\"\r\n]{1,1024}(?=\")|(?<=')[^'\r\n]{1,1024}(?=')"
        r"|[^\s\"']{1,1024})",
        needles=("sshpass", "login"),
        fold=True,
    ),
    # the password of curl's -u / --user user:password (a bare user asks for it)
    Pattern(
        "cli_password",
        r"(?<![A-Za-z0-9_.-])(?i:curl)"
        + _ARGS
        + r"[ \t]++(?:-u|--user)(?:[ \t]++|(?=[^\s-]))[\"']?[^\s:\"']{1,256}:"
        + _NOT_MARKER
        + r"(?![$])(?P<secret>[^\s\"']{1,1024})",  # not a variable: "$USER:$PASS"
        needles=("curl",),
        fold=True,
    ),
    # said in prose: "my password is hunter2", "the passphrase for prod was ..."; not a word
    # that says something about it ("the password is wrong", "... was changed")
    Pattern(
        "password_phrase",
        r"(?<![A-Za-z0-9_])pass(?:word|phrase|code)(?:[ \t]++(?:for|of|to)[ \t]++[^\s]{1,64}?)?"
        r"[ \t]++(?:is|was)[ \t]*+:?[ \t]*+[\"'`]?"
        + _NOT_MARKER
        # quoted: the whole quote ("purple monkey dishwasher"), whatever its first word
        + r"(?P<secret>(?<=\")[^\"\r\n]{1,256}(?=\")|(?<=')[^'\r\n]{1,256}(?=')"
        r"|(?<=`)[^`\r\n]{1,256}(?=`)|(?<![\"'`])"
        # unquoted: one token, not a word that says something about it ("is wrong"), nor one
        # ending in -ed, -ly or -ing that more words follow ("is passed to the server")
         + r"(?!(?:" + _SAID_OF + r")\b|[a-z]{2,}+(?<=ed|ly|ng)[ \t]++[a-z])"
        r"[^\s\"'`,;]{4,256}+)",
        IGNORECASE,
        needles=("password", "passphrase", "passcode"),
        fold=True,
    ),
)
