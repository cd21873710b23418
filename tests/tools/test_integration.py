"""The five tools over the real SQLite FTS provider, live and persisted sessions.

Over 400 lines: the five tools over one real corpus, one behaviour per test.

The corpus is the shipped two-workspace sample (payments and website) plus a few events
per test. The caller is the live payments grandchild, in its current step.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from contracts.errors import ErrorCode
from tests.tools._corpus import Index, event, sqlite_index, start
from tests.tools._harness import as_caller, outcome, run_tool, tool_error
from worker.commands.sample_corpus import (
    DEMO_CALLER,
    PAY_CHILD,
    PAY_ROOT,
    PAY_SIBLING,
    PAYMENTS,
    WEB_CHILD,
    WEB_ROOT,
    WEBSITE,
)
from worker.signals import ExecutionSignal
from worker.store.writer_protocol import IngestItem
from worker.tools import ToolConfig

GOLDEN = Path(__file__).parent / "golden"
CURRENT_STEP = 8  # the caller's latest step/start in the sample corpus
LIVE_HELPER = "s-pay-live-helper"


def current_step_events() -> list[dict[str, Any]]:
    """What the runtime indexes for this very tool call: it must never be found."""
    return [
        event(
            DEMO_CALLER,
            10,
            "tool/call",
            {"tool": "session_event_search", "arguments": {"query": "flaky refund"}},
            surface="tool",
            minute=30,
        )
    ]


def live_helper() -> list[dict[str, Any]]:
    return [
        start(LIVE_HELPER, PAYMENTS),
        event(LIVE_HELPER, 2, "message/user", {"text": "Is the flaky refund test fixed?"},
              surface="user", minute=1),
    ]  # fmt: skip


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    async with sqlite_index(tmp_path) as value:
        await value.apply(current_step_events())
        await value.apply(live_helper())
        yield value


async def call(index: Index, tool: str, arguments: dict[str, Any], **kw: Any) -> str:
    kw.setdefault("execution", as_caller(DEMO_CALLER, step_start_seq=CURRENT_STEP))
    return await run_tool(index.store, tool, arguments, **kw)


async def fail(index: Index, tool: str, arguments: dict[str, Any], **kw: Any) -> tuple[str, str]:
    kw.setdefault("execution", as_caller(DEMO_CALLER, step_start_seq=CURRENT_STEP))
    return outcome(await tool_error(index.store, tool, arguments, **kw))


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text + "\n")
    assert path.read_text() == text + "\n", f"golden {path.name} differs"


# --- representative rendering (goldens) ---


async def test_representative_rendering_session_search(index: Index) -> None:
    text = await call(index, "session_search", {"query": "RefundLedger OR RetryPolicy"})
    check_golden("session_search", text)


async def test_representative_rendering_session_search_with_a_date(index: Index) -> None:
    # The date is read, said, and favours its day; "2026?" is no word the reply names.
    text = await call(
        index, "session_search", {"query": "why did the refund test fail on November 30, 2026?"}
    )
    check_golden("session_search_dated", text)


async def test_representative_rendering_session_event_search(index: Index) -> None:
    text = await call(index, "session_event_search", {"query": "refund", "session_id": PAY_ROOT})
    check_golden("session_event_search", text)


async def test_representative_rendering_session_trace(index: Index) -> None:
    check_golden("session_trace", await call(index, "session_trace", {"session_id": PAY_CHILD}))


async def test_representative_rendering_session_event_trace(index: Index) -> None:
    text = await call(index, "session_event_trace", {"session_id": PAY_ROOT, "seq": 10})
    check_golden("session_event_trace", text)


async def test_representative_rendering_session_event_read(index: Index) -> None:
    text = await call(
        index, "session_event_read", {"session_id": PAY_CHILD, "seq": 11, "before": 2, "after": 1}
    )
    check_golden("session_event_read", text)


async def test_event_read_renders_multi_line_payload_text_below_the_exact_json(
    index: Index,
) -> None:
    text = await call(index, "session_event_read", {"session_id": PAY_ROOT, "seq": 7})
    check_golden("session_event_read_multiline", text)
    exact = text.split("Exact event JSON:\n", 1)[1].split("\n", 1)[0]
    # The exact JSON stays one line, byte for byte (quoted as recalled data); the readable
    # copy follows it.
    assert json.loads(exact.removeprefix("⟦").removesuffix("⟧"))["seq"] == 7
    assert "\npayload.output:\n> ⟦============================= test session starts" in text


# --- workspace authority over the real provider ---


async def test_cross_session_search_never_shows_another_workspace(index: Index) -> None:
    # "flaky" also matches the website's /media/2019/flaky-test.png.
    text = await call(index, "session_search", {"query": "flaky"})
    assert PAY_ROOT in text and LIVE_HELPER in text
    assert WEB_CHILD not in text and WEB_ROOT not in text and "website" not in text
    assert DEMO_CALLER not in text.split("Next:")[0]  # the caller's own session is omitted


async def test_exact_workspace_authorization_foreign_targets_are_not_found(index: Index) -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("session_trace", {"session_id": WEB_ROOT}),
        ("session_event_trace", {"session_id": WEB_ROOT, "seq": 2}),
        ("session_event_read", {"session_id": WEB_ROOT, "seq": 2}),
        ("session_event_search", {"query": "hugo", "session_id": WEB_ROOT}),
    ]
    for tool, arguments in cases:
        code, _ = await fail(index, tool, arguments)
        assert code == ErrorCode.NOT_FOUND.value


async def test_oracle_resistance_missing_and_foreign_give_identical_bytes(
    index: Index,
) -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("session_trace", {"session_id": WEB_ROOT}),
        ("session_event_trace", {"session_id": WEB_ROOT, "seq": 2}),
        ("session_event_read", {"session_id": WEB_ROOT, "seq": 2, "after": 3}),
        ("session_event_search", {"query": "hugo", "session_id": WEB_ROOT}),
    ]
    searches: list[dict[str, Any]] = [
        {"query": "flaky", "parent_session_ids": [WEB_ROOT]},
        {"query": "flaky", "parent_session_ids": [WEB_ROOT], "include_root_sessions": True},
        {"query": "flaky", "session_ids": [WEB_CHILD]},
    ]
    foreign = [await fail(index, tool, arguments) for tool, arguments in cases]
    foreign_search = [await call(index, "session_search", arguments) for arguments in searches]
    removed = await index.writer.purge(session_ids=[WEB_ROOT, WEB_CHILD])
    assert removed == 2
    missing = [await fail(index, tool, arguments) for tool, arguments in cases]
    missing_search = [await call(index, "session_search", arguments) for arguments in searches]
    assert foreign == missing
    assert foreign_search == missing_search
    assert "root session" in foreign_search[1]  # the root marker stayed ORed in


async def test_parent_preauthorization_workspace_parent_filters(index: Index) -> None:
    text = await call(
        index, "session_search", {"query": "refund", "parent_session_ids": [PAY_ROOT]}
    )
    assert PAY_CHILD in text and f"1. {PAY_ROOT}" not in text


async def test_caller_without_cwd_sees_only_itself(tmp_path: Path) -> None:
    async with sqlite_index(tmp_path, sample=False) as index:
        await index.apply(
            [start("s-lonely", None), start("s-other", None),
             event("s-lonely", 2, "message/user", {"text": "hello there"}, surface="user")]
        )  # fmt: skip
        execution = as_caller("s-lonely")
        assert "s-lonely" in await run_tool(index.store, "session_trace", {}, execution=execution)
        error = await tool_error(
            index.store, "session_trace", {"session_id": "s-other"}, execution=execution
        )
        assert error.code is ErrorCode.NOT_FOUND
        text = await run_tool(
            index.store, "session_event_search", {"query": "hello"}, execution=execution
        )
        assert "seq 2" in text


# --- hidden-boundary pruning ---


async def test_hidden_boundary_pruning_over_sqlite(tmp_path: Path) -> None:
    async with sqlite_index(tmp_path, sample=False) as index:
        await index.apply(
            [
                start("s-top", "/w/a"),
                start("s-mid-foreign", "/w/b", parent="s-top"),
                start("s-below-foreign", "/w/a", parent="s-mid-foreign"),
                start("s-kid", "/w/a", parent="s-top"),
                start("s-caller", "/w/a"),
            ]
        )
        execution = as_caller("s-caller")
        top = await run_tool(
            index.store, "session_trace", {"session_id": "s-top"}, execution=execution
        )
        assert "s-kid" in top
        assert "s-mid-foreign" not in top and "s-below-foreign" not in top
        below = await run_tool(
            index.store, "session_trace", {"session_id": "s-below-foreign"}, execution=execution
        )
        assert "lineage continues" in below
        assert "s-mid-foreign" not in below and "s-top" not in below


def _escaped(session_id: str) -> str:
    """A JSON string spelling every character of the id as a \\u escape, upper-case hex."""
    return '"' + "".join(f"\\u{ord(c):04X}" for c in session_id) + '"'


def _json_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_json_strings(k), *_json_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _json_strings(v)]
    return []


async def test_hidden_ids_spelled_with_json_escapes_are_never_printed(tmp_path: Path) -> None:
    """The exact JSON hides a foreign parent or citation however the publisher spelled it."""
    async with sqlite_index(tmp_path, sample=False) as index:
        await index.apply([start("s-foreign", "/w/b"), start("s-caller", "/w/a")])
        raw = [
            orjson.dumps(start("s-orphan", "/w/a", parent="s-foreign")),
            orjson.dumps(
                event("s-orphan", 2, "message/assistant", {"text": "from elsewhere"},
                      cites=[("s-foreign", 1), ("s-caller", 1)])
            ),
        ]  # fmt: skip
        items = []
        for data in raw:
            index.stream_seq += 1
            escaped = data.replace(b'"s-foreign"', _escaped("s-foreign").encode())
            assert escaped != data
            items.append(IngestItem(stream_seq=index.stream_seq, data=escaped))
        assert not (await index.writer.apply(items)).rejected
        for seq in (1, 2):
            text = await run_tool(
                index.store, "session_event_read", {"session_id": "s-orphan", "seq": seq},
                execution=as_caller("s-caller"),
            )  # fmt: skip
            exact = text.split("Exact event JSON:\n", 1)[1].split("\n", 1)[0]
            # The exact JSON is shown as recalled data: between ⟦ and ⟧.
            assert exact.startswith("⟦") and exact.endswith("⟧")
            strings = _json_strings(orjson.loads(exact[1:-1]))
            assert "s-foreign" not in strings and "not available in this workspace" in strings
            assert "s-foreign" not in text
        assert "s-caller" in strings  # a visible citation stays as it was


# --- current-step exclusion ---


async def test_current_step_exclusion_over_sqlite(index: Index) -> None:
    text = await call(index, "session_event_search", {"query": "flaky refund"})
    # seq 9 (this step's user message) and seq 10 (this call's indexed arguments) are hidden.
    assert "seq 9" not in text and "seq 10" not in text
    assert "No event before the current step" in text
    earlier = await call(index, "session_event_search", {"query": "RetryPolicy"})
    assert "seq 5" in earlier


async def test_current_step_exclusion_with_a_filter_is_not_filtered_out(index: Index) -> None:
    """Matches in the current step are out of scope: with a model filter the reply must not
    claim that the filters removed them."""
    text = await call(
        index, "session_event_search", {"query": "flaky refund", "event_types": ["tool/result"]}
    )
    assert "No event before the current step" in text
    assert "filters removed" not in text


async def test_current_step_exclusion_without_step_start_seq(index: Index) -> None:
    text = await call(
        index, "session_event_search", {"query": "flaky refund"}, execution=as_caller(DEMO_CALLER)
    )
    assert "seq 9" not in text and "seq 10" not in text


async def test_read_your_writes_waits_for_the_callers_earlier_events(tmp_path: Path) -> None:
    async with sqlite_index(tmp_path, sample=False) as index:
        await index.apply([start("s-new", "/w/a")])
        task = asyncio.create_task(
            run_tool(
                index.store,
                "session_event_search",
                {"query": "brand new words"},
                execution=as_caller("s-new", step_start_seq=4),
            )
        )
        await asyncio.sleep(0)
        assert not task.done()
        await index.apply(
            [event("s-new", 2, "message/user", {"text": "brand new words"}, surface="user"),
             event("s-new", 3, "message/assistant", {"text": "noted"})]
        )  # fmt: skip
        text = await task
        assert "seq 2" in text


# --- live and persisted sessions, filters ---


async def test_live_and_persisted_availability_filter(index: Index) -> None:
    live = await call(index, "session_search", {"query": "flaky", "availability": ["live"]})
    assert LIVE_HELPER in live and PAY_ROOT not in live
    persisted = await call(
        index, "session_search", {"query": "flaky", "availability": ["persisted"]}
    )
    assert PAY_ROOT in persisted and LIVE_HELPER not in persisted


async def test_filters_removed_every_match_over_sqlite(index: Index) -> None:
    text = await call(
        index, "session_search", {"query": "RetryPolicy", "event_types": ["compaction"]}
    )
    assert "the filters removed every match" in text
    nothing = await call(index, "session_search", {"query": "zeppelin"})
    assert nothing == 'No earlier session in this workspace matches "zeppelin".'


async def test_event_read_window_limit_and_target_only(index: Index) -> None:
    code, message = await fail(
        index, "session_event_read", {"session_id": PAY_ROOT, "seq": 3, "before": 51}
    )
    assert code == ErrorCode.INVALID_ARGUMENTS.value and "at most 50" in message
    text = await call(index, "session_event_read", {"session_id": PAY_ROOT, "seq": 3})
    assert "Before" not in text and "After" not in text
    code, message = await fail(index, "session_event_read", {"session_id": PAY_ROOT, "seq": 999})
    assert code == ErrorCode.NOT_FOUND.value and "seq 999" in message


async def test_event_read_target_is_the_exact_stored_json(index: Index) -> None:
    text = await call(index, "session_event_read", {"session_id": PAY_SIBLING, "seq": 4})
    window = await index.store.read_event(
        PAY_SIBLING, 4, before=0, after=0, signal=ExecutionSignal()
    )
    assert window is not None and window.target is not None
    # Byte for byte, marked as recalled data (it holds no ⟦ or ⟧ to escape).
    assert f"⟦{window.target.raw_json}⟧" in text.splitlines()


async def test_cancelled_search_over_sqlite_keeps_the_reason(index: Index) -> None:
    signal = ExecutionSignal()
    signal.cancel("requester went away")
    code, message = await fail(index, "session_search", {"query": "flaky"}, signal=signal)
    assert (code, message) == (ErrorCode.CANCELLED.value, "requester went away")


async def test_website_caller_sees_its_own_workspace(index: Index) -> None:
    text = await call(index, "session_search", {"query": "hugo"}, execution=as_caller(WEB_CHILD))
    assert WEB_ROOT in text and PAY_ROOT not in text
    trace = await call(index, "session_trace", {}, execution=as_caller(WEB_CHILD))
    assert WEB_ROOT in trace and WEBSITE not in trace


async def test_internal_paging_over_sqlite_cursors(index: Index) -> None:
    small = ToolConfig(provider_page_size=2, max_search_results=5)
    full = await call(index, "session_event_search", {"query": "refund", "session_id": PAY_ROOT})
    capped = await call(
        index, "session_event_search", {"query": "refund", "session_id": PAY_ROOT}, config=small
    )
    assert "Found 5 events" in capped and "Showing the first 5 events" in capped

    # The pages followed internally give the same best-first order as one big page.
    def seqs(text: str) -> list[str]:
        return [line.split(" ")[1] for line in text.splitlines() if line.startswith("seq ")]

    assert seqs(capped) == seqs(full)[:5]
    one_by_one = await call(
        index, "session_search", {"query": "refund"}, config=ToolConfig(provider_page_size=1)
    )
    assert one_by_one == await call(index, "session_search", {"query": "refund"})
