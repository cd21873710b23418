"""The credential rules, as data: one :class:`Rule` per kind, each with a positive and a
negative example generated at run time from its shape (never a real credential), and the
shape language the examples are written in. ``contracts.redaction`` applies them.

Two tiers. *Definite* rules match provider-shaped credentials (a fixed prefix, a length, an
alphabet). *Candidate* rules match a value assigned to a name that says secret (``.env``,
shell, YAML, JSON, TOML, HTTP headers, command-line flags); the redactor redacts those only
when the value looks random enough.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

Tier = Literal["definite", "candidate"]

MARKER_PREFIX: Final = "[redacted:"


def marker(kind: str) -> str:
    """The text that replaces a credential: its kind only, never anything of its value."""
    return f"{MARKER_PREFIX}{kind}]"


# -- shapes: examples generated at run time --------------------------------------------------

# Alphabets of the shape language used by the examples: ``<A:36>`` is 36 characters of "A".
ALPHABETS: Final[Mapping[str, str]] = {
    "A": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",  # alphanumeric
    "L": "abcdefghijklmnopqrstuvwxyz0123456789",  # lowercase alphanumeric
    "U": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",  # upper base32 (AWS key ids)
    "C": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",  # uppercase alphanumeric
    "H": "0123456789abcdef",  # lowercase hex
    "D": "0123456789",
    "W": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",  # base64url
    "B": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",  # base64
    "a": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",  # letters
    "b": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",  # bech32
    "K": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",  # bech32, upper case
}
_SHAPE_TOKEN: Final = re.compile(r"<([A-Za-z]):(\d+)>")
_SYSTEM: Final = random.SystemRandom()  # the OS's randomness, as ``secrets`` uses


def generate(shape: str, rng: random.Random | None = None) -> str:
    """``shape`` with each ``<X:n>`` replaced by n random characters of alphabet X (a shape
    that needs a digit, such as a candidate's example, spells one out)."""
    pick = (rng or _SYSTEM).choice
    return _SHAPE_TOKEN.sub(
        lambda m: "".join(pick(ALPHABETS[m[1]]) for _ in range(int(m[2]))), shape
    )


@dataclass(frozen=True, slots=True)
class Example:
    """Text around a credential: ``before + generate(secret) + after``. The test checks the
    generated credential is gone and ``before``/``after`` are kept."""

    before: str
    secret: str  # a shape (see ``generate``)
    after: str = ""


# -- the rules -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of credential. ``pattern``'s group ``secret`` (else the whole match) is what
    is replaced. ``keywords`` (lowercase) gate a rule whose pattern is case-insensitive or
    starts with no literal: it runs only when one occurs in the lowered text. A token-shaped
    rule (its credential holds a run of 16 of ``[A-Za-z0-9_-]``) is gated by ``prefixes``
    instead, looked for only in text that holds such a run."""

    kind: str
    tier: Tier
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    example: Example
    negative: str  # a shape: generated, then must come out unchanged
    min_entropy: float = 0.0  # bits per character of the value (candidate tier)
    # Candidate tier: the whole name (read back to its start, up to the secret word and its
    # tail) must match this, when set (``key`` alone says nothing; ``api_key`` does).
    name: re.Pattern[str] | None = None
    # Case-sensitive literals one of which a token-shaped rule's credential begins with.
    prefixes: tuple[str, ...] = ()
    # A definite match must not continue a word (checked here rather than with a leading
    # \b or look-behind, which would cost the pattern its fast literal-prefix scan).
    boundary: bool = True
    # Candidate tier: a UUID is a credential too (Heroku's API keys, Vault's AppRole
    # secret_id, old npm tokens); not for ``token``, where a UUID is as often an id.
    uuid_ok: bool = False
    # A table's rows: the match's group ``secret`` is a block of lines, and each match of
    # ``rows`` in it (groups ``name`` and ``secret``) is one value, redacted when its name
    # matches ``name`` (if set) and, for a candidate, the value looks random.
    rows: re.Pattern[str] | None = None


def _r(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_I: Final = re.IGNORECASE
# A value that ends where a token ends: no more of the token's alphabet follows.
_END_W: Final = r"(?![A-Za-z0-9_-])"
_END_A: Final = r"(?![A-Za-z0-9])"
_END_B: Final = r"(?![A-Za-z0-9+/])"
# Where a token may start: not inside a run of token characters (a JSON escape's letter
# aside). Only where a pattern's own characters could begin it again inside one long run
# (``eyJeyJeyJ...``), which would scan that run once per occurrence.
_RUN_START: Final = r"(?:(?<![A-Za-z0-9_-])|(?<=\\[nrt]))"

# The characters of a name (a key, a variable, a header), for the candidate tier.
_NAME_CHARS: Final = r"[A-Za-z0-9_.-]"
# The value of an assignment, as the surrounding syntax delimits it: a quoted value runs to
# its closing quote on the same line (``"p@ss, w0rd"``, JSON's ``\"...\"``); an unquoted one
# stops at whitespace, quotes, backslashes (a JSON escape) and brackets, and at a ``,`` or
# ``;`` that ends it (one followed by whitespace, its end, or another ``name=``: a
# connection string's ``Password=...;Database=...``) but not at one inside it
# (``DB_PASSWORD=p@ss,w0rd;x9``).
_V_CHAR: Final = r"[^\s\"'\\`,;{}()<>\[\]]"
_VALUE: Final = (
    r"(?P<secret>(?<=\")[^\"\\\x00-\x1f]{8,512}+(?=\\*+\")"
    r"|(?<=')[^'\\\x00-\x1f]{8,512}+(?=\\*+')"
    rf"|(?:{_V_CHAR}|[,;](?={_V_CHAR})(?![A-Za-z_][A-Za-z0-9_.-]{{0,64}}+=)){{8,512}})"
)
# `NAME=value`, `NAME: value`, `"name": "value"`, `\"name\": \"value\"` (JSON inside a JSON
# string, nested as deep as it goes: `\\\"name\\\"`), `name = 'value'` (TOML),
# `--name value`, `--name=value`, once-URL-encoded `=`.
_ASSIGN: Final = (
    r"(?:\\*+[\"'])?(?P<sep>[ \t]*+(?:=|:|%3[dD]|%3[aA])|[ \t]++(?=[^\s=:]))"
    r"[ \t]*+(?:\\*+[\"'])?[ \t]*+"
)


def _candidate(word: str) -> re.Pattern[str]:
    # Starts at one literal word, the secret word of the name: sre scans for a literal
    # prefix fast even case-insensitively, while an alternation of names measured ten
    # times slower. The rest of the name before the word is read back in ``_accept``.
    return re.compile(word + _NAME_CHARS + r"{0,64}+" + _ASSIGN + _VALUE, re.IGNORECASE)


def candidate_pattern(word: str) -> re.Pattern[str]:
    """The pattern of a candidate rule whose name's secret word is ``word``."""
    return _candidate(word)


# What ``_candidate``'s assignment looks like inside a JSON document (a string's ``"``
# written ``\"``, ``\`` as ``\\``, a tab as ``\t``, a backspace as ``\b``); a document
# holding ``\u`` or ``\/`` escapes is not gated by it (``Redactor.might_hold``). A raw
# ``"`` ends a JSON string, so a payload's own ``"key": value`` is never taken for one.
_J_QUOTE: Final = r"(?:(?:\\\\)*+(?:\\\"|'))"
_J_SPACE: Final = r"(?:[ ]|\\t)"
_J_VALUE: Final = r"(?:[^\s\"'\\`{}()<>\[\]]|\\b)"
# A quoted value's character as JSON writes it (a ``"`` inside ``'...'`` is ``\"``).
_J_QVALUE: Final = r"(?:[^\"\\\x00-\x1f]|\\\")"


def candidate_gate(word: str) -> re.Pattern[str]:
    """A superset of ``_candidate(word)`` over the JSON-escaped image of a string: it
    matches at every occurrence of ``word`` that ``_candidate(word)`` could match at in the
    string (the match itself is the word; the lookahead's group ``name`` is the rest of the
    name, group ``flag`` is set for the ``--name value`` form). Not bounded to the 512
    characters of a value: eight show it is one. Every run possessive, as in ``_ASSIGN``:
    a quote or a space that one part would give back could never start the next, and two
    runs of spaces side by side that share them out cost quadratic time on hostile text."""
    return re.compile(
        word
        + rf"(?=(?P<name>{_NAME_CHARS}{{0,64}}+){_J_QUOTE}?+"
        + rf"(?:{_J_SPACE}*+(?:=|:|%3[dDaA])|(?P<flag>{_J_SPACE}++))"
        + rf"{_J_SPACE}*+(?:{_J_QUOTE}{_J_QVALUE}{{8}}|{_J_QUOTE}?+{_J_SPACE}*+{_J_VALUE}{{8}}))",
        re.IGNORECASE,
    )


RULES: Final[tuple[Rule, ...]] = (
    # -- definite: provider-shaped -----------------------------------------------------------
    Rule(
        "private-key",
        "definite",
        # A PEM or OpenSSH block, across real or JSON-escaped (\n) line breaks; a block cut
        # off before its END line (a truncated output) is redacted to the end of its body.
        _r(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:[^-]|-(?!----)){0,8192}+-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\[rn])*+)"
        ),
        ("-----begin",),
        Example(
            "key file:\n",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n<B:70>\n<B:70>\n<B:20>==\n"
            "-----END OPENSSH PRIVATE KEY-----",
            "\ndone",
        ),
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE<B:40>\n"
        "-----END PUBLIC KEY-----",
    ),
    Rule(
        "aws-secret-access-key",
        "definite",
        # Named (aws_secret_access_key = ...), or the first 40-character base64 run within
        # 100 characters after an access key id (the console's credentials CSV: "AKIA...,
        # <secret>"; the id's own rule comes next). A secret mixes cases: a hex digest
        # (a commit id) after a key id is not one.
        _r(
            r"(?:aws.{0,24}?(?:secret|private).{0,24}?[=:\"' ]\s*[\"']?"
            r"|(?-i:AKIA|ASIA)(?-i:[A-Z2-7]{16})(?![A-Za-z0-9])[\s\S]{1,100}?)"
            r"(?<![A-Za-z0-9+/])(?-i:(?=[A-Za-z0-9+/]{0,39}[A-Z]))"
            r"(?P<secret>[A-Za-z0-9+/]{40})" + _END_B,
            _I,
        ),
        ("aws",),
        Example("aws_secret_access_key = ", "<B:40>"),
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        prefixes=("AKIA", "ASIA"),
    ),
    Rule(
        "aws-access-key-id",
        "definite",
        _r(r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[A-Z2-7]{16}(?![A-Z0-9])"),
        (),
        Example("AWS_ACCESS_KEY_ID=", "AKIA<U:16>"),
        "the documented one is AKIAIOSFODNN7EXAMPLE; Asia region",
        prefixes=("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA"),
    ),
    Rule(
        "github-token",
        "definite",
        _r(r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,251}+" + _END_A),
        (),
        Example("export GITHUB_TOKEN=", "ghp_<A:36>"),
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx is a placeholder",
        prefixes=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    Rule(
        "github-fine-grained-token",
        "definite",
        _r(r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}" + _END_A),
        (),
        Example("token: ", "github_pat_<A:22>_<A:59>"),
        "github_pat_ is the prefix of a fine-grained token",
        prefixes=("github_pat_",),
    ),
    Rule(
        "gitlab-token",
        "definite",
        _r(r"gl(?:pat|dt|ptt|rt|cbt|soat|ft|imt|agent)-[A-Za-z0-9_-]{20,64}+" + _END_W),
        (),
        Example("git clone https://oauth2:", "glpat-<W:20>", "@gitlab.example.com/x.git"),
        "glpat-<token> is what the docs show",
        prefixes=(
            "glpat-",
            "gldt-",
            "glptt-",
            "glrt-",
            "glcbt-",
            "glsoat-",
            "glft-",
            "glimt-",
            "glagent-",
        ),
    ),
    Rule(
        "slack-token",
        "definite",
        _r(r"xox[abposre]-(?:[0-9]{6,32}+-){1,3}[A-Za-z0-9-]{8,128}+" + _END_A),
        (),
        Example("SLACK_BOT_TOKEN=", "xoxb-<D:12>-<D:13>-<A:24>"),
        "xoxb-your-token-here",
        prefixes=("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-"),
    ),
    Rule(
        "slack-webhook",
        "definite",
        _r(
            r"https://hooks\.slack\.com/(?:services|workflows)/T[A-Z0-9]{6,}/[AB][A-Z0-9]{6,}/"
            r"[A-Za-z0-9]{20,}"
        ),
        ("hooks.slack.com",),
        Example("curl -X POST ", "https://hooks.slack.com/services/T<C:8>/B<C:10>/<A:24>"),
        "see https://hooks.slack.com/services for the docs",
    ),
    Rule(
        "stripe-key",
        "definite",
        _r(r"(?:sk|rk)_live_[A-Za-z0-9]{24,247}+" + _END_A),
        (),
        Example("STRIPE_SECRET_KEY=", "sk_live_<A:24>"),
        "sk_test_ keys are for testing; pk_live_ keys are public",
        prefixes=("sk_live_", "rk_live_"),
    ),
    Rule(
        "anthropic-api-key",
        "definite",
        _r(r"sk-ant-(?:api|admin|oat|sid)\d{0,2}-[A-Za-z0-9_-]{32,200}+" + _END_W),
        (),
        Example("ANTHROPIC_API_KEY=", "sk-ant-api03-<W:93>AA"),
        "ANTHROPIC_API_KEY=sk-ant-xxxxxxxx",
        prefixes=("sk-ant-",),
    ),
    Rule(
        "openai-api-key",
        "definite",
        _r(
            r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,250}+"
            r"|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48})" + _END_W
        ),
        (),
        Example("export OPENAI_API_KEY=", "sk-proj-<W:120>"),
        "export OPENAI_API_KEY=sk-xxxx and a task-list",
        prefixes=("sk-",),
    ),
    Rule(
        "google-api-key",
        "definite",
        _r(r"AIza[0-9A-Za-z_-]{35}" + _END_W),
        (),
        Example("GEMINI_API_KEY=", "AIza<W:35>"),
        "AIzaSy is how a Google key begins",
        prefixes=("AIza",),
    ),
    Rule(
        "google-oauth-secret",
        "definite",
        _r(r"GOCSPX-[A-Za-z0-9_-]{28}" + _END_W),
        (),
        Example('"client_secret": "', "GOCSPX-<W:28>", '"'),
        "GOCSPX- begins a client secret",
        prefixes=("GOCSPX-",),
    ),
    Rule(
        "huggingface-token",
        "definite",
        _r(r"hf_[A-Za-z0-9]{34,40}+" + _END_A),
        (),
        Example("HF_TOKEN=", "hf_<a:34>"),
        "hf_hub_download(repo_id='x')",
        prefixes=("hf_",),
    ),
    Rule(
        "npm-token",
        "definite",
        _r(r"npm_[A-Za-z0-9]{36}" + _END_A),
        (),
        Example("//registry/:_authToken=", "npm_<A:36>"),
        "npm_config_cache=/tmp/npm",
        prefixes=("npm_",),
    ),
    Rule(
        "pypi-token",
        "definite",
        _r(r"pypi-AgE[A-Za-z0-9_-]{50,300}+"),
        (),
        Example("password = ", "pypi-AgEIcHlwaS5vcmc<W:70>"),
        "pypi-simple is a package",
        prefixes=("pypi-AgE",),
    ),
    Rule(
        "sendgrid-api-key",
        "definite",
        _r(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _END_W),
        (),
        Example("SENDGRID_API_KEY=", "SG.<W:22>.<W:43>"),
        "SG.example is not a key",
        prefixes=("SG.",),
    ),
    Rule(
        "twilio-api-key",
        "definite",
        _r(r"SK[0-9a-f]{32}" + _END_A),
        (),
        Example("TWILIO_API_KEY=", "SK<H:32>"),
        "SKU 12345 and the account sid AC<H:32>",
        prefixes=("SK",),
    ),
    Rule(
        "azure-connection-string",
        "definite",
        _r(
            r"(?:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<secret>"
            r"[A-Za-z0-9+/%]{20,}+={0,2})",
        ),
        ("accountkey=", "sharedaccess"),
        Example(
            "DefaultEndpointsProtocol=https;AccountName=store1;AccountKey=",
            "<B:86>==",
            ";EndpointSuffix=core.windows.net",
        ),
        "DefaultEndpointsProtocol=https;AccountName=store1;AccountKey=<key>",
    ),
    Rule(
        "databricks-token",
        "definite",
        _r(r"dapi[0-9a-f]{32}(?:-\d)?" + _END_A),
        (),
        Example("DATABRICKS_TOKEN=", "dapi<H:32>"),
        "dapi is the prefix",
        prefixes=("dapi",),
    ),
    Rule(
        "digitalocean-token",
        "definite",
        _r(r"do[por]_v1_[0-9a-f]{64}" + _END_A),
        (),
        Example("DIGITALOCEAN_TOKEN=", "dop_v1_<H:64>"),
        "dop_v1_ tokens",
        prefixes=("dop_v1_", "doo_v1_", "dor_v1_"),
    ),
    Rule(
        "shopify-token",
        "definite",
        _r(r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}" + _END_A),
        (),
        Example("X-Shopify-Access-Token: ", "shpat_<H:32>"),
        "shpat_ tokens",
        prefixes=("shpat_", "shpca_", "shppa_", "shpss_"),
    ),
    Rule(
        "atlassian-api-token",
        "definite",
        _r(r"AT(?:ATT|CTT)3[A-Za-z0-9_=-]{150,250}+" + _END_W),
        (),
        Example("JIRA_API_TOKEN=", "ATATT3xFfGF0<W:170>=<H:8>"),
        "ATATT3 begins a token",
        prefixes=("ATATT3", "ATCTT3"),
    ),
    Rule(
        "discord-bot-token",
        "definite",
        _r(r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + _END_W),
        ("discord",),
        Example("BOT_TOKEN=", "MT<W:24>.<W:6>.<W:38>"),
        "discord.py version 2.3.2",
        # The first part is the bot's user id (17 to 20 digits) in base64: its first two
        # characters are one of these, whatever the name it is assigned to.
        prefixes=("MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"),
    ),
    Rule(
        "discord-webhook",
        "definite",
        _r(
            r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{1,24}+/[A-Za-z0-9_-]{60,}+"
        ),
        ("discord",),
        Example("webhook ", "https://discord.com/api/webhooks/<D:18>/<W:68>"),
        "https://discord.com/api/webhooks/<id>/<token>",
    ),
    Rule(
        "telegram-bot-token",
        "definite",
        # Not inside a longer word, but for its API URL's ``/bot<token>/``.
        _r(r"(?:(?<![A-Za-z0-9_])|(?<=/bot))[0-9]{8,10}:AA[A-Za-z0-9_-]{33}" + _END_W),
        (),
        Example("curl https://api.telegram.org/bot", "<D:10>:AA<W:33>", "/getMe"),
        "at 12:AA the build ran",
        prefixes=(":AA",),
        boundary=False,
    ),
    Rule(
        "jwt",
        "definite",
        _r(
            _RUN_START
            + r"eyJ[A-Za-z0-9_-]{8,4096}+\.eyJ[A-Za-z0-9_-]{8,4096}+\.[A-Za-z0-9_-]{16,4096}+"
            + _END_W
        ),
        (),
        Example("token=", "eyJhbGciOiJIUzI1NiJ9.eyJ<W:60>.<W:43>"),
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 is just a header",
        prefixes=("eyJ",),
    ),
    Rule(
        "password-in-url",
        "definite",
        # scheme://user:password@host (redis://:password@host: no user), also once
        # URL-encoded (%3A, %40)
        _r(
            r"(?:://|%3[Aa]%2[Ff]%2[Ff])[^\s:/@\"'\\<>%]{0,128}(?::|%3[Aa])"
            # to the last @ before the host (a raw @ in a password, or %40, is part of it);
            # else a password holding a raw / (pasted unencoded) up to the one @ after it,
            # but not a port and a path (``host:8443/@scope``) nor a query (``?to=a@b``)
            r"(?P<secret>[^\s/\"'\\<>]{1,256}(?=(?:@|%40)[A-Za-z0-9\[])"
            r"|(?![0-9]*/)[^\s@?#&=\"'\\<>]{1,256}(?=@[A-Za-z0-9\[]))(?:@|%40)",
        ),
        ("://", "%3a%2f%2f"),
        Example("DATABASE_URL=postgres://app:", "<A:20>", "@db.internal:5432/app"),
        "postgres://user:password@localhost/db and https://<user>:<pass>@host",
        boundary=False,
    ),
    Rule(
        "bearer-token",
        "definite",
        _r(r"bearer\s++(?P<secret>[A-Za-z0-9._~+/-]{16,}+=*)" + _END_B, _I),
        ("bearer",),
        Example("curl -H 'Authorization: Bearer ", "<W:40>", "' https://api.example.net"),
        "the bearer token goes in the Authorization header: Bearer $TOKEN",
    ),
    Rule(
        "basic-auth",
        "definite",
        # Authorization: Basic ..., also as a JSON or YAML map's key ("Authorization": "Basic ..."),
        # JSON inside a JSON string too
        _r(
            r"authorization(?:\\*+[\"'])?\s*+[:=]\s*+(?:\\*+[\"'])?\s*+basic\s++"
            r"(?P<secret>[A-Za-z0-9+/]{8,}+=*)",
            _I,
        ),
        ("authorization",),
        Example("> Authorization: Basic ", "<B:32>", "\n> Accept: */*"),
        "basic auth needs Authorization: Basic <credentials>",
    ),
    Rule(
        "linear-api-key",
        "definite",
        _r(r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + _END_A),
        (),
        Example("LINEAR_API_KEY=", "lin_api_<A:40>"),
        "lin_api_ is the prefix",
        prefixes=("lin_api_", "lin_oauth_"),
    ),
    Rule(
        "grafana-token",
        "definite",
        _r(r"gl(?:sa|c)_[A-Za-z0-9+/=_]{32,400}+" + _END_A),
        (),
        Example("GRAFANA_TOKEN=", "glsa_<A:32>_<H:8>"),
        "glc_ is a prefix",
        prefixes=("glsa_", "glc_"),
    ),
    Rule(
        "vault-token",
        "definite",
        _r(r"hv[sbr]\.[A-Za-z0-9_-]{24,200}+" + _END_W),
        (),
        Example("VAULT_TOKEN=", "hvs.<W:24>"),
        "hvs.example",
        prefixes=("hvs.", "hvb.", "hvr."),
    ),
    Rule(
        "age-secret-key",
        "definite",
        _r(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _END_A),
        (),
        Example("# secret: ", "AGE-SECRET-KEY-1<K:58>"),
        "age1<b:58> is a public recipient",
        prefixes=("AGE-SECRET-KEY-1",),
    ),
    Rule(
        "groq-api-key",
        "definite",
        _r(r"gsk_[A-Za-z0-9]{52}" + _END_A),
        (),
        Example("GROQ_API_KEY=", "gsk_<A:52>"),
        "gsk_ is the prefix",
        prefixes=("gsk_",),
    ),
    Rule(
        "xai-api-key",
        "definite",
        _r(r"xai-[A-Za-z0-9]{80}" + _END_A),
        (),
        Example("XAI_API_KEY=", "xai-<A:80>"),
        "xai-sdk is a package",
        prefixes=("xai-",),
    ),
    Rule(
        "replicate-token",
        "definite",
        _r(r"r8_[A-Za-z0-9]{37}" + _END_A),
        (),
        Example("REPLICATE_API_TOKEN=", "r8_<A:37>"),
        "r8_ is the prefix",
        prefixes=("r8_",),
    ),
    Rule(
        "postman-api-key",
        "definite",
        _r(r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _END_A),
        (),
        Example("POSTMAN_API_KEY=", "PMAK-<H:24>-<H:34>"),
        "PMAK- is the prefix",
        prefixes=("PMAK-",),
    ),
    Rule(
        "new-relic-key",
        "definite",
        _r(r"NR(?:AK|AA|II|JS)-[A-Z0-9]{27}" + _END_A),
        (),
        Example("NEW_RELIC_API_KEY=", "NRAK-<C:27>"),
        "NRAK- is the prefix",
        prefixes=("NRAK-", "NRAA-", "NRII-", "NRJS-"),
    ),
    Rule(
        "square-token",
        "definite",
        _r(r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}+" + _END_W),
        (),
        Example("SQUARE_TOKEN=", "sq0atp-<W:22>"),
        "sq0atp- is the prefix",
        prefixes=("sq0atp-", "sq0csp-"),
    ),
    Rule(
        "mailchimp-api-key",
        "definite",
        _r(r"[0-9a-f]{32}-us[0-9]{1,2}" + _END_A),
        (),
        Example("MAILCHIMP_KEY=", "<H:32>-us21"),
        "the region is us-east-1",
        prefixes=("-us",),
    ),
    Rule(
        "supabase-token",
        "definite",
        _r(r"sbp_[a-f0-9]{40}" + _END_A),
        (),
        Example("SUPABASE_ACCESS_TOKEN=", "sbp_<H:40>"),
        "sbp_ is the prefix",
        prefixes=("sbp_",),
    ),
    Rule(
        "private-key-base64",
        "definite",
        # A PEM private key block in base64 (a kubeconfig's client-key-data, a Kubernetes
        # secret's tls.key, a CI variable): its first line encodes to a fixed prefix.
        _r(
            r"LS0tLS1CRUdJTi(?:BQUklWQVRF|BSU0EgUFJJVkFURS|BFQyBQUklWQVRF|BPUEVOU1NIIFBSSVZBVE"
            r"|BFTkNSWVBURUQgUFJJVkFURS|BEU0EgUFJJVkFURS)[A-Za-z0-9+/]{16,}+={0,2}"
        ),
        (),
        Example("    client-key-data: ", "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo<B:200>=="),
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t is a certificate's header",
        prefixes=("LS0tLS1CRUdJTi",),
    ),
    Rule(
        "putty-private-key",
        "definite",
        # A PuTTY .ppk file's private lines (base64), across real or JSON-escaped breaks, up
        # to the next "Name:" line (Private-MAC).
        _r(
            r"Private-Lines:[ \t]*+\d{1,4}+(?:\r?\n|(?:\\r)?\\n)"
            r"(?P<secret>[A-Za-z0-9+/=]{1,128}+"
            r"(?:(?:\r?\n|(?:\\r)?\\n)(?![A-Za-z-]{1,40}:)[A-Za-z0-9+/=]{1,128}+)*+)"
        ),
        ("private-lines",),
        Example(
            "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 2\n",
            "<B:64>\n<B:20>",
            "\nPrivate-MAC: 00",
        ),
        "PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 2\n<B:64>\n",
    ),
    Rule(
        "gcp-oauth-token",
        "definite",
        _r(r"ya29\.[A-Za-z0-9_-]{30,2048}+" + _END_W),
        (),
        Example("gcloud auth print-access-token\n", "ya29.<W:120>", "\n"),
        "ya29.example is how an access token begins",
        prefixes=("ya29.",),
    ),
    Rule(
        "azure-client-secret",
        "definite",
        # An Entra ID (Azure AD) application's client secret: three characters, a digit,
        # "Q~", then 31 to 34 more.
        _r(r"[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}+(?![A-Za-z0-9_~.-])"),
        ("q~",),
        Example("AZURE_CLIENT_SECRET=", "<A:3>8Q~<W:34>"),
        "press Q~ then 8Q~ in vim",
    ),
    Rule(
        "azure-sas-signature",
        "definite",
        # The signature of a shared access signature URL (?sv=...&sig=...), URL-encoded.
        _r(r"(?:[?&]|&amp;)sig=(?P<secret>(?:[A-Za-z0-9+/]|%2[BbFf]){30,}+(?:=|%3[Dd]){0,2})"),
        ("sig=",),
        Example(
            "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sr=b&sp=r&sig=",
            "<A:30>%2B<A:10>%3D",
            "&se=2030-01-01",
        ),
        "the &sig= parameter holds the signature",
        boundary=False,
    ),
    Rule(
        "bitbucket-app-password",
        "definite",
        _r(r"ATBB[A-Za-z0-9_=.-]{28,96}+" + _END_W),
        (),
        Example("BITBUCKET_APP_PASSWORD=", "ATBB<A:32>"),
        "ATBB is the prefix",
        prefixes=("ATBB",),
    ),
    Rule(
        "stripe-webhook-secret",
        "definite",
        _r(r"whsec_[A-Za-z0-9+/=]{32,128}+" + _END_A),
        (),
        Example("Your webhook signing secret is ", "whsec_<A:32>", " (^C to quit)"),
        "whsec_ begins a webhook secret",
        prefixes=("whsec_",),
    ),
    Rule(
        "npm-auth",
        "definite",
        # .npmrc's _authToken, _auth (base64 of user:password) and _password, whatever the
        # value's shape (an old token is a UUID).
        _r(
            r"(?<![A-Za-z0-9])_(?:authToken|auth|password)=[\"']?"
            r"(?P<secret>[^\s\"'\\]{8,512}+)"
        ),
        # npm writes them without spaces; each keyword costs every event a substring test
        ("_auth", "_password="),
        Example("//registry.example.org/:_authToken=", "<H:8>-<H:4>-<H:4>-<H:4>-<H:12>"),
        "//registry.example.org/:_authToken=${NPM_TOKEN}",
        boundary=False,
    ),
    Rule(
        "docker-config-auth",
        "definite",
        # ~/.docker/config.json (and podman's auth.json): "auths" maps a registry to the
        # base64 of user:password ("auth") or a token ("identitytoken").
        _r(
            r"\\?\"(?:auth|identitytoken|registrytoken)\\?\"[ \t]*+:[ \t]*+\\?\""
            r"(?P<secret>[A-Za-z0-9+/._-]{12,4096}+={0,2})"
        ),
        ("auths",),
        Example('{"auths": {"registry.example.org": {"auth": "', "<B:40>", '"}}}'),
        '{"auths": {"registry.example.org": {"auth": ""}}, "credsStore": "desktop"}',
    ),
    Rule(
        "docker-token",
        "definite",
        _r(r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,64}+" + _END_W),
        (),
        Example("echo ", "dckr_pat_<W:27>", " | docker login -u me --password-stdin"),
        "dckr_pat_ begins a personal access token",
        prefixes=("dckr_pat_", "dckr_oat_"),
    ),
    Rule(
        "netrc-password",
        "candidate",
        # .netrc: machine <host> login <user> password <password>, on one line or several;
        # a candidate (prose can read "machine learning login page password reset").
        _r(
            r"machine(?:\s|\\[nrt])++[^\s\\]{1,256}+(?:\s|\\[nrt])++login(?:\s|\\[nrt])++"
            r"[^\s\\]{1,256}+(?:\s|\\[nrt])++password(?:\s|\\[nrt])++(?P<secret>[^\s\\]{1,256}+)"
        ),
        ("machine",),
        Example("machine api.example.com\n  login me\n  password ", "<A:12>3", "\n"),
        "machine learning login page password reset",
        min_entropy=2.5,
    ),
    Rule(
        "terraform-token",
        "definite",
        _r(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}+" + _END_W),
        (),
        Example('  token = "', "<A:14>.atlasv1.<A:67>", '"'),
        "atlasv1 is in a Terraform token",
        prefixes=("atlasv1.",),
    ),
    Rule(
        "mailgun-api-key",
        "definite",
        _r(r"key-[0-9a-f]{32}" + _END_A),
        (),
        Example("curl -s --user 'api:", "key-<H:32>", "' https://api.mailgun.example/v3"),
        "key-value store and key-0123",
        prefixes=("key-",),
    ),
    Rule(
        "sentry-token",
        "definite",
        _r(r"sntry[us]_[A-Za-z0-9_+/=-]{40,400}+" + _END_W),
        (),
        Example("SENTRY_AUTH_TOKEN=", "sntryu_<H:64>"),
        "sntrys_ begins an organization token",
        prefixes=("sntryu_", "sntrys_"),
    ),
    Rule(
        "firebase-cloud-messaging-key",
        "definite",
        _r(r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{130,160}+" + _END_W),
        (),
        Example("Authorization: key=", "AAAA<W:7>:APA91b<W:134>"),
        "APA91b begins a registration",
        prefixes=(":APA91b",),
    ),
    Rule(
        "docker-config-base64",
        "definite",
        # A Docker config.json in base64 (a Kubernetes secret's .dockerconfigjson): it
        # begins {"auths":, whose base64 is fixed.
        _r(r"eyJhdXRocyI6[A-Za-z0-9+/]{16,}+={0,2}"),
        (),
        Example("  .dockerconfigjson: ", "eyJhdXRocyI6eyJyZWdpc3RyeS5leGFtcGxlLm9yZyI6<B:80>"),
        "eyJhdXRocyI6 is how it begins",
        prefixes=("eyJhdXRocyI6",),
    ),
    Rule(
        "openrouter-api-key",
        "definite",
        _r(r"sk-or-v1-[0-9a-f]{64}" + _END_A),
        (),
        Example("OPENROUTER_API_KEY=", "sk-or-v1-<H:64>"),
        "export OPENROUTER_API_KEY=sk-or-v1-your-key-here",
        prefixes=("sk-or-v1-",),
    ),
    Rule(
        "openai-compatible-api-key",
        "definite",
        # sk- and 32 hex digits: DeepSeek's keys and other OpenAI-compatible APIs'.
        _r(r"sk-[0-9a-f]{32}" + _END_W),
        (),
        Example('client = OpenAI(api_key="', "sk-<H:32>", '", base_url=BASE)'),
        "sk-0123 and task-list",
        prefixes=("sk-",),
    ),
    Rule(
        "elevenlabs-api-key",
        "definite",
        _r(r"sk_[0-9a-f]{48}" + _END_A),
        (),
        Example("ELEVENLABS_API_KEY=", "sk_<H:48>"),
        "sk_ is the prefix",
        prefixes=("sk_",),
    ),
    Rule(
        "tavily-api-key",
        "definite",
        _r(r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,64}+" + _END_A),
        (),
        Example('TavilyClient(api_key="', "tvly-dev-<A:32>", '")'),
        'TavilyClient(api_key="tvly-YOUR_API_KEY")',
        prefixes=("tvly-",),
    ),
    Rule(
        "perplexity-api-key",
        "definite",
        _r(r"pplx-[A-Za-z0-9]{48}" + _END_A),
        (),
        Example("PERPLEXITY_API_KEY=", "pplx-<A:48>"),
        "pplx- is the prefix",
        prefixes=("pplx-",),
    ),
    Rule(
        "nvidia-api-key",
        "definite",
        _r(r"nvapi-[A-Za-z0-9_-]{64}" + _END_W),
        (),
        Example("NVIDIA_API_KEY=", "nvapi-<W:64>"),
        "nvapi- is the prefix",
        prefixes=("nvapi-",),
    ),
    Rule(
        "langsmith-api-key",
        "definite",
        _r(r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}" + _END_A),
        (),
        Example("LANGSMITH_API_KEY=", "lsv2_pt_<H:32>_<H:10>"),
        "lsv2_pt_ is the prefix",
        prefixes=("lsv2_pt_", "lsv2_sk_"),
    ),
    Rule(
        "langfuse-secret-key",
        "definite",
        _r(r"sk-lf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}" + _END_A),
        (),
        Example("LANGFUSE_SECRET_KEY=", "sk-lf-<H:8>-<H:4>-<H:4>-<H:4>-<H:12>"),
        "pk-lf-<H:8>-<H:4>-<H:4>-<H:4>-<H:12> is the public key",
        prefixes=("sk-lf-",),
    ),
    Rule(
        "firecrawl-api-key",
        "definite",
        _r(r"fc-[0-9a-f]{32}" + _END_A),
        (),
        Example("FIRECRAWL_API_KEY=", "fc-<H:32>"),
        "fc- is the prefix",
        prefixes=("fc-",),
    ),
    Rule(
        "kubernetes-secret-data",
        "definite",
        # ``kubectl get secret -o yaml``: every value under ``data:`` is a secret in base64,
        # whatever its name (a certificate aside); the keyword is the manifest's kind.
        _r(
            r"(?:^|\n|\\n)[ \t-]*+data:[ \t]*+(?P<secret>(?:(?:\r?\n|(?:\\r)?\\n)[ \t]++"
            r"[^\s:\\]{1,253}+:[ \t]++[A-Za-z0-9+/]{4,}+={0,2}[ \t]*+){1,500}+)"
        ),
        ("kind: secret",),
        Example(
            "apiVersion: v1\ndata:\n  ca.crt: LS0tLS1CRUdJTiBDRVJU\n  password: ",
            "<B:15>9<B:8>=",
            "\nkind: Secret\nmetadata:\n  name: db",
        ),
        "apiVersion: v1\ndata:\n  config.yaml: ${CONFIG}\nkind: Secret",
        name=re.compile(r"^(?!.*\.crt$)"),
        rows=_r(
            r"(?:\r?\n|(?:\\r)?\\n)[ \t]++(?P<name>[^\s:\\]{1,253}+):[ \t]++"
            r"(?P<secret>[A-Za-z0-9+/]{4,}+={0,2})"
        ),
    ),
    # -- candidate: a random-looking value assigned to a name that says secret ---------------
    Rule(
        "table-value",
        "candidate",
        # A value printed in a two-column table rather than assigned: ``vault read`` and
        # ``vault write`` (``Key  Value`` over ``---  -----``), PowerShell's ``Get-ChildItem
        # Env:`` (``Name  Value`` over ``----  -----``); a row whose name says secret.
        _r(
            r"(?:Key|Name)[ \t]{2,}+Value[ \t]*+(?:\r?\n|(?:\\r)?\\n)-{3,}+[ \t]{2,}+-{5,}+[ \t]*+"
            r"(?P<secret>(?:(?:\r?\n|(?:\\r)?\\n)(?:[^\r\n\\]|\\(?![rn]))++){1,500}+)"
        ),
        ("  -----",),
        Example(
            "$ vault write -f auth/approle/role/ci/secret-id\nKey                   Value\n"
            "---                   -----\nsecret_id             ",
            "<H:8>-<H:4>-<H:4>-<H:4>-<H:12>",
            "\nsecret_id_accessor    84896a0c-1347-aa90-a4f6-aca8b7558780"
            "\nsecret_id_ttl         0s",
        ),
        "Name                           Value\n----                           -----\n"
        "HOME                           C:\\Users\\me\nTOKEN_CACHE                    ~/.cache/x1\n"
        "API_KEY_FILE                   /etc/app/key9.txt\n"
        "SECRET_NAME                    app-secrets",
        min_entropy=3.0,
        name=re.compile(r"^(?!.*accessor)(?i:.*(?:pass|pwd|secret|token|key|credential|auth))"),
        uuid_ok=True,  # Vault's AppRole secret_id is a UUID
        rows=_r(
            r"(?:\r?\n|(?:\\r)?\\n)(?P<name>[A-Za-z0-9_.:-]{1,128}+)[ \t]{2,}+"
            r"(?P<secret>[^\s\\]{8,512}+)[ \t]*+(?=\r?\n|(?:\\r)?\\n|$)"
        ),
    ),
    Rule(
        "password",
        "candidate",
        _candidate("pass"),  # password, passwd, passphrase, DB_PASS, PGPASSWORD, --pass
        ("pass",),
        Example('DB_PASSWORD="', "<A:8>9<A:8>", '"'),
        "password: required (the password field is optional)",
        min_entropy=2.5,
        uuid_ok=True,
    ),
    Rule(
        "secret",
        "candidate",
        _candidate("secret"),
        ("secret",),
        Example("client_secret: ", "<A:30>7"),
        'secretName: app-secrets and "secret": "${CLIENT_SECRET}"',
        min_entropy=3.0,
        uuid_ok=True,
    ),
    Rule(
        "token",
        "candidate",
        _candidate("token"),
        ("token",),
        Example('{"access_token": "', "<W:30>4", '", "expires_in": 3600}'),
        "token count 123456789, max_tokens = 4096, token_type: bearer",
        min_entropy=3.0,
    ),
    Rule(
        "api-key",
        "candidate",
        _candidate("key"),
        ("key",),
        Example("X-Api-Key: ", "<A:31>5"),
        "api_key = YOUR_API_KEY; apiKey: process.env.API_KEY; private_key_path: ~/.ssh/id;"
        " primary_key = a1b2c3d4e5f6g7h8 (only some names say secret)",
        min_entropy=3.0,
        name=re.compile(
            r"(?:api|app|application|access|private|auth|signing|encryption|master|secret|client)"
            # or a URL's query parameter named key alone (?key=..., Google's and others')
            r"[_.-]?key|[?&#]key$",
            re.IGNORECASE,
        ),
        uuid_ok=True,
    ),
    Rule(
        "url-signature",
        "candidate",
        # A signed URL's signature as a query parameter (?sig=, &signature=, S3's
        # X-Amz-Signature=): only there, where it is the URL's credential.
        _candidate("sig"),
        # as a query parameter it is always followed by "=": a keyword each (as a word, sig
        # is in every "design" and "signal", each a gate's regex run)
        ("sig=", "signature="),
        Example("https://b.s3.example.com/o?X-Amz-Expires=60&X-Amz-Signature=", "<H:64>", "#x"),
        "signature: required; sig_figs=12345678 and the ?signature=none option",
        min_entropy=3.0,
        name=re.compile(r"[?&#](?:[A-Za-z0-9]+-)*sig(?:nature)?$", re.IGNORECASE),
    ),
    Rule(
        "credential",
        "candidate",
        _candidate("credential"),
        ("credential",),
        Example('"credentials": "', "<A:24>6", '"'),
        "credentials: ~/.aws/credentials and credential_helper = store",
        min_entropy=3.0,
        uuid_ok=True,
    ),
    Rule(
        "authorization",
        "candidate",
        # An Authorization header of another scheme than Bearer and Basic (their own rules
        # go first): GitHub's "token ...", "key=..." (Firebase), "SSWS ..." (Okta), or none.
        _r(
            r"authorization(?:\\*+[\"'])?[ \t]*+[:=][ \t]*+(?:\\*+[\"'])?[ \t]*+"
            r"(?:[A-Za-z][A-Za-z-]{0,23}+(?:[ \t]++|=))?(?P<secret>[A-Za-z0-9._~+/:=-]{16,512}+)",
            _I,
        ),
        ("authorization",),
        Example("-H 'Authorization: token ", "<A:36>1", "'"),
        "Authorization: token $GITHUB_TOKEN and authorization: required_for_all_routes",
        min_entropy=3.0,
    ),
    Rule(
        "command-line-password",
        "candidate",
        # A password given on a command line: mysql's -p<password>, sshpass -p, docker
        # login -p, curl -u user:password.
        _r(
            r"(?:mysql(?:dump|admin|import)?\b[^\n|;&]{0,160}?[ \t]-p"
            r"|sshpass[ \t]++-p[ \t]*+"
            r"|docker login\b[^\n|;&]{0,160}?[ \t]-p[ \t]++"
            r"|[ ](?:-u|--user)(?:[ \t]++|=)?[\"']?[^\s:\"']{1,128}+:)"
            r"[\"']?(?P<secret>[^\s\"'`;|&\\]{8,512}+)",
        ),
        # Each a literal every form holds, and rare in prose ("follow-up", "docker").
        ("mysql", "sshpass", "docker login", " -u", "--user"),
        Example("mysql -h db -u root -p", "<A:12>4<A:3>", " app < dump.sql"),
        "mysql -u root -p app and docker run -p 8080:80 and curl -u me: https://x.test",
        min_entropy=2.5,  # as the password rule's
    ),
    Rule(
        "cookie",
        "candidate",
        # A Cookie or Set-Cookie header (curl -v, a browser's request copied): from the
        # first cookie's value to the end of the line, every cookie and attribute of it.
        _r(
            r"cookie(?:\\*+[\"'])?[ \t]*+:[ \t]*+(?:\\*+[\"'])?[ \t]*+[^\s\"'\\;=]{1,64}+="
            r"(?P<secret>[^\n\r\"'\\]{8,4096}+)",
            _I,
        ),
        ("cookie",),
        Example("< Set-Cookie: sessionid=", "<W:40>1; Path=/; HttpOnly"),
        "cookies: 3 and the Cookie: header carries them",
        min_entropy=3.0,
    ),
)
