"""Credentials in event text: the rules, as data, and the one redactor that applies them.

The worker's writer runs it on every payload string before an event is stored or indexed,
and the importers run it before publishing, so both use this module (importers may import
only ``contracts`` and ``transport``). A found credential becomes ``[redacted:<kind>]``; the
words around it stay, so ``export OPENAI_API_KEY=sk-...`` is still found by its name.

Two tiers. *Definite* rules match provider-shaped credentials (a fixed prefix, a length, an
alphabet). *Candidate* rules match a value assigned to a name that says secret (``.env``,
shell, YAML, JSON, TOML, HTTP headers, command-line flags), redacted only when the value
looks random enough (Shannon entropy, a digit, not a placeholder or an identifier path).

Each rule has a positive example (text around a credential generated at run time from its
shape, never a real one) and a negative example that must come out unchanged; the tests
run both. Speed (the writer runs this on every string): a rule runs only when the text
holds what it needs, a lowercase keyword (names, ``bearer``, ``://``) or, for token-shaped
rules, a run of 16 token characters starting with one of its prefixes; most strings cost
one character-class scan, one ``lower()`` and a dozen substring tests.
"""

from __future__ import annotations

import dataclasses
import math
import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import quote, quote_plus, unquote

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


def generate(shape: str, rng: secrets.SystemRandom | None = None) -> str:
    """``shape`` with each ``<X:n>`` replaced by n random characters of alphabet X (a shape
    that needs a digit, such as a candidate's example, spells one out)."""
    pick = (rng or secrets.SystemRandom()).choice
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
# The value of an assignment: stops at quotes, backslashes (a JSON escape), whitespace and
# the punctuation that ends a value in each form.
_VALUE: Final = r"(?P<secret>[^\s\"'\\`,;{}()<>\[\]]{8,512})"
# `NAME=value`, `NAME: value`, `"name": "value"`, `\"name\": \"value\"` (JSON inside a JSON
# string), `name = 'value'` (TOML), `--name value`, `--name=value`, once-URL-encoded `=`.
_ASSIGN: Final = (
    r"(?:\\?[\"'])?(?P<sep>[ \t]*+(?:=|:|%3[dD]|%3[aA])|[ \t]++(?=[^\s=:]))"
    r"[ \t]*+(?:\\?[\"'])?[ \t]*+"
)


def _candidate(word: str) -> re.Pattern[str]:
    # Starts at one literal word, the secret word of the name: sre scans for a literal
    # prefix fast even case-insensitively, while an alternation of names measured ten
    # times slower. The rest of the name before the word is read back in ``_accept``.
    return re.compile(word + _NAME_CHARS + r"{0,64}+" + _ASSIGN + _VALUE, re.IGNORECASE)


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
        "aws-access-key-id",
        "definite",
        _r(r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[A-Z2-7]{16}(?![A-Z0-9])"),
        (),
        Example("AWS_ACCESS_KEY_ID=", "AKIA<U:16>"),
        "the documented one is AKIAIOSFODNN7EXAMPLE; Asia region",
        prefixes=("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA"),
    ),
    Rule(
        "aws-secret-access-key",
        "definite",
        _r(
            r"aws.{0,24}?(?:secret|private).{0,24}?[=:\"' ]\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9+/]{40})" + _END_B,
            _I,
        ),
        ("aws",),
        Example("aws_secret_access_key = ", "<B:40>"),
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
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
        _r(r"ATATT3[A-Za-z0-9_=-]{150,250}+" + _END_W),
        (),
        Example("JIRA_API_TOKEN=", "ATATT3xFfGF0<W:170>=<H:8>"),
        "ATATT3 begins a token",
        prefixes=("ATATT3",),
    ),
    Rule(
        "discord-bot-token",
        "definite",
        _r(r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + _END_W),
        ("discord",),
        Example("DISCORD_TOKEN=", "MT<W:24>.<W:6>.<W:38>"),
        "discord.py version 2.3.2",
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
        _r(r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}" + _END_W),
        (),
        Example("TELEGRAM_BOT_TOKEN=", "<D:10>:AA<W:33>"),
        "at 12:AA the build ran",
        prefixes=(":AA",),
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
        # scheme://user:password@host, also once URL-encoded (%3A, %40)
        _r(
            r"(?:://|%3[Aa]%2[Ff]%2[Ff])[^\s:/@\"'\\<>%]{1,128}(?::|%3[Aa])"
            r"(?P<secret>[^\s@/\"'\\<>]{1,256}?)(?:@|%40)(?=[A-Za-z0-9\[])",
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
        _r(r"authorization\s*+[:=]\s*+[\"']?basic\s++(?P<secret>[A-Za-z0-9+/]{8,}+=*)", _I),
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
    # -- candidate: a random-looking value assigned to a name that says secret ---------------
    Rule(
        "password",
        "candidate",
        _candidate("pass"),  # password, passwd, passphrase, DB_PASS, PGPASSWORD, --pass
        ("pass",),
        Example('DB_PASSWORD="', "<A:8>9<A:8>", '"'),
        "password: required (the password field is optional)",
        min_entropy=2.5,
    ),
    Rule(
        "secret",
        "candidate",
        _candidate("secret"),
        ("secret",),
        Example("client_secret: ", "<A:30>7"),
        'secretName: app-secrets and "secret": "${CLIENT_SECRET}"',
        min_entropy=3.0,
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
            r"(?:api|access|private|auth|signing|encryption|master|secret|client)[_.-]?key",
            re.IGNORECASE,
        ),
    ),
    Rule(
        "credential",
        "candidate",
        _candidate("credential"),
        ("credential",),
        Example('"credentials": "', "<A:24>6", '"'),
        "credentials: ~/.aws/credentials and credential_helper = store",
        min_entropy=3.0,
    ),
)


# -- what is never a credential ----------------------------------------------------------------

# Providers' documented example values.
DOCUMENTED_EXAMPLES: Final = frozenset(
    {
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AKIAI44QH8DHBEXAMPLE",
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        # jwt.io's example token
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    }
)
# Words that make a value a placeholder. None shorter than five letters: a random token
# of 40 characters holds a given four letters about once in 30,000 (``fake`` was found in
# generated bech32 keys), five or more far less often.
_PLACEHOLDER_WORDS: Final = (
    "xxxxx",
    "****",
    "....",
    "your_",
    "your-",
    "<",
    ">",
    "${",
    "$(",
    "{{",
    "example",
    "placeholder",
    "changeme",
    "redacted",
    "replace_me",
    "replace-me",
    "sample",
    "0000000000",
)
_PLACEHOLDER_VALUES: Final = frozenset(
    {"password", "pass", "secret", "token", "passwd", "admin", "root", "test", "none", "null"}
)
_UUID: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_DIGEST_PREFIXES: Final = (
    "sha1:",
    "sha256:",
    "sha384:",
    "sha512:",
    "sha1-",
    "sha256-",
    "sha384-",
    "sha512-",
    "md5:",
)
# A dotted/underscored identifier (``process.env.API_KEY``, ``settings.secret_key``) or a
# shell/template reference: a name, not a value.
_IDENTIFIER: Final = re.compile(
    r"[$%@]?[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)+[%]?"
)


def is_placeholder(value: str) -> bool:
    low = value.lower()
    if low in _PLACEHOLDER_VALUES or value in DOCUMENTED_EXAMPLES:
        return True
    if any(word in low for word in _PLACEHOLDER_WORDS):
        return True
    # one character repeated (``aaaaaaaa``), or the value is masked already
    return len(set(value)) <= 2


def shannon_entropy(value: str) -> float:
    """Bits per character."""
    n = len(value)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _candidate_value_ok(value: str, min_entropy: float) -> bool:
    """Whether an assigned value is random enough to be a credential."""
    value = value.strip()
    low = value.lower()
    if len(value) < 8 or low.startswith(_DIGEST_PREFIXES) or "://" in value:
        return False
    if value[0] in "/~." or value.isdigit() or low in ("true", "false"):
        return False
    if _UUID.fullmatch(value) or _IDENTIFIER.fullmatch(value):
        return False
    if not any(c.isdigit() for c in value):
        return False
    return shannon_entropy(value) >= min_entropy


_WORD_CHARS: Final = frozenset(ALPHABETS["A"])
# How far back a candidate's name is read (a longer one is cut: the check still sees its
# end, where the secret word is).
MAX_NAME_CHARS: Final = 128
_NAME_SET: Final = frozenset(ALPHABETS["A"] + "_.-")


def _name_start(text: str, at: int) -> str:
    """The name a candidate match's secret word ends: from the first name character."""
    start = at
    stop = max(0, at - MAX_NAME_CHARS)
    while start > stop and text[start - 1] in _NAME_SET:
        start -= 1
    return text[start:at]


def _accept(rule: Rule, m: re.Match[str], value: str | None, allow: frozenset[str]) -> bool:
    """Whether a rule's match is a credential to redact."""
    if not value or MARKER_PREFIX in value or value in allow or is_placeholder(value):
        return False
    if rule.tier == "definite":
        at = m.start()
        text = m.string
        if not rule.boundary or not at or text[at - 1] not in _WORD_CHARS:
            return True
        # ``\n``, ``\t``, ``\r`` in JSON-escaped text end a word too
        return at >= 2 and text[at - 2] == "\\" and text[at - 1] in "nrt"
    # ``name value`` (no = or :) only as a command-line flag: ``--password s3cr3t...``;
    # in prose ("the token abc...") a name and a word are not an assignment.
    sep = m.group("sep") if "sep" in rule.pattern.groupindex else None
    before = _name_start(m.string, m.start())
    if sep is not None and not sep.strip() and not before.startswith("-"):
        return False
    if rule.name is not None:
        tail = m.string[m.start() : m.start("sep")]
        if not rule.name.search(before + tail):
            return False
    return _candidate_value_ok(value, rule.min_entropy)


# Payload fields never redacted, by event type (``Redactor.redact_payload``).
IDENTITY_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "session/start": frozenset({"cwd", "parent_session_id"})
}


# -- the redactor -------------------------------------------------------------------------------


@dataclass
class Redactor:
    """Applies ``rules`` (and an operator's extra ones) to text; ``allow`` lists values that
    are never redacted. ``found`` counts redactions by kind since creation (never values)."""

    rules: tuple[Rule, ...] = RULES
    allow: frozenset[str] = frozenset()
    found: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        by_keyword: dict[str, list[Rule]] = {}
        for rule in self.rules:
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, []).append(rule)
        index = {id(rule): i for i, rule in enumerate(self.rules)}
        # Token-shaped rules by where their prefix sits in a run of token characters: its
        # first two characters (most), the text just before the run (``SG.``, ``hvs.``),
        # or inside it (``-us``).
        by_head: dict[str, set[int]] = {}
        self._before: list[tuple[str, int]] = []
        self._inside: list[tuple[str, int]] = []
        for i, rule in enumerate(self.rules):
            for prefix in rule.prefixes:
                if prefix.endswith("."):
                    self._before.append((prefix, i))
                elif prefix.startswith("-"):
                    self._inside.append((prefix, i))
                else:
                    by_head.setdefault(prefix.lstrip(":")[:2], set()).add(i)
        self._by_head = {head: frozenset(ix) for head, ix in by_head.items()}
        self._by_keyword = tuple(
            (kw, tuple(index[id(r)] for r in rs)) for kw, rs in by_keyword.items()
        )
        # No credential of the table fits in fewer characters (a candidate's value alone is
        # 8); an operator's rule may, so with one every string is looked at.
        self._shortest = 8 if all(rule.keywords != ("",) for rule in self.rules) else 0
        self._subs: dict[int, Callable[[re.Match[str]], str]] = {
            i: self._replacer(rule) for i, rule in enumerate(self.rules)
        }

    def _replacer(self, rule: Rule) -> Callable[[re.Match[str]], str]:
        mark = marker(rule.kind)
        has_group = "secret" in rule.pattern.groupindex

        def sub(m: re.Match[str]) -> str:
            whole = m.group(0)
            value = m.group("secret") if has_group else whole
            if not _accept(rule, m, value, self.allow):
                return whole
            self.found[rule.kind] += 1
            if not has_group:
                return mark
            start, end = m.span("secret")
            base = m.start()
            return whole[: start - base] + mark + whole[end - base :]

        return sub

    def _token_rules(self, text: str) -> Iterator[int]:
        """The token-shaped rules whose prefix a run of 16 token characters in ``text``
        starts with (or follows, or holds), as found: most strings (prose, short values,
        paths) have no such run, and one character-class scan says so."""
        by_head = self._by_head
        for run in _TOKEN_RUN.finditer(text):
            start = run.start()
            found = by_head.get(text[start : start + 2])
            if found:
                yield from found
            if start and text[start - 1] == "\\" and text[start] in "nrt":
                # a JSON escape's letter begins the run (``\nghp_...``)
                found = by_head.get(text[start + 1 : start + 3])
                if found:
                    yield from found
            if start and text[start - 1] == ".":
                for prefix, i in self._before:
                    if text.startswith(prefix, start - len(prefix)):
                        yield i
            for inner, i in self._inside:
                if inner in run.group():
                    yield i

    def _rules_for(self, text: str) -> list[int]:
        chosen = set(self._token_rules(text))
        low = text.lower()
        for keyword, indexes in self._by_keyword:
            if keyword in low:
                chosen.update(indexes)
        return sorted(chosen)

    def might_hold(self, json_text: str) -> bool:
        """Whether a credential could be in a string of the JSON document ``json_text``: a
        cheap test of the whole event (one gate, not one per string and key) that is never
        wrong the other way. A JSON string's text appears in the document as it is but for
        its escapes; ``\\n``-style escapes are handled by the gates, ``\\u`` and ``\\/``
        could hide a prefix or a keyword, so a document holding them is always walked."""
        if "\\u" in json_text or "\\/" in json_text:
            return True
        low = json_text.lower()
        if any(keyword in low for keyword, _ in self._by_keyword):
            return True
        if next(self._token_rules(json_text), None) is not None:
            return True
        return "%" in json_text and _PERCENT.search(json_text) is not None

    def redact(self, text: str) -> str:
        """``text`` with every credential replaced by its marker."""
        if len(text) < self._shortest:
            return text  # a key, a tool name, a short value: nothing fits
        chosen = self._rules_for(text)
        for i in chosen:
            text = self.rules[i].pattern.sub(self._subs[i], text)
        if "%" in text and _PERCENT.search(text):
            text = self._redact_url_encoded(text)
        return text

    def _redact_url_encoded(self, text: str) -> str:
        """Credentials URL-encoded once: each run of text holding a %XX escape is decoded and
        searched; each value found is replaced in the run in the encoding it appears in."""
        out: list[str] = []
        last = 0  # the end of what ``out`` holds
        scanned = 0  # the end of the last run looked at
        for escape in _PERCENT.finditer(text):
            if escape.start() < scanned:
                continue  # inside the run just looked at
            start = escape.start()
            while start > scanned and text[start - 1] not in _RUN_END:
                start -= 1
            stop = _RUN_STOP.search(text, escape.end())
            end = stop.start() if stop else len(text)
            scanned = end
            encoded = text[start:end]
            decoded = unquote(encoded)
            if decoded == encoded:
                continue
            replaced = encoded
            for kind, value in self.find(decoded):
                for form in (
                    quote(value, safe=""),
                    quote_plus(value, safe=""),
                    quote(value),
                    value,
                ):
                    if form and form in replaced:
                        replaced = replaced.replace(form, marker(kind))
                        self.found[kind] += 1
                        break
            if replaced == encoded:
                continue
            out.append(text[last:start])
            out.append(replaced)
            last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def find(self, text: str) -> list[tuple[str, str]]:
        """(kind, value) for each credential in ``text`` (for tests and the URL-encoded
        pass; never logged)."""
        out: list[tuple[str, str]] = []
        for i in self._rules_for(text):
            rule = self.rules[i]
            has_group = "secret" in rule.pattern.groupindex
            for m in rule.pattern.finditer(text):
                value = m.group("secret") if has_group else m.group(0)
                if _accept(rule, m, value, self.allow):
                    out.append((rule.kind, value))
        return out

    def redact_payload(self, kind: str, payload: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """An event's payload redacted (``redact_tree``), but for the fields that are its
        identity: a session/start's cwd names its workspace (whose key the subject
        carries, checked against it) and its parent is an id."""
        kept = IDENTITY_FIELDS.get(kind)
        if not kept or not any(k in payload for k in kept):
            new: dict[str, Any]
            new, changed = self.redact_tree(payload)
            return new, changed
        rest = {k: v for k, v in payload.items() if k not in kept}
        redacted_rest, changed = self.redact_tree(rest)
        if not changed:
            return payload, False
        others = iter(redacted_rest.items())
        out = dict(item if item[0] in kept else next(others) for item in payload.items())
        return out, True

    def redact_tree(self, value: Any) -> tuple[Any, bool]:
        """A JSON tree with every string (keys too) redacted, and whether anything changed;
        unchanged subtrees are returned as they are (no copy)."""
        if isinstance(value, str):
            new = self.redact(value)
            return new, new != value
        if isinstance(value, dict):
            changed = False
            out: dict[str, Any] = {}
            for k, v in value.items():
                nk = self.redact(k) if isinstance(k, str) else k
                nv, c = self.redact_tree(v)
                changed = changed or c or nk != k
                out[nk] = nv
            return (out, True) if changed else (value, False)
        if isinstance(value, list):
            items = [self.redact_tree(v) for v in value]
            if any(c for _, c in items):
                return [v for v, _ in items], True
            return value, False
        return value, False


_PERCENT: Final = re.compile(r"%[0-9A-Fa-f]{2}")
# Every token-shaped credential holds a run this long of these characters.
_TOKEN_RUN: Final = re.compile(r"[A-Za-z0-9_-]{16,}")
# A run of text around a %XX escape (one URL, query string or form body) ends at these.
_RUN_END: Final = frozenset(" \t\r\n\"'<>")
_RUN_STOP: Final = re.compile(r"[\s\"'<>]")


def compile_extra(patterns: Iterable[tuple[str, str]]) -> tuple[Rule, ...]:
    """Operators' extra rules, ``(kind, regex)``: definite, gated on nothing (they run on
    every string that reaches the rules), with group ``secret`` if the regex names one."""
    out = []
    for kind, pattern in patterns:
        rule = Rule(kind, "definite", re.compile(pattern), ("",), Example("", ""), "")
        out.append(dataclasses.replace(rule, boundary=False))  # the operator's regex decides
    return tuple(out)


def make_redactor(extra: Iterable[tuple[str, str]] = (), allow: Iterable[str] = ()) -> Redactor:
    return Redactor(RULES + compile_extra(extra), frozenset(allow))


@dataclass(frozen=True, slots=True)
class RedactionSpec:
    """What a process applies: on or off, an operator's extra ``(kind, regex)`` rules and
    allowed values. Plain data, so the writer's child process can be handed it."""

    on: bool = True
    extra: tuple[tuple[str, str], ...] = ()
    allow: tuple[str, ...] = ()

    def redactor(self) -> Redactor | None:
        return make_redactor(self.extra, self.allow) if self.on else None

    def to_json(self) -> str:
        import json

        return json.dumps({"on": self.on, "extra": self.extra, "allow": self.allow})

    @classmethod
    def from_json(cls, text: str) -> RedactionSpec:
        import json

        data = json.loads(text)
        return cls(
            on=bool(data["on"]),
            extra=tuple((str(k), str(p)) for k, p in data["extra"]),
            allow=tuple(str(v) for v in data["allow"]),
        )


def parse_patterns(text: str) -> tuple[tuple[str, str], ...]:
    """Operators' extra rules as written in a setting: ``kind=regex`` entries, one a line
    (or separated by ``;;``). Raises ``ValueError`` on a bad entry or regex."""
    out = []
    for entry in re.split(r"\n|;;", text):
        entry = entry.strip()
        if not entry:
            continue
        kind, sep, pattern = entry.partition("=")
        kind = kind.strip()
        if not sep or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", kind) or not pattern:
            raise ValueError("each entry is kind=regex, the kind in lowercase letters, digits, -")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"the pattern of {kind} does not compile: {exc}") from None
        out.append((kind, pattern))
    return tuple(out)


REDACTION_ON: Final = RedactionSpec()
