"""Fake secrets of every kind the scrubber knows, built at run time so that no realistic
secret is ever written in this repository (secret scanners stay quiet). Each carries a random
alphanumeric ``tail``: the distinctive bytes a test searches the database for."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class Fake:
    kind: str
    text: str
    tail: str


def _tail(n: int = 16) -> str:
    """n random letters and digits, at least one of each (``Fk`` + hex + a digit)."""
    raw = ("Fk" + uuid.uuid4().hex + uuid.uuid4().hex)[: n - 1]
    return raw + "7"


def fakes() -> list[Fake]:
    """One fresh fake secret of each kind, in text the way people paste them."""
    t = {k: _tail() for k in range(40)}  # each kind its own tail
    up = {k: v.upper() for k, v in t.items()}
    pem_open = "-----BEGIN " + "RSA PRIVATE" + " KEY-----"
    pem_close = "-----END " + "RSA PRIVATE" + " KEY-----"
    items = [
        ("aws_access_key_id", "key id " + "AK" + "IA" + up[0], up[0]),
        ("aws_secret_key", "aws_secret_" + "access_key = " + t[1] + "x" * 24, t[1]),
        ("github_token", "token " + "gh" + "p_" + t[2] + "a" * 20, t[2]),
        ("github_token", "gith" + "ub_pat_" + t[3] + "_" + "b" * 20, t[3]),
        ("gitlab_token", "glp" + "at-" + t[4] + "c" * 6, t[4]),
        ("bearer_token", "send Bea" + "rer " + t[5] + "d" * 8, t[5]),
        ("api_key", "openai s" + "k-proj-" + t[6] + "e" * 8, t[6]),
        ("stripe_key", "stripe " + "sk_" + "live_" + t[7], t[7]),
        ("google_api_key", "maps " + "AI" + "za" + (t[8] + "f" * 35)[:35], t[8]),
        ("slack_token", "slack " + "xo" + "xb-1234-" + t[9], t[9]),
        ("slack_token", "socket " + "xa" + "pp-1-" + t[10], t[10]),
        ("slack_webhook", "hook https://hooks.sl" + "ack.com/services/T0/B0/" + t[11], t[11]),
        ("npm_token", "npm " + "np" + "m_" + (t[12] + "g" * 36)[:36], t[12]),
        ("telegram_bot_token", "bot 123456789:" + "AA" + (t[13] + "h" * 33)[:33], t[13]),
        ("jwt", "jwt " + "ey" + "J" + t[14] + ".ey" + "J" + t[15] + "." + t[16], t[14]),
        ("private_key", pem_open + "\nMII" + t[17] + "\n" + pem_close, t[17]),
        ("url_credentials", "db postgres://app:" + t[18] + "@db.internal:5432/app", t[18]),
        ("auth_header", "curl -H 'Authori" + "zation: Basic " + t[19] + "'", t[19]),
        ("auth_header", "X-Api" + "-Key: " + t[20], t[20]),
        ("auth_header", "Private" + "-Token: " + t[21], t[21]),
        ("cookie", "Coo" + "kie: session=" + t[22] + "; theme=dark", t[22]),
        ("secret_assignment", "export OPENAI" + "_API_KEY=" + t[23], t[23]),
        ("secret_assignment", "DB_PASS" + 'WORD="' + t[24] + '"', t[24]),
        ("secret_assignment", "client_sec" + "ret: " + t[25], t[25]),
        ("private", "keep <private>my " + t[26] + " note</private> this", t[26]),
        ("secret_assignment", "DB_PA" + "SS=" + t[27], t[27]),
        ("secret_assignment", "SECRET_KEY" + "_BASE = " + t[28], t[28]),
        ("secret_assignment", "PGPASS" + "WORD=" + t[29] + " psql -h db app", t[29]),
        ("secret_assignment", "export MYSQL" + "_PWD='" + t[30] + "'", t[30]),
        ("mysql_password", "mysql -u root -p" + t[31] + " -h db", t[31]),
        ("mysql_password", "mysqldump --user=app -p'" + t[32] + "' app > dump.sql", t[32]),
        ("mysql_password", 'mysql -u root -p"two ' + t[33] + '" db', t[33]),  # quoted, a space
        ("mysql_password", "MySQL -u root -p" + t[34], t[34]),
        # walkthrough 35: what tools' command lines and people's sentences hold
        ("cli_password", "curl -u admin:" + t[35] + " https://api.internal/x", t[35]),
        ("cli_password", "docker login -u bob -p " + t[36] + " registry.io", t[36]),
        ("cli_password", "sshpass -p " + t[37] + " ssh deploy@host", t[37]),
        ("cli_password", "./manage --pass" + "word " + t[38] + " --verbose", t[38]),
        ("password_phrase", "fyi my pass" + "word is " + t[39], t[39]),
        ("url_credentials", "postgresql://u:p@" + t[0].lower() + "@db/app", t[0].lower()),
    ]
    return [Fake(kind, text, tail) for kind, text, tail in items]


def planted_text() -> tuple[str, list[str]]:
    """One text with a fake secret of each kind on its own line, and their tails."""
    fs = fakes()
    return "notes:\n" + "\n".join(f.text for f in fs), [f.tail for f in fs]
