"""Issue 40's end-to-end check: a generated corpus of transcript-like sessions with
credentials of every kind planted (env dumps, curl traces, config files, PEM blocks across
lines, JSON with escapes, URL-encoded values, a long output past the spill threshold and
past 64 KiB, a title and a first prompt) and a near-miss set, published raw (as a runtime
would) to a real nats-server and ingested by a real worker. Then every surface is read,
and none holds a credential: both searches, reads with windows, traces, the spilled result
fetched through its locator, the operator verbs, dead letters, ``status`` and every log
line of the run. Every event is still found by the words around its secret; the near
misses come back unchanged; a search for the kind finds the marker.

Every credential is generated here from its shape (``contracts.redaction.generate``).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import random
import string
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from nats.aio.client import Client as NATS
from structlog.testing import capture_logs

from contracts.envelope import SpillLocator
from contracts.redaction import RULES, generate
from contracts.spill_fetch import fetch_spilled
from contracts.subjects import Subjects
from tests._harness import body, call, config_for, event, publish, until
from tests._index import connect
from worker.worker import Worker

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


def _all_text(value: Any) -> str:
    return orjson.dumps(value).decode() if not isinstance(value, str) else value


async def _status(nats_url: str, subjects: Subjects, db: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQUERY_")}
    env.update({"PYTHONPATH": str(REPO), "SESSIONQUERY_SUBJECT_PREFIX": subjects.prefix})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "worker.cli", "status", "--nats-url", nats_url, "--db", str(db),
        "--stream", subjects.events_stream, "--events-prefix", subjects.events_prefix, "--json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return out.decode() + err.decode()


async def _operator(nc: NATS, subjects: Subjects, verb: str, **arguments: Any) -> Any:
    msg = await nc.request(
        subjects.operator(verb), orjson.dumps({"arguments": arguments}), timeout=15
    )
    return orjson.loads(msg.data)


async def test_no_credential_reaches_any_surface(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    corpus = build(random.Random(40))
    assert len(corpus.kinds) >= 30
    dead_letters: list[bytes] = []

    async def on_dead(msg: Any) -> None:
        dead_letters.append(msg.data + orjson.dumps(dict(msg.headers or {})))

    sub = await nc.subscribe(subjects.deadletter, cb=on_dead)
    seen: list[str] = []  # everything any surface showed
    found_anchor: dict[str, bool] = {}
    config = config_for(
        subjects, tmp_path, spill_threshold_bytes=16 * 1024, spill_preview_bytes=1000
    )
    with capture_logs() as logs:
        worker = await Worker.start(nc, config)  # it creates the stream
        try:
            await publish(nc, subjects, corpus.events)

            async def indexed() -> bool:
                return (await worker.indexed_through() or 0) >= len(corpus.events)

            await until(indexed, within=60)
            await until(lambda: bool(dead_letters), within=10)

            async def tool(name: str, **arguments: Any) -> dict[str, Any]:
                reply, _ = await call(nc, subjects, name, body(caller="s-caller", **arguments))
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
            whole = await fetch_spilled(nc, SpillLocator.model_validate(spilled["spill"]))
            seen.append(bytes(whole).decode())
            assert "[redacted:slack-token]" in seen[-1]  # past 64 KiB, still redacted

            seen.append(_all_text(await _operator(nc, subjects, "workspaces")))
            seen.append(_all_text(await _operator(nc, subjects, "sessions", workspace=CWD)))
            for session, seq, anchor in corpus.anchors:
                seen.append(
                    _all_text(await _operator(nc, subjects, "search", workspace=CWD, query=anchor))
                )
                for verb in ("event", "text", "relations"):
                    reply = await _operator(
                        nc, subjects, verb, workspace=CWD, session_id=session, seq=seq
                    )
                    seen.append(_all_text(reply))
            for session in corpus.seqs:
                for verb in ("timeline", "lineage"):
                    reply = await _operator(nc, subjects, verb, workspace=CWD, session_id=session)
                    seen.append(_all_text(reply))
            seen.append(_all_text(await _operator(nc, subjects, "deadletters")))
            # A refused operator query: one info line, no traceback, no text.
            refused = await _operator(nc, subjects, "search", workspace=CWD, query="@@@ ### !!")
            assert refused["status"] == "error"
            seen.append(await _status(nats_url, subjects, config.db_path))
        finally:
            await worker.stop()
            await sub.unsubscribe()
    seen.extend(_all_text(line) for line in logs)
    seen.extend(d.decode("utf-8", "replace") for d in dead_letters)
    everything = "\n".join(seen)

    leaked = [s for s in corpus.secrets if s in everything or json.dumps(s)[1:-1] in everything]
    assert not leaked, f"{len(leaked)} credentials reached a surface"
    missing = [a for a, ok in found_anchor.items() if not ok]
    assert not missing, f"events not found by the words around their secret: {missing}"

    conn = connect(config.db_path)
    try:
        for (session, seq), payload in corpus.near_misses.items():
            [(raw,)] = conn.execute(
                "SELECT event_json(doc) FROM events WHERE session_id = ? AND seq = ?",
                (session, seq),
            )
            assert orjson.loads(raw)["payload"] == payload
        stored = "\n".join(r for (r,) in conn.execute("SELECT event_json(doc) FROM events"))
    finally:
        conn.close()
    assert not [s for s in corpus.secrets if s in stored]

    # The refused operator query: no line quotes it, none is an error with a traceback.
    assert not [line for line in logs if "@@@" in str(line)]
    assert not [line for line in logs if line.get("log_level") == "error"]
