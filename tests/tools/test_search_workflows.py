"""Search workflows over a protocol fake: internal paging, count caps, generation changes,
filtered-out replies, current-step exclusion, signal forwarding and abort handling."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contracts.errors import ErrorCode
from tests.tools._fakes import CALLER, GEN, FakeService, event_hit, header, session_hit, settle
from tests.tools._harness import as_caller, run_tool, tool_error
from worker.signals import ExecutionSignal
from worker.store import EventSearchPage, Generation, GenerationChanged, SessionSearchPage
from worker.tools import ToolConfig


def paged_sessions(
    service: FakeService, pages: list[list[str]], epochs: list[int] | None = None
) -> None:
    """search_sessions serves ``pages`` of hit ids, chained by cursors c1, c2, ..."""
    for page in pages:
        for sid in page:
            if sid not in service.headers:
                service.add(header(sid), f"Title {sid}")

    async def search(*, cursor: str | None, **_: Any) -> SessionSearchPage:
        index = 0 if cursor is None else int(cursor[1:])
        epoch = epochs[index] if epochs else 1
        return SessionSearchPage(
            hits=tuple(session_hit(service.headers[sid]) for sid in pages[index]),
            next_cursor=f"c{index + 1}" if index + 1 < len(pages) else None,
            generation=Generation(epoch=epoch, seq=100 + index),
        )

    service.overrides["search_sessions"] = search


# --- internal paging ---


async def test_internal_paging_follows_cursors_and_deduplicates() -> None:
    service = FakeService.with_caller()
    paged_sessions(service, [["s-1", "s-2"], ["s-2", "s-3"], ["s-4"]])
    text = await run_tool(service, "session_search", {"query": "flaky"})
    cursors = [c.args["cursor"] for c in service.calls_of("search_sessions")]
    assert cursors == [None, "c1", "c2"]
    assert "Found 4 sessions" in text
    assert text.count("s-2 ") == 1
    assert "Showing the first" not in text
    # The model-facing page size is never the provider's concern of the model; the
    # provider gets ToolConfig.provider_page_size (100 by default).
    assert {c.args["page_size"] for c in service.calls_of("search_sessions")} == {100}


async def test_internal_paging_page_size_is_bounded_by_service_limits() -> None:
    service = FakeService.with_caller()
    paged_sessions(service, [["s-1"]])
    await run_tool(
        service, "session_search", {"query": "x"}, config=ToolConfig(provider_page_size=500)
    )
    assert service.calls_of("search_sessions")[0].args["page_size"] == 100


async def test_internal_paging_generation_change_mid_search() -> None:
    service = FakeService.with_caller()
    paged_sessions(service, [["s-1"], ["s-2"]], epochs=[1, 2])
    error = await tool_error(service, "session_search", {"query": "x"})
    assert error.code is ErrorCode.GENERATION_CHANGED
    assert "retry the whole search" in error.message


async def test_internal_paging_provider_generation_changed_error() -> None:
    service = FakeService.with_caller(header("s-1"))

    async def search(*, cursor: str | None, **_: Any) -> SessionSearchPage:
        if cursor is not None:
            raise GenerationChanged("cursor epoch 1, index epoch 2")
        return SessionSearchPage(
            hits=(session_hit(service.headers["s-1"]),), next_cursor="c1", generation=GEN
        )

    service.overrides["search_sessions"] = search
    error = await tool_error(service, "session_search", {"query": "x"})
    assert error.code is ErrorCode.GENERATION_CHANGED
    assert "epoch" not in error.message


# --- count caps ---


async def test_count_caps_stop_at_max_search_results_and_say_so() -> None:
    service = FakeService.with_caller()
    paged_sessions(service, [["s-1", "s-2"], ["s-3", "s-4"], ["s-5"]])
    text = await run_tool(
        service, "session_search", {"query": "x"}, config=ToolConfig(max_search_results=3)
    )
    assert "Found 3 sessions" in text and "s-4" not in text
    assert "Showing the first 3 sessions; more may match. Narrow the query or filters" in text
    assert len(service.calls_of("search_sessions")) == 2  # no page fetched beyond the cap


async def test_count_caps_exact_fit_is_not_capped() -> None:
    service = FakeService.with_caller()
    paged_sessions(service, [["s-1", "s-2"], ["s-3"]])
    text = await run_tool(
        service, "session_search", {"query": "x"}, config=ToolConfig(max_search_results=3)
    )
    assert "Found 3 sessions" in text and "Showing the first" not in text


async def test_count_caps_event_search() -> None:
    service = FakeService.with_caller(header("s-t"))

    async def search_events(*, cursor: str | None, **_: Any) -> EventSearchPage:
        start = 0 if cursor is None else int(cursor)
        return EventSearchPage(
            header=service.headers["s-t"],
            hits=tuple(event_hit("s-t", seq) for seq in range(start + 1, start + 3)),
            next_cursor=str(start + 2),
            generation=GEN,
        )

    service.overrides["search_events"] = search_events
    text = await run_tool(
        service, "session_event_search", {"query": "x", "session_id": "s-t"},
        config=ToolConfig(max_search_results=5),
    )  # fmt: skip
    assert "Found 5 events" in text and "Showing the first 5 events" in text


# --- no results versus filtered out ---


async def test_filters_removed_every_match_is_said() -> None:
    service = FakeService.with_caller()

    async def search(**_: Any) -> SessionSearchPage:
        return SessionSearchPage(hits=(), next_cursor=None, generation=GEN, filtered_out=True)

    service.overrides["search_sessions"] = search
    text = await run_tool(service, "session_search", {"query": "flaky", "event_types": ["x/y"]})
    assert "the filters removed every match" in text


async def test_no_matches_is_said_plainly() -> None:
    service = FakeService.with_caller()
    text = await run_tool(service, "session_search", {"query": "flaky"})
    assert text == 'No earlier session in this workspace matches "flaky".'


async def test_unsearchable_query_is_an_argument_error_not_no_results() -> None:
    service = FakeService.with_caller()
    error = await tool_error(service, "session_search", {"query": "  ...  "})
    assert error.code is ErrorCode.INVALID_ARGUMENTS
    assert service.calls == []


# --- current-step exclusion ---


@pytest.mark.parametrize(
    "arguments,model_to",
    [({}, None), ({"to_seq": 80}, 80), ({"to_seq": 10}, 10), ({"from_seq": 5}, None)],
)
async def test_current_step_exclusion_with_step_start_seq(
    arguments: dict[str, Any], model_to: int | None
) -> None:
    """The current step is the search's scope; the model's range stays a filter of its own."""
    service = FakeService.with_caller()
    await run_tool(
        service, "session_event_search", {"query": "x", **arguments},
        execution=as_caller(step_start_seq=57),
    )  # fmt: skip
    (call,) = service.calls_of("search_events")
    assert call.args["session_id"] == CALLER
    assert call.args["scope_to_seq"] == 56
    assert call.args["events"].seq_to == model_to


async def test_current_step_exclusion_without_step_start_seq_uses_latest_step() -> None:
    service = FakeService.with_caller()

    async def latest(*, session_id: str, event_type: str, **_: Any) -> int:
        assert (session_id, event_type) == (CALLER, "step/start")
        return 40

    service.overrides["latest_seq_of_type"] = latest
    await run_tool(service, "session_event_search", {"query": "x", "session_id": CALLER})
    assert service.calls_of("search_events")[0].args["scope_to_seq"] == 39


async def test_current_step_exclusion_empty_range_searches_nothing() -> None:
    service = FakeService.with_caller()
    text = await run_tool(
        service, "session_event_search", {"query": "x", "from_seq": 60},
        execution=as_caller(step_start_seq=57),
    )  # fmt: skip
    assert service.calls_of("search_events") == []
    assert "No event before the current step" in text


async def test_current_step_exclusion_not_applied_to_other_sessions() -> None:
    service = FakeService.with_caller(header("s-t"))
    await run_tool(
        service, "session_event_search", {"query": "x", "session_id": "s-t"},
        execution=as_caller(step_start_seq=57),
    )  # fmt: skip
    (call,) = service.calls_of("search_events")
    assert call.args["events"].seq_to is None and call.args["scope_to_seq"] is None
    assert service.calls_of("latest_seq_of_type") == []


# --- signal forwarding, abort reasons, quiescence ---


async def test_signal_forwarding_exact_signal_for_direct_tools() -> None:
    service = FakeService.with_caller(header("s-t"))
    signal = ExecutionSignal()
    cases: list[tuple[str, dict[str, Any]]] = [
        ("session_trace", {"session_id": "s-t"}),
        ("session_event_trace", {"session_id": "s-t", "seq": 2}),
        ("session_event_read", {"session_id": "s-t", "seq": 2}),
    ]
    for tool, arguments in cases:
        await run_tool(service, tool, arguments, signal=signal)
    assert service.calls and all(call.signal is signal for call in service.calls)


async def test_signal_forwarding_search_gets_a_child_with_the_search_deadline() -> None:
    service = FakeService.with_caller()
    paged_sessions(service, [["s-1"]])
    signal = ExecutionSignal()
    await run_tool(
        service,
        "session_search",
        {"query": "x"},
        signal=signal,
        config=ToolConfig(search_timeout_ms=30_000),
    )
    seen = {id(call.signal): call.signal for call in service.calls}
    assert len(seen) == 1  # the same child for every call of the execution
    (child,) = seen.values()
    assert child is not signal and child.deadline is not None


async def test_abort_reason_preservation_parent_cancel_reaches_the_search() -> None:
    service = FakeService.with_caller()
    started = asyncio.Event()

    async def search(*, signal: ExecutionSignal, **_: Any) -> SessionSearchPage:
        started.set()
        raise await signal.wait()  # a provider interrupted by the signal

    service.overrides["search_sessions"] = search
    signal = ExecutionSignal()
    task = asyncio.create_task(tool_error(service, "session_search", {"query": "x"}, signal=signal))
    await started.wait()
    signal.cancel("requester cancelled r-42")
    error = await task
    assert (error.code, error.message) == (ErrorCode.CANCELLED, "requester cancelled r-42")


async def test_search_deadline_becomes_timeout() -> None:
    service = FakeService.with_caller()

    async def search(*, signal: ExecutionSignal, **_: Any) -> SessionSearchPage:
        raise await signal.wait()

    service.overrides["search_sessions"] = search
    error = await tool_error(
        service, "session_search", {"query": "x"}, config=ToolConfig(search_timeout_ms=1)
    )
    assert error.code is ErrorCode.TIMEOUT


async def test_backend_quiescence_after_cancel() -> None:
    """A backend that ignores cancellation is still awaited before the reply."""
    service = FakeService.with_caller(header("s-t"))
    started, release = asyncio.Event(), asyncio.Event()
    finished = []

    async def read_event(**_: Any) -> None:
        started.set()
        await release.wait()  # ignores the signal
        finished.append(True)
        return None

    service.overrides["read_event"] = read_event
    signal = ExecutionSignal()
    task = asyncio.create_task(
        tool_error(service, "session_event_read", {"session_id": "s-t", "seq": 1}, signal=signal)
    )
    await started.wait()
    signal.cancel("stop now")
    await settle()
    assert not task.done()
    release.set()
    error = await task
    assert finished == [True]
    assert (error.code, error.message) == (ErrorCode.CANCELLED, "stop now")


# --- the record's defaults, as the tools run them ---


async def test_defaults_match_the_record() -> None:
    """100 results, a 30 s search deadline, at most 4 title workers, with no configuration."""
    config = ToolConfig()
    assert (
        config.max_search_results,
        config.search_timeout_ms,
        config.persisted_inspect_concurrency,
    ) == (100, 30_000, 4)
    ids = [f"s-{n:03d}" for n in range(150)]
    paged_sessions(service := FakeService.with_caller(), [ids[:100], ids[100:]])
    remaining: list[float] = []

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        remaining.append(signal.remaining() or 0.0)
        return await service._default_read_titles(session_ids=session_ids, signal=signal)

    service.overrides["read_titles"] = read_titles
    text = await run_tool(service, "session_search", {"query": "x"})  # the default config
    assert "Found 100 sessions" in text and "s-100" not in text
    assert "Showing the first 100 sessions" in text
    # The caller's own header read, then the 100 hits' titles in at most 4 observations.
    assert len(service.calls_of("read_titles")) == 1 + 4
    # The search's child signal carries the 30 s deadline (seconds, not milliseconds).
    assert remaining and all(29.0 < left <= 30.0 for left in remaining)
