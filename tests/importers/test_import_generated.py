"""The generated fixtures imported by the real command and read through the tools: what
the model sees of real-shaped histories (titles, ended sessions, typed harness text)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import fixture_gen as gen
from tests.importers.test_import_tools import ask, import_args, indexed, sessionquery
from worker.importers.base import SpawnLinks, safe_id
from worker.importers.pipeline import convert_file
from worker.worker import Worker

# A rollout still being written: its last event is a minute old, so import leaves it live.
RECENT: str = "0199cccc-0000-7000-8000-00000000f001"
CALLER = safe_id(gen.CODEX_OLD)


def _recent_rollout(folder: Path) -> Path:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    lines = [
        {"timestamp": now, "type": "session_meta",
         "payload": {"id": RECENT, "timestamp": now, "cwd": gen.CWD}},
        {"timestamp": now, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "steam wand pressure still low"}]}},
    ]  # fmt: skip
    path = folder / f"rollout-2025-02-03T09-00-00-{RECENT}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _expected_events(paths: list[Path]) -> int:
    """What the converters make of the files, plus an end per session the import ends:
    every one but the recent rollout's (their last events are from 2025)."""
    events, sessions, links = 0, set[str](), SpawnLinks()
    for path in paths:  # in path order, as import reads them: a transcript before its agents
        fmt = "codex" if "rollout-" in path.name else "claude-code"
        outs, _ = convert_file(fmt, path, links=links)
        events += len(outs)
        sessions |= {out.session_id for out in outs}
    return events + len(sessions - {RECENT})


# The module's event loop, where its tests share one import and worker (they only ask it).
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def nc(module_nc: NATS) -> NATS:
    """The module's connection: its tests run in the module's loop, beside the worker."""
    return module_nc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def imported(
    module_nc: NATS,
    nats_url: str,
    module_subjects: Subjects,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Worker]:
    """The fixtures imported (twice) and indexed, once for the module, on its own names."""
    nc, subjects, tmp_path = module_nc, module_subjects, tmp_path_factory.mktemp("imported")
    recent = _recent_rollout(tmp_path)
    paths = [gen.ROOT / "claude-code", gen.ROOT / "codex", recent]
    expected = _expected_events([*sorted(gen.files(), key=str), recent])
    args = import_args(nats_url, subjects, *paths, idle="1800")
    first = await asyncio.to_thread(sessionquery, *args)
    assert first.returncode == 0, first.stderr
    assert f"published {expected} events (0 already in the stream)" in first.stderr
    # Again: the same events, the idle ends too, all dropped as duplicates.
    second = await asyncio.to_thread(sessionquery, *args)
    assert f"published {expected} events ({expected} already in the stream)" in second.stderr
    js = nc.jetstream()
    assert (await js.stream_info(subjects.events_stream)).state.messages == expected
    async with indexed(nc, subjects, tmp_path, expected) as worker:
        yield worker


def _title_lines(text: str) -> dict[str, str]:
    """Session id -> its line in a session_search result."""
    found = {}
    for line in text.splitlines():
        head = line.strip().split(" ", 2)
        if len(head) == 3 and head[0].rstrip(".").isdigit():
            found[head[1]] = line
    return found


async def test_imported_sessions_read_like_their_sources(nc: NATS, imported: Worker) -> None:
    query = "espresso OR descaling OR tamper OR brew_ratio OR steam OR frother OR burr"
    found = _title_lines(await ask(nc, imported, "session_search", CALLER, query=query))
    assert {gen.FRESH, gen.RENAMED, gen.CONTINUED, safe_id(gen.CODEX_NEW), RECENT} <= set(found)
    # Titles: the first real prompt (marked) where no title was given; summaries of other
    # sessions title nothing; a custom title wins; a sub-agent has its Task's description.
    assert f"⟦{gen.FRESH_PROMPT}⟧ (first prompt)" in found[gen.FRESH]
    assert f"⟦{gen.CONTINUED_PROMPT}⟧ (first prompt)" in found[gen.CONTINUED]
    assert f"⟦{gen.CODEX_NEW_PROMPT}⟧ (first prompt)" in found[safe_id(gen.CODEX_NEW)]
    assert f"⟦{gen.CUSTOM_TITLE}⟧ ·" in found[gen.RENAMED]
    everything = "\n".join(found.values())
    assert not any(title in everything for title in gen.FOREIGN_SUMMARIES)
    trace = await ask(nc, imported, "session_trace", CALLER, session_id=gen.FRESH)
    assert f"⟦{gen.TASK_DESCRIPTION}⟧" in trace
    # Sessions whose last event is months old ended on import; the recent one is live.
    assert "· persisted ·" in found[gen.FRESH] and "· live ·" in found[RECENT]
    live = await ask(nc, imported, "session_search", CALLER, query=query, availability=["live"])
    assert set(_title_lines(live)) == {RECENT}


async def test_harness_text_is_searchable_but_not_the_users_words(
    nc: NATS, imported: Worker
) -> None:
    said = await ask(nc, imported, "session_search", CALLER, query="sandbox_mode",
                     event_types=["message/user"])  # fmt: skip
    assert safe_id(gen.CODEX_NEW) not in said
    context = await ask(nc, imported, "session_search", CALLER, query="sandbox_mode")
    assert safe_id(gen.CODEX_NEW) in context and "message/context" in context
