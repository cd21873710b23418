"""An empty cwd ("") is no cwd: such a session sees only itself, never another "" one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from contracts.errors import ErrorCode
from tests.tools._corpus import Index, event, sqlite_index, start
from tests.tools._harness import as_caller, outcome, run_tool, tool_error
from worker.signals import ExecutionSignal

ALONE = "s-empty-cwd-a"
OTHER = "s-empty-cwd-b"


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    async with sqlite_index(tmp_path, sample=False) as value:
        for session_id, word in ((ALONE, "pelican"), (OTHER, "pelican secret")):
            await value.apply(
                [
                    start(session_id, ""),
                    event(session_id, 2, "message/user", {"text": word}, surface="user"),
                ]
            )
        yield value


async def test_an_empty_cwd_session_sees_only_itself(index: Index) -> None:
    caller = as_caller(ALONE)
    headers = await index.store.read_titles([ALONE], signal=ExecutionSignal())
    assert headers[ALONE].header.cwd is None
    text = await run_tool(index.store, "session_search", {"query": "pelican"}, execution=caller)
    assert "no recorded workspace" in text and OTHER not in text
    own = await run_tool(
        index.store, "session_event_search", {"query": "pelican"}, execution=caller
    )
    assert "seq 2" in own
    for tool, args in (
        ("session_trace", {"session_id": OTHER}),
        ("session_event_read", {"session_id": OTHER, "seq": 2}),
        ("session_event_search", {"session_id": OTHER, "query": "pelican"}),
    ):
        foreign = outcome(await tool_error(index.store, tool, args, execution=caller))
        missing_args = {**args, "session_id": "s-missing"}
        missing = outcome(await tool_error(index.store, tool, missing_args, execution=caller))
        assert foreign[0] == ErrorCode.NOT_FOUND.value
        assert foreign[1].replace(OTHER, "<id>") == missing[1].replace("s-missing", "<id>")
