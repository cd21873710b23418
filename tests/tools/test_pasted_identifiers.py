"""A pasted key, token, hash or id is a query (issue 42): one long run of letters, digits
and ``_`` was refused as "no searchable words"; the event holding it is found by it whole
and by its parts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.tools._corpus import Index, event, sqlite_index, start
from tests.tools._harness import as_caller, run_tool

CALLER = "s-paste-caller"
HOLDER = "s-paste-holder"
OTHER = "s-paste-other"
CWD = "/home/dev/keys"
# Long identifiers that are not credentials (a credential's shape is redacted when it is
# stored: its marker's words find it, tests/replica/test_redaction_surfaces.py).
KEY = "build_artifact_51" + "Qx7Lm2Zp" * 12
HASH = "cache_v1_" + "3f9a0c7e" * 8


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    async with sqlite_index(tmp_path, sample=False) as value:
        texts = {
            CALLER: "which session uploaded the artifact?",
            HOLDER: f"the upload manifest was {KEY}; the build cache entry was {HASH}",
            OTHER: "the upload manifest was another one",
        }
        for session_id, text in texts.items():
            await value.apply(
                [
                    start(session_id, CWD),
                    event(session_id, 2, "message/user", {"text": text}, surface="user"),
                ]
            )
        yield value


@pytest.mark.parametrize("query", [KEY, HASH, "build_artifact", HASH[9:]])
async def test_the_session_holding_a_pasted_identifier_is_found(index: Index, query: str) -> None:
    text = await run_tool(
        index.store, "session_search", {"query": query}, execution=as_caller(CALLER)
    )
    assert text.startswith("Found 1 session"), text
    assert HOLDER in text and OTHER not in text


async def test_the_event_holding_a_pasted_identifier_is_found(index: Index) -> None:
    text = await run_tool(
        index.store,
        "session_event_search",
        {"query": KEY, "session_id": HOLDER},
        execution=as_caller(CALLER),
    )
    assert "seq 2" in text and "[" in text, text
