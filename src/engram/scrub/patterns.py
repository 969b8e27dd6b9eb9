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
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Pattern:
    """A kind of secret and the regex that finds it."""

    kind: str
    regex: re.Pattern[str]

    @classmethod
    def compile(cls, kind: str, source: str, flags: int = 0) -> Pattern:
        return cls(kind, re.compile(source, flags))


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

BUILTIN: tuple[Pattern, ...] = (
    # whole blocks first: their bodies would otherwise match shorter patterns piecemeal;
    # an unterminated block is redacted to the end of the text
    Pattern.compile(
        "private_key",
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[^-]|-(?!----END))*+"
        r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
    ),
    Pattern.compile(
        "jwt",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+",
    ),
    Pattern.compile(
        "url_credentials",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s/?#@:]{0,256}:"
        + _NOT_MARKER
        + r"(?P<secret>[^\s/?#@]{1,256})@",
    ),
    Pattern.compile(
        "auth_header",
        r"(?<![A-Za-z0-9_-])(?:"
        + _HEADERS
        + r")[\"']?[ \t]*+[:=][ \t]*+[\"']?"
        + _NOT_MARKER
        # an optional scheme word (Bearer, Basic, token...) and a credential of 8+ characters
        + r"(?P<secret>(?:[A-Za-z]{2,20}[ \t]++)?[^\s\"',;]{8,1024})",
        re.IGNORECASE,
    ),
    Pattern.compile(
        "cookie",
        r"(?<![A-Za-z0-9_-])(?:set-)?cookie[\"']?[ \t]*+:[ \t]*+[\"']?"
        + _NOT_MARKER
        + r"(?P<secret>[^\r\n\"']{8,4096})",
        re.IGNORECASE,
    ),
    Pattern.compile(
        "bearer_token",
        r"(?<![A-Za-z0-9_-])[Bb]earer[ \t]++"
        + _NOT_MARKER
        + r"(?P<secret>[A-Za-z0-9._~+/-]{16,}+=*+)",
    ),
    Pattern.compile("github_token", r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}+"),
    Pattern.compile("github_token", r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}+"),
    Pattern.compile("gitlab_token", r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}+"),
    Pattern.compile("stripe_key", r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}+"),
    # OpenAI, Anthropic and other "sk-" keys; a digit is required so that words like
    # "sk-learn-compatible-estimator" survive
    Pattern.compile(
        "api_key", r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]{0,300}?[0-9])[A-Za-z0-9_-]{20,}+"
    ),
    # case-insensitive: tags and categories arrive lowercased
    Pattern.compile("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", re.IGNORECASE),
    Pattern.compile(
        "aws_secret_key",
        r"(?<![A-Za-z0-9_])(?:aws_?)?(?:secret_?access_?key|session_?token)[\"']?[ \t]*+[:=]"
        r"[ \t]*+[\"']?" + _NOT_MARKER + r"(?P<secret>[A-Za-z0-9/+=]{16,4096}+)",
        re.IGNORECASE,
    ),
    Pattern.compile(
        "google_api_key", r"(?<![A-Za-z0-9_-])(?i:AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"
    ),
    Pattern.compile("slack_token", r"(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}+"),
    Pattern.compile("slack_token", r"(?<![A-Za-z0-9_-])xapp-[0-9]-[A-Za-z0-9-]{10,}+"),
    Pattern.compile("slack_webhook", r"hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}+"),
    Pattern.compile("npm_token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    Pattern.compile(
        "telegram_bot_token", r"(?<![0-9A-Za-z_])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"
    ),
    # NAME_KEY=value, NAME_TOKEN: value, ... (environment-variable style names)
    Pattern.compile(
        "secret_assignment",
        r"(?<![A-Za-z0-9_])(?:[A-Z0-9]+_)+(?:[A-Z0-9]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|"
        r"CREDENTIALS?))(?![A-Za-z0-9_])[\"']?[ \t]*+[:=][ \t]*+[\"']?" + _VALUE,
    ),
    # well-known lowercase and camelCase names: api_key = "...", password: ..., clientSecret=...
    Pattern.compile(
        "secret_assignment",
        r"(?<![A-Za-z0-9_])(?:api[_-]?key|secret[_-]?key|client[_-]?secret|access[_-]?token|"
        r"refresh[_-]?token|auth[_-]?token|password|passwd)(?![A-Za-z0-9_])[\"']?[ \t]*+[:=]"
        r"[ \t]*+[\"']?" + _VALUE,
        re.IGNORECASE,
    ),
)
