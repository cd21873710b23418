"""The sample corpus onto a stream, and the ready-to-paste command that queries it.

``serve --sample-corpus`` and ``demo`` publish it; the printed example is a ``call`` of
the first workspace's live session, as a shell runs it.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.publish import EventRoutes
from contracts.subjects import Subjects
from worker.commands import sample_corpus as sample


async def publish_sample_corpus(nc: NATS, subjects: Subjects) -> tuple[int, int]:
    """Publish the sample corpus; returns (events published, last stream sequence).

    Idempotent: a session whose last event the stream already holds is skipped, and each
    event carries ``Nats-Msg-Id`` so a concurrent re-run is dropped by the server; the
    index stores each (session, seq) once in any case.
    """
    from nats.js.errors import NotFoundError

    from worker.replica.ingest_consumer import ensure_events_stream

    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for event in sample.sample_events():
        by_session.setdefault(event["session_id"], []).append(event)
    last = 0
    published = 0
    routes = EventRoutes(subjects)
    for session_id, events in by_session.items():
        subject = routes.subject(events[0])  # the session/start: its cwd names the key
        try:
            held = await js.get_last_msg(
                subjects.events_stream, subjects.stored_session(routes.key(session_id), session_id)
            )
        except NotFoundError:
            held = None
        if held is not None and held.data and orjson.loads(held.data).get("seq") == len(events):
            last = max(last, int(held.seq or 0))
            continue
        for event in events:
            ack = await js.publish(
                subject,
                orjson.dumps(event),
                headers={"Nats-Msg-Id": sample.message_id(event)},
            )
            last = max(last, ack.seq)
            published += 1
    return published, last


def example_command(url: str, subjects: Subjects) -> str:
    argv = [command_path(), "call", "session_search", "--nats-url", url]
    if subjects.prefix != Subjects().prefix:
        argv += ["--subject-prefix", subjects.prefix]
    argv += ["--session", sample.DEMO_CALLER]
    argv += ["--step-start-seq", str(current_step_start(sample.DEMO_CALLER))]
    argv.append('{"query": "flaky refund test"}')
    return " ".join(shlex.quote(a) for a in argv)


def command_path() -> str:
    """How to run ``sessionquery`` from a shell so that a printed line works as pasted.

    ``make run`` does not put the venv on PATH: the bare name is used only when PATH finds
    this same installation, else the script beside this interpreter, by absolute path.
    """
    beside = Path(sys.executable).parent / "sessionquery"
    on_path = shutil.which("sessionquery")
    if on_path is not None and (not beside.exists() or Path(on_path).samefile(beside)):
        return "sessionquery"
    return str(beside.absolute()) if beside.exists() else "sessionquery"


def current_step_start(session_id: str) -> int:
    """Seq of the latest ``step/start`` of a sample session (its current step)."""
    seqs = [
        int(e["seq"])
        for e in sample.sample_events()
        if e["session_id"] == session_id and e["type"] == "step/start"
    ]
    return max(seqs)
