"""The credential rules: each rule's examples, the forms credentials hide in, and what is
never redacted. Every credential here is generated at run time from its shape."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import uuid
from urllib.parse import quote

import pytest

from contracts.redaction import (
    RULES,
    RedactionSpec,
    Redactor,
    Rule,
    generate,
    make_redactor,
    marker,
)

DEFINITE = [r for r in RULES if r.tier == "definite"]


def test_the_table_covers_at_least_thirty_kinds_and_each_kind_once() -> None:
    kinds = [r.kind for r in RULES]
    assert len(set(kinds)) == len(kinds)
    assert len(DEFINITE) >= 30


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.kind)
def test_every_rule_is_gated_by_something_its_example_holds(rule: Rule) -> None:
    text = rule.example.before + generate(rule.example.secret) + rule.example.after
    assert rule.keywords or rule.prefixes
    assert any(k in text.lower() for k in rule.keywords) or any(p in text for p in rule.prefixes)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.kind)
def test_rule_redacts_its_example_and_keeps_the_words_around(rule: Rule) -> None:
    secret = generate(rule.example.secret)
    text = rule.example.before + secret + rule.example.after
    redactor = Redactor()
    out = redactor.redact(text)
    assert secret not in out
    assert out == rule.example.before + marker(rule.kind) + rule.example.after
    assert redactor.found[rule.kind] == 1


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.kind)
def test_rule_leaves_its_negative_example(rule: Rule) -> None:
    text = generate(rule.negative)
    assert Redactor().redact(text) == text


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.kind)
def test_rule_inside_a_json_string_and_url_encoded(rule: Rule) -> None:
    secret = generate(rule.example.secret)
    text = rule.example.before + secret + rule.example.after
    as_json = json.dumps({"output": text})  # newlines and quotes escaped
    out = Redactor().redact(as_json)
    assert json.dumps(secret)[1:-1] not in out and marker(rule.kind) in out
    assert json.loads(out)["output"].count("[redacted:") == 1
    if "\n" in secret:
        return  # a PEM block is not put in a URL
    encoded = "https://t.test/cb?q=" + quote(text, safe="")
    out = Redactor().redact(encoded)
    assert quote(secret, safe="") not in out and secret not in out, out


def test_the_marker_depends_on_the_kind_only() -> None:
    a, b = generate("ghp_<A:36>"), generate("ghp_<A:36>")
    r = Redactor()
    assert r.redact(f"x {a} y") == r.redact(f"x {b} y") == "x [redacted:github-token] y"


def test_pem_across_lines_and_cut_off() -> None:
    body = generate("<B:64>\n<B:64>\n<B:30>==")
    block = f"-----BEGIN EC PRIVATE KEY-----\n{body}\n-----END EC PRIVATE KEY-----"
    out = Redactor().redact(f"$ cat key.pem\n{block}\n$ ls")
    assert out == "$ cat key.pem\n[redacted:private-key]\n$ ls"
    cut = Redactor().redact("-----BEGIN RSA PRIVATE KEY-----\n" + body[:100])
    assert body[:60] not in cut and "[redacted:private-key]" in cut


def test_env_dump_and_curl_trace() -> None:
    gh, ant, pw = generate("ghp_<A:36>"), generate("sk-ant-api03-<W:93>AA"), generate("<A:12>3x")
    env = f"HOME=/root\nGITHUB_TOKEN={gh}\nANTHROPIC_API_KEY={ant}\nDB_PASSWORD={pw}\nPWD=/srv"
    out = Redactor().redact(env)
    for value in (gh, ant, pw):
        assert value not in out
    assert "GITHUB_TOKEN=[redacted:github-token]" in out
    assert "ANTHROPIC_API_KEY=[redacted:anthropic-api-key]" in out
    assert "DB_PASSWORD=[redacted:password]" in out
    assert "HOME=/root" in out and "PWD=/srv" in out
    bearer = generate("<W:48>")
    trace = f"> GET /v1 HTTP/1.1\r\n> Authorization: Bearer {bearer}\r\n> Accept: */*\r\n"
    assert bearer not in Redactor().redact(trace)


def test_candidate_forms() -> None:
    v = generate("<A:14>7<A:5>")
    forms = [
        f"SECRET_KEY={v}",
        f'export API_TOKEN="{v}"',
        f"  client_secret: {v}",
        f'{{"apiKey": "{v}"}}',
        f'password = "{v}"',
        f"X-Auth-Token: {v}",
        f"mysql --password {v}",
        f"mysql --password={v}",
        f"psql 'Password={v};Host=db'",
    ]
    for text in forms:
        out = Redactor().redact(text)
        assert v not in out, text
        assert "[redacted:" in out


NEAR_MISSES = [
    "commit " + hashlib.sha1(os.urandom(8)).hexdigest(),
    f"request {uuid.uuid4()} done",
    '"session_id": "' + str(uuid.uuid4()) + '"',
    "sha256:" + hashlib.sha256(os.urandom(8)).hexdigest(),
    "docker pull app@sha256:" + hashlib.sha256(os.urandom(8)).hexdigest(),
    '"integrity": "sha512-' + base64.b64encode(os.urandom(64)).decode() + '"',
    "data:image/png;base64," + base64.b64encode(os.urandom(2048)).decode(),
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "OPENAI_API_KEY=sk-xxxx",
    "api_key = YOUR_API_KEY",
    'token: "${TOKEN}"',
    "Authorization: Bearer <token>",
    'password: "*****"',
    "the token count was 12345 tokens; max_tokens=4096",
    '"input_tokens": 123456789, "output_tokens": 2048',
    "the private key lives in ~/.ssh/id_ed25519",
    "apiKey: process.env.OPENAI_API_KEY",
    "password_file: /run/secrets/db_password",
    "toolu_01" + generate("<A:22>"),
    "https://github.com/org/repo/pull/42 and git@github.com:org/repo.git",
    "postgres://localhost:5432/app",
]


# Ids by position: the values are random, and pytest-xdist's processes must collect the
# same test ids.
@pytest.mark.parametrize(
    "text", NEAR_MISSES, ids=[f"near-miss-{n}" for n in range(len(NEAR_MISSES))]
)
def test_near_misses_are_left_alone(text: str) -> None:
    assert Redactor().redact(text) == text


def test_redact_tree_keeps_unchanged_subtrees_and_reports_change() -> None:
    gh = generate("ghp_<A:36>")
    payload = {"tool": "bash", "args": ["ls", "-l"], "output": {"text": f"t={gh}", "n": 3}}
    out, changed = Redactor().redact_tree(payload)
    assert changed and out["output"] == {"text": "t=[redacted:github-token]", "n": 3}
    assert out["args"] is payload["args"]
    tree = {"a": ["b"]}
    same, changed = Redactor().redact_tree(tree)
    assert not changed and same is tree


def test_operator_allow_list_and_extra_patterns() -> None:
    gh = generate("ghp_<A:36>")
    internal = "ACME-" + generate("<C:20>")
    r = make_redactor(extra=[("acme-key", r"ACME-[A-Z0-9]{20}")], allow=[gh])
    out = r.redact(f"{gh} {internal}")
    assert out == f"{gh} [redacted:acme-key]"


def test_detector_throughput_is_measured(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a target here (the bench has one): a figure, and a floor far below it."""
    import time

    lines = []
    for i in range(2000):
        rule = RULES[i % len(RULES)]
        lines.append(f"step {i}: {rule.example.before}{generate(rule.example.secret)} ok")
        lines.append(NEAR_MISSES[i % len(NEAR_MISSES)])
        lines.append("ordinary words about a flaky test and a retry loop " * 4)
    r = Redactor()
    start = time.perf_counter()
    for line in lines:
        r.redact(line)
    elapsed = time.perf_counter() - start
    size = sum(len(x) for x in lines)
    with capsys.disabled():
        print(f"\ndetector: {size / elapsed / 1e6:.1f} MB/s over {len(lines)} strings")
    assert size / elapsed > 0.2e6


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.kind)
def test_hostile_text_costs_linear_time(rule: Rule) -> None:
    """300 KB built from a rule's own pieces (its prefix over and over, its name without a
    value, a token-looking run with no end): each took seconds to minutes while a pattern
    rescanned one long run from every occurrence of its prefix (``eyJeyJ...``)."""
    import time

    size = 300_000
    secret = generate(rule.example.secret)
    before = rule.example.before or "x"
    texts = [
        (before * (size // len(before) + 1))[:size],
        (secret[:6] * (size // 6 + 1))[:size],
        (secret * (size // len(secret) + 1))[:size],
        secret[:6] + "a" * size,
        before + "A1" * (size // 2),
        ((secret + " ") * (size // len(secret) + 1))[:size],
    ]
    redactor = Redactor()
    for text in texts:
        start = time.perf_counter()
        redactor.redact(text)
        assert time.perf_counter() - start < 3.0, text[:40]


def test_a_session_starts_identity_is_not_redacted() -> None:
    """The cwd names the workspace (the subject carries its key, checked against it) and
    the parent is an id: redacting either would break the session, not protect it."""
    gh = generate("ghp_<A:36>")
    cwd = f"/home/dev/GITHUB_TOKEN={gh}"
    payload = {"cwd": cwd, "parent_session_id": "p-1", "note": f"t {gh}"}
    out, changed = Redactor().redact_payload("session/start", payload)
    assert changed and list(out) == ["cwd", "parent_session_id", "note"]
    assert out["cwd"] == cwd and out["note"] == "t [redacted:github-token]"
    other, changed = Redactor().redact_payload("message/user", {"cwd": cwd})
    assert changed and other["cwd"] == "/home/dev/GITHUB_TOKEN=[redacted:github-token]"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.kind)
def test_the_event_gate_never_skips_a_credential(rule: Rule) -> None:
    """``might_hold`` looks at an event's JSON once; it must pass every event a string of
    which holds a credential, whatever the escapes around it."""
    secret = generate(rule.example.secret)
    text = rule.example.before + secret + rule.example.after
    redactor = Redactor()
    for around in (text, f"line\n{text}\n", f"é{text}", f'"{text}"\t', f"\\{text}"):
        for ascii_only in (False, True):
            doc = json.dumps({"payload": {"output": around}}, ensure_ascii=ascii_only)
            assert redactor.might_hold(doc), doc[:80]


def test_the_event_gate_passes_over_ordinary_events() -> None:
    redactor = Redactor()
    plain = json.dumps({"payload": {"text": "the flaky test went green on retry", "n": 3}})
    assert not redactor.might_hold(plain)
    # "token" as a word does not open it (tests/test_redaction_gate.py); assigned, it does
    assert not redactor.might_hold(plain.replace("flaky", "token"))
    assert redactor.might_hold(plain.replace("flaky", "token=4f9a8b7c6d5e"))


def test_the_fingerprint_names_the_rules_and_never_holds_a_value() -> None:
    """What an index snapshot records of the rules it was redacted by: equal specs agree,
    any change (off, an extra rule, an allowed value) differs, and no value shows."""
    allowed = generate("ghp_<A:36>")
    specs = [
        RedactionSpec(),
        RedactionSpec(on=False),
        RedactionSpec(extra=(("acme-key", "ACME-[0-9A-Z]{24}"),)),
        RedactionSpec(allow=(allowed,)),
    ]
    prints = [spec.fingerprint() for spec in specs]
    assert len(set(prints)) == len(specs)
    assert RedactionSpec().fingerprint() == prints[0]
    assert RedactionSpec.from_json(specs[3].to_json()).fingerprint() == prints[3]
    assert not [p for p in prints if allowed in p or "ACME" in p]
