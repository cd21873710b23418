"""Issue 40's end-to-end check: a generated corpus of transcript-like sessions with
credentials of every kind planted (env dumps, curl traces, config files, PEM blocks across
lines, JSON with escapes, URL-encoded values, a long output past the spill threshold and
past 64 KiB, a title and a first prompt) and a near-miss set, published raw (as a runtime
would) to a real nats-server and ingested by one real worker process for the module. Then
every surface is read, each one itself, and none holds a credential: both searches, reads
with windows, traces, the spilled result fetched through its locator, the operator verbs,
the web UI's pages over HTTP, the MCP bridge called by the MCP SDK's client over stdio,
``sessionquery call``, ``status`` and ``secrets``, dead letters, and every log line of the
run (the worker's and its writer child's stderr, the bridge's, the commands', this
process's). Every event is still found by the words around its secret; the near misses
come back unchanged; a search for the kind finds the marker.

Every credential is generated here from its shape (``contracts.redaction.generate``).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import os
import random
import string
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters
from nats.aio.client import Client as NATS
from structlog.testing import capture_logs

from bench.child import wait_searchable
from contracts.envelope import SpillLocator
from contracts.redaction import RULES, generate
from contracts.spill_fetch import fetch_spilled
from contracts.subjects import TOOL_NAMES, Subjects
from tests._harness import body, call, event, publish, until
from tests._index import connect
from tests.mcp_bridge._harness import bridge_args, text_of
from tests.reliability._harness import WorkerProcess
from tests.ui.conftest import Ui, start_ui
from worker.replica.ingest_consumer import ensure_events_stream
from worker.ui.routes import CHUNK_CHARS, TEXT_PART_CHARS

CWD = "/work/secrets-app"
REPO = Path(__file__).resolve().parents[2]


def _word(rng: random.Random) -> str:
    """A made-up word (letters only, so the analyser keeps it whole) to find an event by."""
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(12))


@dataclass
class Corpus:
    events: list[dict[str, Any]] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    # (session, seq, a word next to the secret) for every event holding a credential
    anchors: list[tuple[str, int, str]] = field(default_factory=list)
    near_misses: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    kinds: set[str] = field(default_factory=set)
    seqs: dict[str, int] = field(default_factory=dict)
    long: tuple[str, int] = ("", 0)  # the event past the spill threshold and 64 KiB

    def add(self, session: str, type_: str, payload: dict[str, Any]) -> int:
        seq = self.seqs.get(session, 0) + 1
        self.seqs[session] = seq
        item = event(session, seq, type_, payload)
        if type_ in ("tool/call", "tool/result"):
            item["surface"] = "tool"
        elif type_ == "message/assistant":
            item["surface"] = "assistant"
        self.events.append(item)
        return seq

    def start(self, session: str) -> None:
        self.add(session, "session/start", {"cwd": CWD})

    def secret(self, shape: str) -> str:
        value = generate(shape)
        self.secrets.append(value)
        return value


def build(rng: random.Random) -> Corpus:
    c = Corpus()
    # The caller of the tools: a session of the same workspace.
    c.start("s-caller")
    c.add("s-caller", "message/user", {"text": "find the deploy notes"})

    # One tool result per rule: its example's text around a generated credential.
    c.start("s-rules")
    for rule in RULES:
        value = c.secret(rule.example.secret)
        anchor = _word(rng)
        text = f"{anchor} {rule.example.before}{value}{rule.example.after} done"
        seq = c.add("s-rules", "tool/result", {"call_id": f"c{rule.kind}", "output": text})
        c.anchors.append(("s-rules", seq, anchor))
        c.kinds.add(rule.kind)

    # A session titled and prompted with credentials, an env dump, a curl trace, a YAML
    # config, a PEM split across lines, JSON with escapes, a URL-encoded value.
    s = "s-transcript"
    c.start(s)
    gh = c.secret("ghp_<A:36>")
    anchor = _word(rng)
    seq = c.add(s, "message/user", {"text": f"{anchor}: push with GITHUB_TOKEN={gh} please"})
    c.anchors.append((s, seq, anchor))
    aws = c.secret("AKIA<U:16>")
    anchor = _word(rng)
    seq = c.add(s, "session/title", {"title": f"{anchor} rotate {aws}"})
    c.anchors.append((s, seq, anchor))
    env = {
        "OPENAI_API_KEY": c.secret("sk-proj-<W:120>"),
        "ANTHROPIC_API_KEY": c.secret("sk-ant-api03-<W:93>AA"),
        "STRIPE_SECRET_KEY": c.secret("sk_live_<A:24>"),
        "HF_TOKEN": c.secret("hf_<a:34>"),
        "DB_PASSWORD": c.secret("<A:12>7<A:5>"),
        "AWS_SECRET_ACCESS_KEY": c.secret("<B:40>"),
    }
    anchor = _word(rng)
    dump = "\n".join(["HOME=/home/dev", "SHELL=/bin/bash", *(f"{k}={v}" for k, v in env.items())])
    seq = c.add(s, "tool/call", {"call_id": "c-env", "tool": "bash", "input": {"command": "env"}})
    seq = c.add(s, "tool/result", {"call_id": "c-env", "output": f"{anchor}\n{dump}"})
    c.anchors.append((s, seq, anchor))
    bearer = c.secret("<W:48>")
    anchor = _word(rng)
    trace = (
        f"{anchor}\n> GET /v1/models HTTP/1.1\r\n> Host: api.example.net\r\n"
        f"> Authorization: Bearer {bearer}\r\n> Accept: */*\r\n< HTTP/1.1 200 OK\r\n"
    )
    seq = c.add(s, "tool/result", {"call_id": "c-curl", "output": trace})
    c.anchors.append((s, seq, anchor))
    pw, url_pw = c.secret("<A:16>3"), c.secret("<A:18>")
    anchor = _word(rng)
    yaml = (
        f"# {anchor}\ndatabase:\n  host: db.internal\n  password: '{pw}'\n"
        f"  url: postgres://app:{url_pw}@db.internal:5432/app\n"
    )
    seq = c.add(s, "tool/result", {"call_id": "c-cat", "output": yaml})
    c.anchors.append((s, seq, anchor))
    pem_body = c.secret("<B:64>\n<B:64>\n<B:64>\n<B:22>==")
    c.secrets.extend(pem_body.split("\n"))
    anchor = _word(rng)
    pem = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{pem_body}\n-----END OPENSSH PRIVATE KEY-----"
    seq = c.add(s, "tool/result", {"call_id": "c-key", "output": f"{anchor}\n{pem}\n"})
    c.anchors.append((s, seq, anchor))
    json_pw, json_pem = c.secret("<A:20>9"), c.secret("<B:64>\n<B:40>")
    c.secrets.extend(json_pem.split("\n"))
    anchor = _word(rng)
    nested = json.dumps(
        {
            "password": json_pw,
            "private_key": "-----BEGIN RSA PRIVATE KEY-----\n"
            + json_pem
            + "\n-----END RSA PRIVATE KEY-----\n",
        }
    )
    seq = c.add(s, "tool/result", {"call_id": "c-json", "output": f"{anchor} {json.dumps(nested)}"})
    c.anchors.append((s, seq, anchor))
    encoded_pw = c.secret("<A:14>5<A:3>")
    anchor = _word(rng)
    form = "https://auth.example.net/cb?" + quote(f"user=dev&password={encoded_pw}", safe="")
    seq = c.add(s, "tool/result", {"call_id": "c-url", "output": f"{anchor} GET {form}"})
    c.anchors.append((s, seq, anchor))

    # A long output: past the spill threshold and past the 64 KiB kept for search, with a
    # credential near its start and one near its end.
    first, last = c.secret("glpat-<W:20>"), c.secret("xoxb-<D:12>-<D:13>-<A:24>")
    anchor = _word(rng)
    filler = "".join(f"log line {i:05d} build step ok\n" for i in range(3500))
    long = f"{anchor} GITLAB_TOKEN={first}\n{filler}SLACK_BOT_TOKEN={last}\n"
    assert len(long) > 96 * 1024
    seq = c.add(s, "tool/result", {"call_id": "c-long", "output": long})
    c.anchors.append((s, seq, anchor))
    c.long = (s, seq)

    # Near misses: never altered.
    m = "s-near"
    c.start(m)
    misses = [
        "commit " + hashlib.sha1(os.urandom(8)).hexdigest(),
        f"request {uuid.uuid4()} accepted",
        "pulled app@sha256:" + hashlib.sha256(os.urandom(8)).hexdigest(),
        '"integrity": "sha512-' + base64.b64encode(os.urandom(64)).decode() + '"',
        "data:image/png;base64," + base64.b64encode(os.urandom(1500)).decode(),
        "aws example key AKIAIOSFODNN7EXAMPLE",
        "OPENAI_API_KEY=sk-xxxx and api_key = YOUR_API_KEY",
        'token: "${TOKEN}" and Authorization: Bearer <token> and password: "*****"',
        "the token count was 12345 tokens; max_tokens=4096",
    ]
    for text in misses:
        payload = {"text": text}
        seq = c.add(m, "message/assistant", payload)
        c.near_misses[(m, seq)] = payload

    # A dead letter: an event after a gap, holding a credential.
    dead = c.secret("npm_<A:36>")
    gap = event(m, c.seqs[m] + 5, "message/user", {"text": f"NPM_TOKEN={dead}"})
    c.events.append(gap)
    return c


# -- the module's worker: a process of its own, its log lines (and its writer child's) in a
# file; every test only reads through it ------------------------------------------------------

pytestmark = pytest.mark.asyncio(loop_scope="module")
SPILL_THRESHOLD = 16 * 1024


@dataclass
class Stack:
    corpus: Corpus
    nc: NATS
    nats_url: str
    subjects: Subjects
    worker: WorkerProcess
    db: Path
    tmp: Path
    dead_letters: list[bytes]


@pytest.fixture
def nc(module_nc: NATS) -> NATS:
    return module_nc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(
    module_nc: NATS,
    nats_url: str,
    module_subjects: Subjects,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Stack]:
    """The corpus published raw, as a runtime that does not redact would, and one worker
    process (``tests._worker_main``, logging JSON at debug) that has ingested it."""
    nc, subjects = module_nc, module_subjects
    tmp = tmp_path_factory.mktemp("redaction")
    corpus = build(random.Random(40))
    dead_letters: list[bytes] = []

    async def on_dead(msg: Any) -> None:
        dead_letters.append(msg.data + orjson.dumps(dict(msg.headers or {})))

    sub = await nc.subscribe(subjects.deadletter, cb=on_dead)
    await ensure_events_stream(nc.jetstream(), subjects)
    await publish(nc, subjects, corpus.events)
    db = tmp / "index.sqlite"
    config = {"spill_threshold_bytes": SPILL_THRESHOLD, "spill_preview_bytes": 1000}
    worker = WorkerProcess(nats_url, subjects, db, tmp / "worker.log", config=config)
    await worker.start()
    stack = Stack(corpus, nc, nats_url, subjects, worker, db, tmp, dead_letters)
    try:
        last = ("s-near", corpus.seqs["s-near"])

        async def stored() -> bool:
            reply = await tool_call(stack, "session_event_read", session_id=last[0], seq=last[1])
            return bool(reply["status"] == "ok")

        await until(stored, within=90)
        await wait_searchable(db, 60)  # the search index committed, not only the store
        await until(lambda: bool(dead_letters), within=20)
        yield stack
    finally:
        await worker.stop()
        await sub.unsubscribe()
        await nc.jetstream().delete_stream(subjects.events_stream)


async def tool_call(stack: Stack, name: str, **arguments: Any) -> dict[str, Any]:
    reply, _ = await call(stack.nc, stack.subjects, name, body(caller="s-caller", **arguments))
    return reply


async def operator(stack: Stack, verb: str, **arguments: Any) -> Any:
    msg = await stack.nc.request(
        stack.subjects.operator(verb), orjson.dumps({"arguments": arguments}), timeout=15
    )
    return orjson.loads(msg.data)


def _all_text(value: Any) -> str:
    return orjson.dumps(value).decode() if not isinstance(value, str) else value


def leaks(secrets: list[str], text: str) -> list[str]:
    """The values of ``secrets`` in ``text``: as they are, JSON-escaped or URL-encoded (a
    page's links)."""
    return [
        s for s in secrets if s in text or json.dumps(s)[1:-1] in text or quote(s, safe="") in text
    ]


def worker_log(stack: Stack) -> str:
    """Every line the worker process and its index writer child wrote so far."""
    return stack.worker.log.read_text(errors="replace")


async def cli(stack: Stack, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """``python -m worker.cli ARGS`` against the module's NATS and names: (exit, out, err)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONQUERY_", "NATS_"))}
    env.update({"PYTHONPATH": str(REPO), "SESSIONQUERY_LOG_LEVEL": "debug",
                "SESSIONQUERY_SUBJECT_PREFIX": stack.subjects.prefix})  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "worker.cli", *args, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=REPO,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(stdin), 90)
    return proc.returncode or 0, out.decode(), err.decode()


def nats_args(stack: Stack) -> list[str]:
    s = stack.subjects
    return ["--nats-url", stack.nats_url, "--stream", s.events_stream,
            "--events-prefix", s.events_prefix]  # fmt: skip


# -- the tools, the operator verbs, spill, dead letters, status -----------------------------


async def test_no_credential_reaches_the_tools_or_the_operator_verbs(stack: Stack) -> None:
    corpus = stack.corpus
    assert len(corpus.kinds) >= 30
    seen: list[str] = []  # everything any surface showed
    found_anchor: dict[str, bool] = {}

    async def tool(name: str, **arguments: Any) -> dict[str, Any]:
        reply = await tool_call(stack, name, **arguments)
        seen.append(_all_text(reply))
        return reply

    for session, seq, anchor in corpus.anchors:
        found = await tool("session_search", query=anchor)
        hits = await tool("session_event_search", query=anchor, session_id=session)
        found_anchor[anchor] = (
            found["status"] == "ok"
            and session in found["content"]
            and hits["status"] == "ok"
            and anchor in hits["content"]
        )
        await tool("session_event_read", session_id=session, seq=seq, before=2, after=2)
        await tool("session_event_trace", session_id=session, seq=seq)
    for session in corpus.seqs:
        await tool("session_trace", session_id=session)
    marker = await tool(
        "session_event_search", query="redacted github token", session_id="s-transcript"
    )
    # the excerpt marks the matched words ([word]) and escapes the marker's brackets
    assert r"\[[redacted]:[github]-[token]\]" in marker["content"], marker["content"]

    long_session, long_seq = corpus.long
    spilled = await tool("session_event_read", session_id=long_session, seq=long_seq)
    assert "spill" in spilled, "the long output was not spilled"
    whole = await fetch_spilled(stack.nc, SpillLocator.model_validate(spilled["spill"]))
    seen.append(bytes(whole).decode())
    assert "[redacted:slack-token]" in seen[-1]  # past 64 KiB, still redacted

    seen.append(_all_text(await operator(stack, "workspaces")))
    seen.append(_all_text(await operator(stack, "sessions", workspace=CWD)))
    for session, seq, anchor in corpus.anchors:
        seen.append(_all_text(await operator(stack, "search", workspace=CWD, query=anchor)))
        for verb in ("event", "text", "relations"):
            reply = await operator(stack, verb, workspace=CWD, session_id=session, seq=seq)
            seen.append(_all_text(reply))
    for session in corpus.seqs:
        for verb in ("timeline", "lineage"):
            reply = await operator(stack, verb, workspace=CWD, session_id=session)
            seen.append(_all_text(reply))
    seen.append(_all_text(await operator(stack, "deadletters")))
    seen.append(_all_text(await operator(stack, "operations")))
    seen.extend(d.decode("utf-8", "replace") for d in stack.dead_letters)
    seen.append(worker_log(stack))

    assert not leaks(corpus.secrets, "\n".join(seen)), "a credential reached a surface"
    missing = [a for a, ok in found_anchor.items() if not ok]
    assert not missing, f"events not found by the words around their secret: {missing}"

    # The near misses come back exactly as published (the event's exact JSON).
    for (session, seq), payload in corpus.near_misses.items():
        reply = await operator(stack, "event", workspace=CWD, session_id=session, seq=seq)
        assert orjson.loads(reply["result"]["text"])["payload"] == payload, reply
    conn = connect(stack.db, read_only=True)
    try:
        stored = "\n".join(r for (r,) in conn.execute("SELECT event_json(doc) FROM events"))
    finally:
        conn.close()
    assert not leaks(corpus.secrets, stored)


async def test_status_and_secrets_print_no_value(stack: Stack) -> None:
    secrets = stack.corpus.secrets
    status = await cli(stack, "status", *nats_args(stack), "--db", str(stack.db), "--json")
    assert status[0] == 0, status
    plain = await cli(stack, "secrets", "--db", str(stack.db))
    as_json = await cli(stack, "secrets", "--db", str(stack.db), "--json")
    assert plain[0] == 0 and as_json[0] == 0, (plain, as_json)
    # It reports what was redacted, by kind, in which sessions.
    report = orjson.loads(as_json[1])
    text = _all_text(report)
    for kind in ("github-token", "aws-access-key-id", "private-key", "slack-token"):
        assert kind in plain[1] and kind in text, kind
    assert "s-rules" in text and "s-transcript" in text
    everything = "\n".join([*status[1:], *plain[1:], *as_json[1:], worker_log(stack)])
    assert not leaks(secrets, everything)


async def test_a_credentials_parts_find_nothing_of_it(stack: Stack) -> None:
    """A model that searches by a piece of a key it saw (its prefix, its tail) gets back no
    more of it than it typed, from either search or the operator's: the index holds the
    marker, never a part of the value (no rule redacts a key's middle and leaves an end)."""
    corpus = stack.corpus
    replies: list[tuple[str, str, str]] = []  # (the part searched, the rest, the reply)
    for secret in corpus.secrets:
        if len(secret) < 24 or "\n" in secret:
            continue
        half = len(secret) // 2
        for part, rest in ((secret[:half], secret[half:]), (secret[half:], secret[:half])):
            for reply in (
                await tool_call(stack, "session_search", query=part),
                await tool_call(stack, "session_event_search", query=part, session_id="s-rules"),
                await operator(stack, "search", workspace=CWD, query=part),
            ):
                replies.append((part, rest, _all_text(reply)))
    assert len(replies) > 100
    shown = [
        part for part, rest, reply in replies if rest in reply or json.dumps(rest)[1:-1] in reply
    ]
    assert not shown, shown[:3]


async def test_an_error_reply_echoes_no_credential(stack: Stack) -> None:
    """A refusal names what it refused: a session id (an id may be token-shaped) or an
    unknown field's name. A credential the requester pasted there comes back as its marker,
    in the tools' replies (body and error header) and the operator's."""
    gh, sk = generate("ghp_<A:36>"), generate("sk-proj-<W:60>")
    replies: list[str] = []
    for name, arguments in (
        ("session_event_read", {"session_id": gh, "seq": 1}),
        ("session_trace", {"session_id": gh}),
        ("session_event_search", {"query": "deploy", "session_id": sk}),
        ("session_search", {"query": "deploy", gh: 1}),
    ):
        reply, msg = await call(stack.nc, stack.subjects, name,
                                body(caller="s-caller", **arguments))  # fmt: skip
        assert reply["status"] == "error", reply
        replies.extend((_all_text(reply), _all_text(dict(msg.headers or {}))))
    for verb, arguments in (
        ("event", {"workspace": CWD, "session_id": gh, "seq": 1}),
        ("timeline", {"workspace": CWD, "session_id": sk}),
        ("search", {"workspace": CWD, "query": "deploy", gh: 1}),
    ):
        reply = await operator(stack, verb, **arguments)
        assert reply["status"] == "error", reply
        replies.append(_all_text(reply))
    said = "\n".join(replies)
    assert not leaks([gh, sk], said), said
    assert "[redacted:github-token]" in said and "[redacted:openai-api-key]" in said


# -- the web UI's pages, fetched over HTTP ------------------------------------------------


async def test_no_credential_reaches_the_ui_pages(stack: Stack) -> None:
    corpus = stack.corpus
    ws = "ws=" + quote(CWD, safe="")
    pages: list[str] = []
    with capture_logs() as logs:
        server = await start_ui(stack.nats_url, stack.subjects)
        try:
            ui = Ui(server)
            cookie = await ui.cookie()

            async def page(path: str) -> str:
                status, _, text = await ui.get(path, cookie=cookie)
                assert status in (200, 400, 404), (path, status, text[:500])
                pages.append(text)
                return html.unescape(text)

            await page("/")
            await page(f"/sessions?{ws}")
            await page("/ops")
            found: dict[str, bool] = {}
            for session, seq, anchor in corpus.anchors:
                hits = await page(f"/search?{ws}&q={anchor}")
                found[anchor] = f"&id={session}&at={seq}&" in hits
                await page(f"/session?{ws}&id={session}&at={seq}&q={anchor}")
                await page(f"/event?{ws}&id={session}&seq={seq}")
                await page(f"/event?{ws}&id={session}&seq={seq}&view=json")
            for session in corpus.seqs:
                await page(f"/session?{ws}&id={session}")
                await page(f"/lineage?{ws}&id={session}")
            # The long event, every part of its text and of its JSON.
            long_session, long_seq = corpus.long
            at = f"/event?{ws}&id={long_session}&seq={long_seq}"
            for offset in range(0, 128 * 1024, TEXT_PART_CHARS):
                await page(f"{at}&offset={offset}")
            for offset in range(0, 192 * 1024, CHUNK_CHARS):
                await page(f"{at}&view=json&offset={offset}")
            # its last part, past 64 KiB: the marker is there
            assert "SLACK_BOT_TOKEN=[redacted:slack-token]" in html.unescape(pages[-5])
            # The marker is shown where the credential was, in the text and the JSON.
            gh_event = next(seq for s, seq, _ in corpus.anchors if s == "s-transcript")
            shown = await page(f"/event?{ws}&id=s-transcript&seq={gh_event}")
            assert "GITHUB_TOKEN=[redacted:github-token]" in shown
            title = await page(f"/sessions?{ws}")
            assert "rotate [redacted:aws-access-key-id]" in title
            marker = await page(f"/search?{ws}&q=redacted+github+token")
            assert "github" in marker and "s-transcript" in marker
        finally:
            await asyncio.to_thread(server.stop)
    missing = [a for a, ok in found.items() if not ok]
    assert not missing, f"search pages did not find the events by their words: {missing}"
    everything = "\n".join([*pages, *(html.unescape(p) for p in pages)])
    assert not leaks(corpus.secrets, everything)
    assert not leaks(corpus.secrets, "\n".join(_all_text(line) for line in logs))


# -- the MCP bridge, as an MCP client calls it --------------------------------------------


async def test_no_credential_reaches_the_mcp_bridge(stack: Stack) -> None:
    corpus = stack.corpus
    bridge_log = stack.tmp / "bridge.log"
    # The bridge's stderr (its log lines) into a file, as an MCP host would keep it.
    params = StdioServerParameters(
        command="/bin/sh",
        args=["-c", 'exec "$0" "$@" 2>>"$BRIDGE_LOG"', sys.executable,
              *bridge_args(stack.nats_url, stack.subjects, "--session-id", "s-caller")],
        env={**os.environ, "PYTHONPATH": str(REPO), "SESSIONQUERY_LOG_LEVEL": "debug",
             "BRIDGE_LOG": str(bridge_log)},
    )  # fmt: skip
    texts: list[str] = []
    async with Client(params) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert listed == list(TOOL_NAMES)

        async def tool(name: str, **arguments: Any) -> str:
            result = await client.call_tool(name, arguments)
            texts.append(text_of(result))
            assert not result.is_error, (name, texts[-1][:300])
            return texts[-1]

        for session, seq, anchor in corpus.anchors:
            assert session in await tool("session_search", query=anchor)
            assert anchor in await tool("session_event_search", query=anchor, session_id=session)
            await tool("session_event_read", session_id=session, seq=seq, before=1, after=1)
            await tool("session_event_trace", session_id=session, seq=seq)
        for session in corpus.seqs:
            await tool("session_trace", session_id=session)
        long_session, long_seq = corpus.long
        whole = await tool("session_event_read", session_id=long_session, seq=long_seq)
        assert "SLACK_BOT_TOKEN=[redacted:slack-token]" in whole  # the spill, fetched whole
    everything = "\n".join([*texts, bridge_log.read_text(errors="replace")])
    assert not leaks(corpus.secrets, everything)


# -- `sessionquery call` -----------------------------------------------------------------


async def test_no_credential_reaches_sessionquery_call(stack: Stack) -> None:
    corpus = stack.corpus
    long_session, long_seq = corpus.long
    _, gh_seq, gh_anchor = next(a for a in corpus.anchors if a[0] == "s-transcript")
    calls = {
        "session_search": {"query": gh_anchor},
        "session_event_search": {"query": "redacted github token", "session_id": "s-transcript"},
        "session_trace": {"session_id": "s-transcript"},
        "session_event_trace": {"session_id": "s-transcript", "seq": gh_seq},
        "session_event_read": {"session_id": long_session, "seq": long_seq},
    }
    outputs: list[str] = []
    for name, arguments in calls.items():
        code, out, err = await cli(
            stack, "call", name, orjson.dumps(arguments).decode(), "--session", "s-caller",
            "--nats-url", stack.nats_url, "--subject-prefix", stack.subjects.prefix,
        )  # fmt: skip
        assert code == 0, (name, err[-2000:])
        outputs.extend((out, err))
    assert "s-transcript" in outputs[0]
    assert "SLACK_BOT_TOKEN=[redacted:slack-token]" in outputs[-2]  # the spill, printed whole
    assert not leaks(corpus.secrets, "\n".join(outputs))


# -- logs: every line of a whole run --------------------------------------------------------


def _claude_code_file(path: Path, session: str, text: str) -> Path:
    """A small Claude Code transcript (the shape its writer gives) whose messages hold
    ``text``, for ``import``."""

    def line(kind: str, uid: str, parent: str | None) -> bytes:
        return orjson.dumps({
            "type": kind, "sessionId": session, "uuid": uid, "parentUuid": parent, "cwd": CWD,
            "timestamp": "2026-12-01T10:00:00Z", "message": {"role": kind, "content": text},
        })  # fmt: skip

    path.write_bytes(line("user", "u-1", None) + b"\n" + line("assistant", "u-2", "u-1") + b"\n")
    return path


async def test_logs_stay_clean(stack: Stack) -> None:
    """Credentials in events (the corpus, an import, a dead-lettered event) and in the
    requesters' query text, through searches, reads, operator verbs, refused requests and a
    malformed one: no line the worker, its writer child, the import or this process logged
    holds one."""
    planted = [generate(shape) for shape in (
        "ghp_<A:36>", "sk-proj-<W:120>", "xoxb-<D:12>-<D:13>-<A:24>", "AKIA<U:16>",
        "glpat-<W:20>", "hf_<a:34>", "npm_<A:36>", "<A:20>9",
    )]  # fmt: skip
    gh, openai, slack, aws, gitlab, hf, npm, pw = planted
    imported_gh = generate("ghp_<A:36>")
    secrets = [*stack.corpus.secrets, *planted, imported_gh]
    refused_ids = ["refused-workspace", "refused-limit"]
    with capture_logs() as logs:
        # Queries holding credentials, answered.
        ok = await tool_call(stack, "session_search", query=f"deploy notes {gh}")
        assert ok["status"] == "ok", ok
        ok = await tool_call(stack, "session_event_search", query=openai, session_id="s-transcript")
        assert ok["status"] == "ok", ok
        ok = await operator(stack, "search", workspace=CWD, query=f"rotate {slack}")
        assert ok["status"] == "ok", ok
        ok = await operator(stack, "text", workspace=CWD, session_id="s-transcript", seq=2,
                            query=aws)  # fmt: skip
        assert ok["status"] == "ok", ok
        # Refused: a bad argument beside a credential-bearing query, on both paths.
        for rid, arguments in zip(refused_ids, (
            {"query": f"deploy {gitlab}", "workspace": "/"},
            {"query": hf, "limit": "many"},
        ), strict=True):  # fmt: skip
            reply, _ = await call(stack.nc, stack.subjects, "session_search",
                                  body(rid, caller="s-caller", **arguments))  # fmt: skip
            assert reply["status"] == "error", reply
        refused = await operator(stack, "search", workspace=CWD, query=f"@@@ {npm} ###",
                                 surfaces=["nowhere"])  # fmt: skip
        assert refused["status"] == "error", refused
        # A malformed request (not an envelope) whose bytes hold a credential.
        malformed = b'{"request_id": "malformed", "arguments": {"query": "' + pw.encode()
        answer = await stack.nc.request(
            stack.subjects.tool("session_search"), malformed, timeout=15
        )
        assert orjson.loads(answer.data)["status"] == "error"
        # An import of a transcript holding a credential, into the same stream.
        transcript = _claude_code_file(
            stack.tmp / "imported.jsonl", "s-imported", f"export GITHUB_TOKEN={imported_gh}"
        )
        imported = await cli(
            stack, "import", str(transcript), "--format", "claude-code", *nats_args(stack)
        )
        assert imported[0] == 0, imported

        async def indexed() -> bool:
            reply = await operator(stack, "timeline", workspace=CWD, session_id="s-imported")
            return reply["status"] == "ok" and len(reply["result"]["events"]) >= 3

        await until(indexed, within=60)
        text = _all_text(await operator(stack, "timeline", workspace=CWD, session_id="s-imported"))
        assert "GITHUB_TOKEN=[redacted:github-token]" in text
        assert imported_gh not in text
    log = worker_log(stack)
    lines = [line for line in log.splitlines() if line.strip()]
    # The run was logged (the refused requests included), and nothing logged holds a value.
    assert len(lines) > 20
    for rid in refused_ids:
        assert any(rid in line for line in lines), rid
    everything = "\n".join([log, *imported[1:], *(_all_text(line) for line in logs)])
    leaked = leaks(secrets, everything)
    assert not leaked, [secrets.index(s) for s in leaked]
    # A refused query is an info line, never an error with a traceback of its text.
    assert "@@@" not in everything
