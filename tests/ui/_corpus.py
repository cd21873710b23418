"""The UI tests' corpus: the sample corpus plus one hostile session in its payments
workspace — markup in its title and messages, a CJK message, and an event of ~1 MiB —
and a workspace that looks like imported histories (``_history``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import orjson
from nats.aio.client import Client as NATS

from contracts.limits import MAX_EVENT_BYTES
from contracts.publish import EventRoutes, event_headers
from contracts.subjects import Subjects
from tests._harness import sample_corpus_worker, until
from tests.ui._history import history_events
from tests.ui._scripts import script_events
from worker.commands.sample_corpus import PAYMENTS
from worker.worker import Worker

HOSTILE: Final = "s-ui-hostile"
# Markup an agent could have printed: it must show as text, never run or render.
SCRIPT: Final = "<script>window.__pwned = 1</script>"
IMG: Final = '<img src=x onerror="window.__pwned = 2">'
TITLE: Final = f"Hostile {SCRIPT} title"
CJK_TEXT: Final = "数据库连接超时的问题已经修复，重试逻辑在支付回调里"
CJK_QUERY: Final = "连接超时"
BIG_SEQ: Final = 5
BIG_MARKER: Final = "BIGEVENT-END-MARKER"


def _event(seq: int, type_: str, surface: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": HOSTILE,
        "seq": seq,
        "event_id": f"e-{HOSTILE}-{seq}",
        "type": type_,
        "surface": surface,
        "time": f"2026-12-01T10:00:{seq:02d}.000Z",
        "payload": payload,
    }


def big_output() -> str:
    """A tool output that makes its event ~1 MiB, under the largest event accepted (each
    newline is two bytes of JSON)."""
    line = "log line: retrying webhook delivery after timeout; attempt failed\n"
    room = MAX_EVENT_BYTES - 40_000
    return (line * (room // len(line)))[: room - len(BIG_MARKER)] + BIG_MARKER


def hostile_events() -> list[dict[str, Any]]:
    return [
        _event(1, "session/start", "system", {"cwd": PAYMENTS, "parent_session_id": None}),
        _event(2, "session/title", "system", {"title": TITLE}),
        _event(3, "message/user", "user", {"text": f"Please look at {SCRIPT} and {IMG}"}),
        _event(4, "message/assistant", "assistant", {"text": CJK_TEXT}),
        _event(BIG_SEQ, "tool/result", "tool", {"tool": "bash", "output": big_output()}),
        _event(6, "message/assistant", "assistant", {"text": f"Done. {IMG}"}),
    ]


async def publish(nc: NATS, subjects: Subjects, events: list[dict[str, Any]]) -> None:
    routes, js = EventRoutes(subjects), nc.jetstream()
    for item in events:
        await js.publish(
            routes.subject(item),
            orjson.dumps(item),
            headers=event_headers(item["session_id"], item["seq"]),
        )


@asynccontextmanager
async def ui_worker(nc: NATS, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Worker]:
    """A worker holding the sample corpus, the hostile session, the generated histories and
    the long events in several scripts (``_scripts``), all of it indexed."""
    async with sample_corpus_worker(nc, subjects, tmp_path) as worker:
        await publish(nc, subjects, hostile_events() + history_events() + script_events())
        stream = await nc.jetstream().stream_info(subjects.events_stream)

        async def indexed() -> bool:
            return (await worker.indexed_through() or 0) >= stream.state.last_seq

        await until(indexed, within=30)
        yield worker
