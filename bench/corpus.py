"""Deterministic corpus generator: sessions of agent work, as the SESSIONS stream carries them.

Over 400 lines: one generator: plans, event bodies and publishing share the seeded model.

``plan_sessions(config)`` is cheap (one small record per session) and is what the load
generator uses to know ids, seqs and workspaces; ``generate(config)`` streams event dicts
in stream order with memory bounded by the number of sessions, never by events. The same
seed gives byte-identical output.

Stream order interleaves small groups of sessions (a few agents working at once), so a
writer batch touches several sessions. Per session: ``session/start`` (cwd, and for ~30%
a parent in the same workspace: chains and trees), ``session/title``, steps of
``step/start``, ``message/user``, tool calls and results (test output, stack traces,
file reads, grep hits), ``message/assistant``; now and then a retitle, a ``compaction``
that ``replaces`` earlier positions (sometimes an earlier compaction: transitive chains),
an assistant message that ``cites`` an event of an earlier session in the same workspace,
and ``session/end`` for ~80% of sessions.

CLI: ``python -m bench.corpus --out FILE.jsonl [--sessions N --events N --workspaces N
--seed N]`` also writes ``FILE.jsonl.sidecar.json`` (the session plan) for the load
generator.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any, Final

import orjson

from bench import vocabulary as vocab
from contracts.publish import EventRoutes

# 2026-01-01T00:00:00Z: a fixed origin so timestamps are part of the deterministic output.
ORIGIN_MS: Final = 1_767_225_600_000
MIN_EVENTS: Final = 4  # start, title, one step, end


@dataclass(frozen=True, slots=True)
class CorpusConfig:
    sessions: int = 2000
    events: int = 500  # per session
    workspaces: int = 24
    seed: int = 7
    # Sessions whose events are interleaved in the stream (agents working at once).
    interleave: int = 4
    # Sessions go to workspaces in turn (equal workspaces) instead of at random.
    round_robin: bool = False

    def __post_init__(self) -> None:
        if self.sessions < 1 or self.workspaces < 1 or self.interleave < 1:
            raise ValueError("sessions, workspaces and interleave must be at least 1")
        if self.events < MIN_EVENTS:
            raise ValueError(f"events per session must be at least {MIN_EVENTS}")

    @property
    def total_events(self) -> int:
        return self.sessions * self.events


@dataclass(frozen=True, slots=True)
class SessionPlan:
    index: int
    session_id: str
    cwd: str
    parent_session_id: str | None
    events: int
    ended: bool
    start_ms: int


def workspace_paths(config: CorpusConfig) -> tuple[str, ...]:
    # Independent of the seed: a second corpus (e.g. extra events under load) with another
    # seed has new session ids but lands in the same workspaces.
    rng = random.Random(7919)
    paths = []
    for i in range(config.workspaces):
        project = vocab.PROJECTS[i % len(vocab.PROJECTS)]
        suffix = "" if i < len(vocab.PROJECTS) else f"-{i // len(vocab.PROJECTS)}"
        paths.append(f"/home/{rng.choice(vocab.USERS)}/src/{project}{suffix}")
    return tuple(paths)


def session_id(config: CorpusConfig, index: int) -> str:
    return f"s{config.seed}-{index:06d}"


def plan_sessions(config: CorpusConfig) -> list[SessionPlan]:
    """One record per session; parents are earlier sessions of the same workspace."""
    rng = random.Random(config.seed)
    cwds = workspace_paths(config)
    by_workspace: dict[int, list[str]] = {}
    plans = []
    for index in range(config.sessions):
        ws = rng.randrange(config.workspaces)
        if config.round_robin:
            ws = index % config.workspaces
        earlier = by_workspace.setdefault(ws, [])
        parent = None
        if earlier and rng.random() < 0.3:
            # Half continue the latest session (long chains), half fork any (wide trees).
            parent = earlier[-1] if rng.random() < 0.5 else rng.choice(earlier)
        sid = session_id(config, index)
        earlier.append(sid)
        plans.append(
            SessionPlan(
                index=index,
                session_id=sid,
                cwd=cwds[ws],
                parent_session_id=parent,
                events=config.events,
                ended=rng.random() < 0.8,
                start_ms=ORIGIN_MS + index * 600_000 + rng.randrange(300_000),
            )
        )
    return plans


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def generate(
    config: CorpusConfig,
    plans: list[SessionPlan] | None = None,
    text: Callable[[random.Random, str], _Text] | None = None,
) -> Iterator[dict[str, Any]]:
    """Every event of the corpus in stream order (see the module doc). ``plans`` and
    ``text`` replace the uniform sessions and their text (the archive shape)."""
    plans = plan_sessions(config) if plans is None else plans
    # Cite targets: sessions of the same workspace from earlier groups (already complete).
    finished: dict[str, list[SessionPlan]] = {}
    for start in range(0, len(plans), config.interleave):
        group = plans[start : start + config.interleave]
        streams = [
            _session_events(config, plan, tuple(finished.get(plan.cwd, ())), text) for plan in group
        ]
        rng = random.Random(config.seed * 104_729 + start)
        live = list(streams)
        while live:
            for stream in list(live):
                chunk = list(islice(stream, rng.randint(1, 8)))
                if not chunk:
                    live.remove(stream)
                yield from chunk
        for plan in group:
            finished.setdefault(plan.cwd, []).append(plan)


def _event(
    plan: SessionPlan,
    seq: int,
    time_ms: int,
    type_: str,
    surface: str,
    payload: dict[str, Any],
    replaces: list[int] | None = None,
    cites: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "session_id": plan.session_id,
        "seq": seq,
        "event_id": f"e{plan.session_id}-{seq:06d}",
        "type": type_,
        "surface": surface,
        "time": iso_ms(time_ms),
        "payload": payload,
    }
    if replaces:
        event["replaces"] = replaces
    if cites:
        event["cites"] = cites
    return event


def _session_events(
    config: CorpusConfig,
    plan: SessionPlan,
    cite_pool: tuple[SessionPlan, ...],
    make_text: Callable[[random.Random, str], _Text] | None = None,
) -> Iterator[dict[str, Any]]:
    rng = random.Random(config.seed * 1_000_003 + plan.index)
    text = (make_text or _Text)(rng, plan.cwd)
    clock = plan.start_ms
    total = plan.events
    body_count = total - 1 if plan.ended else total
    start_payload: dict[str, Any] = {"cwd": plan.cwd, "model": rng.choice(("m-large", "m-fast"))}
    if plan.parent_session_id is not None:
        start_payload["parent_session_id"] = plan.parent_session_id
    yield _event(plan, 1, clock, "session/start", "system", start_payload)
    clock += rng.randrange(50, 2000)
    yield _event(plan, 2, clock, "session/title", "system", {"title": text.title()})
    seq = 2
    for spec in islice(_steps(rng, text, cite_pool), body_count - 2):
        seq += 1
        clock += rng.randrange(200, 45_000)
        type_, surface, payload, replaces, cites = spec(seq)
        yield _event(plan, seq, clock, type_, surface, payload, replaces, cites)
    if plan.ended:
        clock += rng.randrange(200, 5000)
        reason = rng.choice(("completed", "user_exit", "error"))
        yield _event(plan, total, clock, "session/end", "system", {"reason": reason})


# A step yields functions of the seq they land on, so replaces can point backwards.
_Spec = tuple[str, str, dict[str, Any], list[int] | None, list[dict[str, Any]] | None]
_StepFn = Callable[[int], _Spec]


def _steps(
    rng: random.Random, text: _Text, cite_pool: tuple[SessionPlan, ...]
) -> Iterator[_StepFn]:
    step = 0
    # Positions a compaction may replace: everything since the previous compaction,
    # plus the previous compaction itself (so replacement chains are transitive).
    since_compaction: list[int] = []
    last_compaction: list[int] = []

    def plain(type_: str, surface: str, payload: dict[str, Any]) -> _StepFn:
        def make(seq: int) -> _Spec:
            since_compaction.append(seq)
            return (type_, surface, payload, None, None)

        return make

    def compaction(summary: str) -> _StepFn:
        def make(seq: int) -> _Spec:
            replaced = last_compaction[-1:] + since_compaction[-rng.randint(4, 12) :]
            since_compaction.clear()
            last_compaction.append(seq)
            return ("compaction", "system", {"summary": summary}, sorted(set(replaced)), None)

        return make

    def assistant(body: str) -> _StepFn:
        def make(seq: int) -> _Spec:
            cites = None
            if cite_pool and rng.random() < 0.08:
                picks = rng.sample(cite_pool, k=min(len(cite_pool), rng.randint(1, 2)))
                cites = [
                    {"session_id": p.session_id, "seq": rng.randint(3, p.events)} for p in picks
                ]
            since_compaction.append(seq)
            return ("message/assistant", "assistant", {"text": body}, None, cites)

        return make

    while True:
        step += 1
        yield plain("step/start", "system", {"step": step})
        yield plain("message/user", "user", text.user_payload())
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            tool, arguments, output, code = text.tool_exchange()
            yield plain("tool/call", "assistant", {"tool": tool, "arguments": arguments})
            result = {"tool": tool, "output": output, "exit_code": code}
            yield plain("tool/result", "tool", text.with_attachment(result))
        yield assistant(text.assistant_message())
        if rng.random() < 0.04:
            yield plain("session/title", "system", {"title": text.title()})
        if len(since_compaction) > 20 and rng.random() < 0.12:
            yield compaction(text.summary())


class _Text:
    """Realistic text for one session: its workspace has its own packages and modules."""

    def __init__(self, rng: random.Random, cwd: str) -> None:
        self.rng = rng
        self.cwd = cwd
        ws_rng = random.Random(cwd)
        self.packages = tuple(ws_rng.sample(vocab.PACKAGES, k=5))
        self.modules = tuple(vocab.module_path(ws_rng, self.packages) for _ in range(12))

    def path(self) -> str:
        return self.rng.choice(self.modules)

    def sentence(self, lo: int = 6, hi: int = 18) -> str:
        rng = self.rng
        parts = vocab.words(rng, rng.randint(lo, hi))
        # Sprinkle code: identifiers and paths inside prose, as people write them.
        if rng.random() < 0.6:
            parts.insert(rng.randrange(len(parts)), f"`{vocab.identifier(rng)}`")
        if rng.random() < 0.3:
            parts.insert(rng.randrange(len(parts)), self.path())
        sentence = " ".join(parts)
        # Upper-case the first letter only: str.capitalize() would lower camelCase names.
        return sentence[:1].upper() + sentence[1:] + rng.choice((".", ".", "?", "!"))

    def paragraph(self, lo: int, hi: int) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(lo, hi)))

    def title(self) -> str:
        rng = self.rng
        return (
            f"{rng.choice(vocab.VERBS).capitalize()} {rng.choice(vocab.NOUNS)} "
            f"{' '.join(vocab.words(rng, rng.randint(1, 4)))}"
        )

    def user_message(self) -> str:
        return self.paragraph(1, 3)

    def user_payload(self) -> dict[str, Any]:
        return {"text": self.user_message()}

    def with_attachment(self, payload: dict[str, Any]) -> dict[str, Any]:
        """A tool result as is (the archive shape adds images to some)."""
        return payload

    def assistant_message(self) -> str:
        return self.paragraph(2, 6)

    def summary(self) -> str:
        return "Summary of earlier work: " + self.paragraph(3, 6)

    def exception(self) -> tuple[str, str]:
        rng = self.rng
        return rng.choice(vocab.EXCEPTIONS), rng.choice(vocab.EXCEPTION_MESSAGES)

    def traceback(self) -> str:
        rng = self.rng
        frames = []
        for _ in range(rng.randint(2, 6)):
            frames.append(
                f'  File "{self.cwd}/{self.path()}", line {rng.randint(1, 900)}, '
                f"in {vocab.snake(rng)}\n    {vocab.snake(rng)}({vocab.snake(rng)}=value)"
            )
        exc, message = self.exception()
        return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{exc}: {message}"

    def test_output(self) -> tuple[str, int]:
        rng = self.rng
        total = rng.randint(5, 300)
        failed = rng.choice((0, 0, 1, 2, 5))
        test_file = f"tests/test_{rng.choice(vocab.NOUNS)}.py"
        lines = [
            "============================= test session starts ==============================",
            f"collected {total} items",
            "",
            f"{test_file} {'.' * min(total, 40)}{'F' * failed}",
        ]
        for _ in range(failed):
            name = f"test_{vocab.snake(rng)}"
            lines += [f"___ {name} ___", self.traceback()]
        for _ in range(failed):
            exc, message = self.exception()
            lines.append(f"FAILED {test_file}::test_{vocab.snake(rng)} - {exc}: {message}")
        elapsed = rng.randint(10, 9000) / 100
        lines.append(f"==== {failed} failed, {total - failed} passed in {elapsed:.2f}s ====")
        return "\n".join(lines), 1 if failed else 0

    def code(self) -> str:
        rng = self.rng
        lines = [f"from {vocab.dotted(rng).rsplit('.', 1)[0]} import {vocab.class_name(rng)}", ""]
        for _ in range(rng.randint(1, 4)):
            fn = vocab.snake(rng)
            lines += [
                f"def {fn}({rng.choice(vocab.NOUNS)}: str) -> {vocab.class_name(rng)}:",
                f'    """{self.sentence(4, 10)}"""',
                f"    {vocab.camel(rng)} = {vocab.dotted(rng)}({rng.choice(vocab.NOUNS)})",
                f"    return {vocab.camel(rng)}",
                "",
            ]
        return "\n".join(lines)

    def tool_exchange(self) -> tuple[str, dict[str, Any], str, int]:
        rng = self.rng
        tool = rng.choice(vocab.TOOLS)
        if tool in ("bash", "run_tests"):
            if rng.random() < 0.6 or tool == "run_tests":
                target = f"tests/test_{rng.choice(vocab.NOUNS)}.py"
                output, code = self.test_output()
                return tool, {"command": f"pytest -q {target} -k {vocab.snake(rng)}"}, output, code
            if rng.random() < 0.5:
                return tool, {"command": f"python -m {vocab.dotted(rng)}"}, self.traceback(), 1
            return tool, {"command": f"git diff --stat {self.path()}"}, self.diffstat(), 0
        if tool == "read_file":
            return tool, {"path": self.path()}, self.code(), 0
        if tool == "edit_file":
            path = self.path()
            old, new = vocab.snake(rng), vocab.snake(rng)
            return tool, {"path": path, "old": old, "new": new}, f"Edited {path}: {old} -> {new}", 0
        if tool == "grep":
            pattern = vocab.identifier(rng)
            hits = "\n".join(
                f"{self.path()}:{rng.randint(1, 900)}: {pattern}({vocab.snake(rng)})"
                for _ in range(rng.randint(0, 8))
            )
            return tool, {"pattern": pattern}, hits or "no matches", 0 if hits else 1
        listing = "\n".join(sorted(set(self.modules[: rng.randint(2, len(self.modules))])))
        return tool, {"path": self.cwd}, listing, 0

    def diffstat(self) -> str:
        rng = self.rng
        files = rng.sample(self.modules, k=rng.randint(1, 4))
        lines = [f" {f} | {rng.randint(1, 80)} {'+' * rng.randint(1, 9)}" for f in files]
        return "\n".join(lines) + f"\n {len(files)} files changed"


# Public name for generators that plant labelled content among this one's filler text
# (bench.relevance_corpus).
SessionText = _Text


# --- the archive shape (bench.archive) -------------------------------------------------------
#
# Shaped like a measured real archive (issue 41: 224,610 events of 2,009 sessions): sessions
# of 10-3,000 events (median ~60, mean ~115), many workspaces, event bytes p50 ~0.5 KB and
# p99 ~15 KB, tool results the largest share of the bytes, then assistant messages; long
# file reads and pasted logs, and now and then a base64 image (random bytes: incompressible,
# as a real PNG is).

ARCHIVE_MIN_EVENTS: Final = 10
ARCHIVE_MAX_EVENTS: Final = 3000
ARCHIVE_SESSIONS_PER_WORKSPACE: Final = 12


def archive_plans(total_events: int, seed: int = 7) -> tuple[CorpusConfig, list[SessionPlan]]:
    """Sessions whose lengths add up to exactly ``total_events`` (lognormal, clipped to
    10-3,000), over ``sessions / 12`` workspaces; the config their events are generated
    under."""
    if total_events < ARCHIVE_MIN_EVENTS:
        raise ValueError(f"an archive has at least {ARCHIVE_MIN_EVENTS} events")
    rng = random.Random(seed * 7_919 + 1)
    lengths: list[int] = []
    left = total_events
    while left > 0:
        n = int(rng.lognormvariate(4.1, 1.15))
        n = max(ARCHIVE_MIN_EVENTS, min(ARCHIVE_MAX_EVENTS, n, left))
        if 0 < left - n < ARCHIVE_MIN_EVENTS:
            n = left  # no session shorter than the minimum at the end
        lengths.append(n)
        left -= n
    sessions = len(lengths)
    workspaces = max(1, sessions // ARCHIVE_SESSIONS_PER_WORKSPACE)
    config = CorpusConfig(
        sessions=sessions, events=ARCHIVE_MIN_EVENTS, workspaces=workspaces, seed=seed
    )
    plans = [
        SessionPlan(
            index=p.index,
            session_id=p.session_id,
            cwd=p.cwd,
            parent_session_id=p.parent_session_id,
            events=n,
            ended=p.ended,
            start_ms=p.start_ms,
        )
        for p, n in zip(plan_sessions(config), lengths, strict=True)
    ]
    return config, plans


class ArchiveText(_Text):
    """``_Text`` with an archive's heavy tail: long file reads, pasted logs, images."""

    def log_lines(self, lo: int, hi: int) -> str:
        rng = self.rng
        level = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")
        minute = rng.randrange(1440)
        lines = []
        for i in range(rng.randint(lo, hi)):
            day = rng.randint(1, 28)
            stamp = f"2026-03-{day:02d}T{minute // 60:02d}:{minute % 60:02d}:{i % 60:02d}"
            lines.append(
                f"{stamp} {rng.choice(level)} [{vocab.dotted(rng)}] "
                f"{' '.join(vocab.words(rng, rng.randint(3, 12)))}"
                f" id={rng.getrandbits(48):012x} took={rng.randint(1, 9000)}ms"
            )
        return "\n".join(lines)

    def user_payload(self) -> dict[str, Any]:
        rng = self.rng
        text = self.user_message()
        roll = rng.random()
        if roll < 0.015:
            text += "\n\nHere is the log:\n```\n" + self.log_lines(20, 200) + "\n```"
        elif roll < 0.05:
            text += "\n\n```\n" + self.traceback() + "\n```"
        payload: dict[str, Any] = {"text": text}
        if rng.random() < 0.002:
            payload["images"] = [self.image()]
        return payload

    def image(self) -> dict[str, str]:
        rng = self.rng
        size = rng.randint(6_000, 90_000)
        return {"media_type": "image/png", "data": base64.b64encode(rng.randbytes(size)).decode()}

    def with_attachment(self, payload: dict[str, Any]) -> dict[str, Any]:
        if self.rng.random() < 0.003:
            payload["images"] = [self.image()]
        return payload

    def assistant_message(self) -> str:
        rng = self.rng
        text = self.paragraph(3, 14)
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2, 4))):
            text += "\n\n```python\n" + self.code() + "```\n\n" + self.paragraph(1, 4)
        return text

    def tool_exchange(self) -> tuple[str, dict[str, Any], str, int]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:
            path = self.path()
            body = "\n".join(self.code() for _ in range(rng.randint(2, 30)))
            numbered = "\n".join(f"{i:>5}\t{line}" for i, line in enumerate(body.split("\n"), 1))
            return "read_file", {"path": path}, numbered, 0
        if roll < 0.075:
            command = f"journalctl -u {rng.choice(vocab.PACKAGES)} --since today"
            return "bash", {"command": command}, self.log_lines(30, 300), 0
        if roll < 0.35:
            # Edits carry the old and the new text (an agent's edit call does).
            path, new = self.path(), self.code()
            old = new.split("\n\n", 1)[-1][: rng.randint(40, 400)]
            snippet = "\n".join(f"{i:>5}\t{line}" for i, line in enumerate(new.split("\n"), 1))
            arguments = {"path": path, "old_string": old, "new_string": new}
            return "edit_file", arguments, f"Edited {path}:\n{snippet[:600]}", 0
        return super().tool_exchange()


def generate_archive(total_events: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """The archive-shaped corpus in stream order, deterministic from the seed."""
    config, plans = archive_plans(total_events, seed)
    return generate(config, plans, ArchiveText)


def write_archive_jsonl(total_events: int, out: Path, seed: int = 7) -> int:
    """Write the archive-shaped corpus as our events JSON Lines; returns the event count."""
    count = 0
    with out.open("wb") as fh:
        for event in generate_archive(total_events, seed):
            fh.write(encode(event) + b"\n")
            count += 1
    return count


# --- writing a corpus ------------------------------------------------------------------------


def encode(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event)


def sidecar(config: CorpusConfig) -> dict[str, Any]:
    """What the load generator needs to know about a corpus, without its events."""
    return {
        "config": asdict(config),
        "workspaces": list(workspace_paths(config)),
        "sessions": [asdict(plan) for plan in plan_sessions(config)],
    }


def write_jsonl(config: CorpusConfig, out: Path) -> int:
    """Write the corpus as JSON lines plus ``<out>.sidecar.json``; returns the event count."""
    count = 0
    with out.open("wb") as fh:
        for event in generate(config):
            fh.write(encode(event))
            fh.write(b"\n")
            count += 1
    sidecar_path(out).write_text(json.dumps(sidecar(config)))
    return count


def sidecar_path(out: Path) -> Path:
    return out.with_name(out.name + ".sidecar.json")


def load_sidecar(path: Path) -> tuple[CorpusConfig, list[SessionPlan]]:
    data = json.loads(path.read_text())
    config = CorpusConfig(**data["config"])
    return config, [SessionPlan(**plan) for plan in data["sessions"]]


async def write_index(
    config: CorpusConfig,
    db_path: Path,
    *,
    batch: int = 500,
    text_cap_bytes: int = 64 * 1024,
    max_event_bytes: int = 1024 * 1024,
) -> int:
    """Apply the corpus straight through the index writer (no NATS), for store benches."""
    from worker.store.index.writer import SqliteIndexWriter
    from worker.store.writer_protocol import IngestItem

    writer = await SqliteIndexWriter.open(
        db_path, text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes
    )
    applied = 0
    try:
        items: list[IngestItem] = []
        for stream_seq, event in enumerate(generate(config), start=1):
            items.append(IngestItem(stream_seq=stream_seq, data=encode(event)))
            if len(items) >= batch:
                applied += (await writer.apply(items)).applied
                items = []
        if items:
            applied += (await writer.apply(items)).applied
    finally:
        await writer.close()
    return applied


def msg_id(event: dict[str, Any]) -> str:
    # Same (session_id, seq) -> same id: JetStream drops a re-publish inside its window.
    return f"{event['session_id']}:{event['seq']}"


async def ensure_events_stream(js: Any, subjects: Any) -> None:
    """The SESSIONS stream as everything creates it (contracts.streams)."""
    from contracts.streams import ensure_events_stream as ensure

    await ensure(js, subjects)


async def publish_events(
    js: Any,
    subjects: Any,
    events: Iterable[dict[str, Any]],
    *,
    max_in_flight: int = 256,
    routes: EventRoutes | None = None,
) -> int:
    """Publish with ``Nats-Msg-Id`` dedupe, at most ``max_in_flight`` unacknowledged.

    ``routes`` knows each session's workspace key from its session/start: pass the same
    one to calls that publish one corpus in chunks.

    Raises on the first failed acknowledgement (after awaiting the ones in flight).
    """
    window = asyncio.Semaphore(max_in_flight)
    pending: set[asyncio.Task[Any]] = set()
    failures: list[BaseException] = []
    count = 0
    routes = routes or EventRoutes(subjects)

    async def one(subject: str, data: bytes, headers: dict[str, str]) -> None:
        try:
            await js.publish(subject, data, headers=headers)
        except Exception as exc:  # collected and re-raised below
            failures.append(exc)
        finally:
            window.release()

    for event in events:
        if failures:
            break
        await window.acquire()
        task = asyncio.create_task(
            one(routes.subject(event), encode(event), {"Nats-Msg-Id": msg_id(event)})
        )
        pending.add(task)
        task.add_done_callback(pending.discard)
        count += 1
    if pending:
        await asyncio.gather(*pending)
    if failures:
        raise RuntimeError(f"{len(failures)} publishes failed") from failures[0]
    return count


async def publish_partitioned(
    js: Any,
    subjects: Any,
    events: Iterable[dict[str, Any]],
    count: int,
    routes: EventRoutes | None = None,
) -> dict[int, int]:
    """Publish (256 in flight) to a stream of ``count`` partitions; each stored event's
    partition by its stream seq, for a bench to know what a shard must hold. ``routes``:
    as for ``publish_events``."""
    from contracts.partitions import partition_of

    routes = routes or EventRoutes(subjects)
    stored: dict[int, int] = {}
    window = asyncio.Semaphore(256)
    pending: list[asyncio.Task[Any]] = []

    async def one(subject: str, data: bytes, headers: dict[str, str]) -> None:
        try:
            # A loaded machine can hold an ack past nats-py's 2 s default.
            ack = await js.publish(subject, data, headers=headers, timeout=60)
            stored[int(ack.seq)] = partition_of(subject.split(".")[-2], count)
        finally:
            window.release()

    for event in events:
        await window.acquire()
        subject = routes.subject(event)
        pending.append(
            asyncio.create_task(one(subject, encode(event), {"Nats-Msg-Id": msg_id(event)}))
        )
    await asyncio.gather(*pending)
    return stored


def last_seq_held(stored: dict[int, int], held: str, count: int) -> int:
    """The last stream seq within the partition set ``held`` (0: none)."""
    from contracts.partitions import PartitionSet

    members = PartitionSet.parse(held, count)
    return max((seq for seq, k in stored.items() if k in members), default=0)


async def publish_corpus(
    js: Any, subjects: Any, config: CorpusConfig, *, max_in_flight: int = 256
) -> int:
    await ensure_events_stream(js, subjects)
    return await publish_events(js, subjects, generate(config), max_in_flight=max_in_flight)


def add_size_arguments(
    parser: argparse.ArgumentParser, *, sessions: int = 2000, events: int = 500
) -> None:
    parser.add_argument("--sessions", type=int, default=sessions)
    parser.add_argument("--events", type=int, default=events, help="events per session")
    parser.add_argument("--workspaces", type=int, default=24)
    parser.add_argument("--seed", type=int, default=7)


def config_from_args(args: argparse.Namespace) -> CorpusConfig:
    return CorpusConfig(
        sessions=args.sessions, events=args.events, workspaces=args.workspaces, seed=args.seed
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.corpus", description=__doc__)
    add_size_arguments(parser)
    parser.add_argument("--out", type=Path, required=True, help="JSON lines file to write")
    args = parser.parse_args(argv)
    config = config_from_args(args)
    count = write_jsonl(config, args.out)
    print(f"wrote {count} events of {config.sessions} sessions to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
