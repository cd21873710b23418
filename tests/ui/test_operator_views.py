"""What the operator replies carry for a person's page, over a real worker and stream:
the tools' titles (a first prompt, marked), a title filter that searches them, match
offsets instead of marks to parse, and an event's readable text in parts."""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.ui._history import (
    BRACKET_WORD,
    CHILD,
    DEEP_SEQ,
    DEEP_WORD,
    FIRST_PROMPT,
    HISTORY,
    SESSIONS,
)
from tests.ui._operator import ask, result
from tests.ui.conftest import Ui

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_untitled_sessions_carry_their_first_prompt_as_title(
    ui: Ui, module_nc: NATS, module_subjects: Subjects
) -> None:
    found = await result(module_nc, module_subjects, "sessions", workspace=HISTORY)
    assert {s["session_id"] for s in found["sessions"]} == set(SESSIONS)
    for row in found["sessions"]:
        # The harness text before it is skipped; cut to the tools' 80 characters.
        assert row["title_derived"] is True
        assert row["title"].startswith(FIRST_PROMPT[:40]) and len(row["title"]) <= 81
    filtered = await result(
        module_nc, module_subjects, "sessions", workspace=HISTORY, title_contains="STOP HOOK"
    )
    assert filtered["total"] == 3
    none = await result(
        module_nc, module_subjects, "sessions", workspace=HISTORY, title_contains="reminder"
    )
    assert none["total"] == 0  # harness text is not the title
    lineage = await result(
        module_nc, module_subjects, "lineage", workspace=HISTORY, session_id=CHILD
    )
    assert all(n["title"] and n["title_derived"] for n in lineage["nodes"])
    timeline = await result(
        module_nc, module_subjects, "timeline", workspace=HISTORY, session_id=CHILD
    )
    assert timeline["title_derived"] and timeline["title"].startswith(FIRST_PROMPT[:40])


async def test_search_hits_carry_titles_and_match_offsets(
    ui: Ui, module_nc: NATS, module_subjects: Subjects
) -> None:
    found = await result(
        module_nc, module_subjects, "search", workspace=HISTORY, query=BRACKET_WORD
    )
    assert found["hits"]
    for hit in found["hits"]:
        assert hit["title"] and hit["title_derived"]
        text, spans = hit["excerpt_text"], hit["highlights"]
        assert "[X]" in text  # the literal checkbox, as text
        assert spans and all(text[s:e].lower() == BRACKET_WORD for s, e in spans)
        # The model's form escapes the checkbox, so it cannot read as a match.
        assert "\\[X\\]" in hit["excerpt"] and f"[{BRACKET_WORD}]" in hit["excerpt"]


async def test_text_shows_the_part_holding_a_deep_match(
    ui: Ui, module_nc: NATS, module_subjects: Subjects
) -> None:
    sid = SESSIONS[2]
    part = await result(
        module_nc, module_subjects, "text", workspace=HISTORY, session_id=sid, seq=DEEP_SEQ,
        query=DEEP_WORD, size=2_000,
    )  # fmt: skip
    assert part["tool"] == "Bash" and part["type"] == "tool/result"
    assert part["first_match"] > 3_000 and part["offset"] > 0 and part["size"] > 70_000
    text = part["text"]
    assert "\n" in text and "\\n" not in text  # the output's lines, not its JSON
    assert [text[s:e] for s, e in part["highlights"]] == [DEEP_WORD]
    start = await result(
        module_nc, module_subjects, "text", workspace=HISTORY, session_id=sid, seq=5
    )
    assert start["text"].startswith("pytest -q tests/test_hooks.py")  # the call's command
    foreign = await ask(
        module_nc, module_subjects, "text", workspace="/elsewhere", session_id=sid, seq=5
    )
    assert foreign["error"]["code"] == "SESSION_QUERY_NOT_FOUND"
    empty = await ask(
        module_nc, module_subjects, "text", workspace=HISTORY, session_id=sid, seq=5, query="the"
    )
    assert empty["status"] == "ok"  # function words alone are still a query
