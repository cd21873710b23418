"""Title enrichment: one-scan bounded batching, projection before dequeue, queued-work
suppression, started-worker quiescence, per-header validation and title fallbacks.

The unique ids are read in at most ``persisted_inspect_concurrency`` chunks, one
observation each; a chunk whose read fails is retried one id at a time."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from contracts.errors import ErrorCode
from tests.tools._fakes import CALLER, GEN, OTHER_CWD, FakeService, header, session_hit, settle
from tests.tools._harness import run_tool, tool_error
from tests.tools.test_service_boundary import BadStr, RecordingLogger
from worker.signals import ExecutionSignal
from worker.store import ServiceLimits, SessionHeader, SessionSearchPage, TitleObservation
from worker.tools import ToolConfig

HITS = [f"s-{n}" for n in range(10)]


class Observations(dict[str, TitleObservation]):
    """A read_titles result that can be watched for release (plain dicts take no weakref)."""


def search_service(parents: dict[str, str] | None = None) -> FakeService:
    service = FakeService.with_caller()
    for sid in HITS:
        service.add(header(sid, parent=(parents or {}).get(sid)), f"Title of {sid}")

    async def search(**_: Any) -> SessionSearchPage:
        hits = tuple(session_hit(service.headers[sid]) for sid in HITS)
        return SessionSearchPage(hits=hits, next_cursor=None, generation=GEN)

    service.overrides["search_sessions"] = search
    return service


def title_calls(service: FakeService) -> list[list[str]]:
    """read_titles calls after the caller's own identity lookup."""
    calls = [c.args["session_ids"] for c in service.calls_of("read_titles")]
    assert calls[0] == [CALLER]
    return calls[1:]


async def test_one_scan_bounded_title_batching() -> None:
    # Every hit shares one of two parents: each unique id is read exactly once.
    service = search_service({sid: ("s-0" if n % 2 else "s-1") for n, sid in enumerate(HITS)})
    in_flight = peak = 0
    gate = asyncio.Event()

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        nonlocal in_flight, peak
        if session_ids != [CALLER]:
            in_flight += 1
            peak = max(peak, in_flight)
            if peak == 3:
                gate.set()
            await gate.wait()  # hold the first workers so they overlap
            in_flight -= 1
        return await service._default_read_titles(session_ids=session_ids, signal=signal)

    service.overrides["read_titles"] = read_titles
    text = await run_tool(
        service,
        "session_search",
        {"query": "x"},
        config=ToolConfig(persisted_inspect_concurrency=3),
    )
    calls = title_calls(service)
    assert len(calls) == 3  # one observation per chunk, at most the concurrency
    read = [sid for ids in calls for sid in ids]
    assert sorted(read) == sorted(HITS)  # each once; parents are hits: no re-read
    assert peak == 3
    assert "⟦Title of s-7⟧" in text


async def test_projection_before_dequeue() -> None:
    # One worker, its chunk read fails: it dequeues the ids one by one.
    service = search_service()
    released: list[bool] = []
    previous: list[weakref.ref[Observations]] = []

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        if len(session_ids) > 1:
            raise RuntimeError("chunk read failed")
        if previous:
            gc.collect()
            released.append(previous[-1]() is None)
        result = Observations(
            await service._default_read_titles(session_ids=session_ids, signal=signal)
        )
        if session_ids != [CALLER]:
            previous.append(weakref.ref(result))
        return result

    service.overrides["read_titles"] = read_titles
    text = await run_tool(
        service,
        "session_search",
        {"query": "x"},
        config=ToolConfig(persisted_inspect_concurrency=1),
    )
    assert "⟦Title of s-7⟧" in text
    assert len(released) == len(HITS) - 1
    assert all(released), "a worker kept a full observation while reading the next id"


async def _cancel_while_two_title_reads_run(*, chunk_reads_fail: bool) -> None:
    """Cancel a search while two title reads have started and hang: the failure waits for
    them to settle, and no queued id starts. With ``chunk_reads_fail`` every chunk read
    fails, so each worker falls back to its ids one by one."""
    service = search_service()
    started: list[str] = []
    settled: list[str] = []
    two_started, release = asyncio.Event(), asyncio.Event()

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        if chunk_reads_fail and len(session_ids) > 1:
            raise RuntimeError("chunk read failed")
        if session_ids != [CALLER]:
            started.append(session_ids[0])
            if len(started) == 2:
                two_started.set()
            await release.wait()  # a backend that ignores cancellation
            settled.append(session_ids[0])
        return await service._default_read_titles(session_ids=session_ids, signal=signal)

    service.overrides["read_titles"] = read_titles
    signal = ExecutionSignal()
    task = asyncio.create_task(
        tool_error(
            service,
            "session_search",
            {"query": "x"},
            signal=signal,
            config=ToolConfig(persisted_inspect_concurrency=2),
        )
    )
    await two_started.wait()
    signal.cancel("user interrupted")
    await settle()
    assert not task.done(), "the execution failed before started title reads settled"
    release.set()
    error = await task
    assert (error.code, error.message) == (ErrorCode.CANCELLED, "user interrupted")
    assert len(started) == 2 and sorted(settled) == sorted(started)  # no queued id started


async def test_queued_work_suppression_and_started_worker_quiescence() -> None:
    await _cancel_while_two_title_reads_run(chunk_reads_fail=False)


async def test_queued_work_suppression_in_per_id_retries() -> None:
    await _cancel_while_two_title_reads_run(chunk_reads_fail=True)


async def test_title_fallbacks_failure_and_missing_title_keep_the_result() -> None:
    service = search_service()
    service.titles["s-3"] = None
    logger = RecordingLogger()

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        # A read that includes s-5 or s-6 fails (the chunk, then that id alone); s-7's
        # observation is missing from every read.
        if "s-5" in session_ids:
            raise BadStr()
        if "s-6" in session_ids:
            raise RuntimeError("disk I/O error at /var/lib/secret")
        found = await service._default_read_titles(session_ids=session_ids, signal=signal)
        return {sid: obs for sid, obs in found.items() if sid != "s-7"}

    service.overrides["read_titles"] = read_titles
    text = await run_tool(service, "session_search", {"query": "x"}, logger=logger)
    lines = {line.split(" ")[1]: line for line in text.splitlines() if line[:1].isdigit()}
    assert "⟦Title of s-4⟧" in lines["s-4"]
    assert "(untitled)" in lines["s-3"]
    for sid in ("s-5", "s-6", "s-7"):
        assert "(title unavailable)" in lines[sid]
    assert "secret" not in text
    # Every failure logged through the sanitizer: the two failed chunks (s-3..s-5 and
    # s-6..s-7 of four chunks) and the two ids that failed alone when retried.
    assert len(logger.events) == 4


@pytest.mark.parametrize(
    "malformed",
    [
        pytest.param(lambda h: TitleObservation(header=h, title=42), id="title-not-text"),  # type: ignore[arg-type]
        pytest.param(lambda h: "garbage", id="observation-not-an-observation"),
        pytest.param(lambda h: TitleObservation(header=None, title="x"), id="no-header"),  # type: ignore[arg-type]
    ],
)
async def test_title_fallbacks_malformed_observation_stays_with_its_id(
    malformed: Callable[[SessionHeader], Any],
) -> None:
    service = search_service()
    logger = RecordingLogger()

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        found = dict(await service._default_read_titles(session_ids=session_ids, signal=signal))
        if "s-3" in found:
            found["s-3"] = malformed(service.headers["s-3"])
        return found

    service.overrides["read_titles"] = read_titles
    text = await run_tool(service, "session_search", {"query": "x"}, logger=logger)
    lines = {line.split(" ")[1]: line for line in text.splitlines() if line[:1].isdigit()}
    assert "(title unavailable)" in lines["s-3"]
    assert "⟦Title of s-4⟧" in lines["s-4"]
    assert len(logger.events) == 1


async def test_per_header_validation_malformed_title_of_a_moved_session_fails_closed() -> None:
    service = search_service()

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        found = dict(await service._default_read_titles(session_ids=session_ids, signal=signal))
        if "s-4" in session_ids:
            found["s-4"] = TitleObservation(header=header("s-4", OTHER_CWD), title=7)  # type: ignore[arg-type]
        return found

    service.overrides["read_titles"] = read_titles
    error = await tool_error(service, "session_search", {"query": "x"})
    assert error.code is ErrorCode.NOT_FOUND


async def test_per_header_validation_title_of_a_moved_session_fails_closed() -> None:
    service = search_service()

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        found = dict(await service._default_read_titles(session_ids=session_ids, signal=signal))
        if "s-4" in session_ids:
            found["s-4"] = TitleObservation(header=header("s-4", OTHER_CWD), title="moved")
        return found

    service.overrides["read_titles"] = read_titles
    error = await tool_error(service, "session_search", {"query": "x"})
    assert error.code is ErrorCode.NOT_FOUND
    assert "moved" not in error.message and "s-4" not in error.message


async def test_per_header_validation_direct_tool_title_mismatch_is_not_found() -> None:
    service = FakeService.with_caller(header("s-t"))
    reads = 0

    async def read_titles(*, session_ids: list[str], signal: ExecutionSignal) -> Any:
        nonlocal reads
        if session_ids == ["s-t"]:
            reads += 1
            if reads == 1:  # the title read (the preflight reads s-t with the caller)
                return {"s-t": TitleObservation(header=header("s-t", OTHER_CWD), title="x")}
        return await service._default_read_titles(session_ids=session_ids, signal=signal)

    service.overrides["read_titles"] = read_titles
    error = await tool_error(service, "session_event_read", {"session_id": "s-t", "seq": 2})
    missing = await tool_error(
        FakeService.with_caller(), "session_event_read", {"session_id": "s-t", "seq": 2}
    )
    assert (error.code, error.message) == (missing.code, missing.message)


async def test_parent_outside_the_workspace_is_not_named() -> None:
    service = search_service({"s-2": "s-far-parent", "s-3": "s-gone-parent", "s-4": "s-1"})
    service.add(header("s-far-parent", OTHER_CWD), "secret title")
    text = await run_tool(service, "session_search", {"query": "x"})
    assert "s-far-parent" not in text and "secret title" not in text
    assert "s-gone-parent" not in text
    blocks = text.split("\n\n")
    far = next(b for b in blocks if b.startswith("3. s-2 "))
    gone = next(b for b in blocks if b.startswith("4. s-3 "))
    assert "parent: not available in this workspace" in far
    assert "parent: not available in this workspace" in gone
    assert "parent: s-1 ⟦Title of s-1⟧" in next(b for b in blocks if b.startswith("5. s-4 "))


async def test_a_provider_of_inline_title_reads_gets_one_observation() -> None:
    # ServiceLimits.title_read_workers=1 (the SQLite store's): chunks could not overlap,
    # so every unique id is read in ONE observation whatever the configured concurrency.
    service = search_service({sid: "s-0" for sid in HITS[1:]})
    service.limits_value = ServiceLimits(title_read_workers=1)
    text = await run_tool(
        service,
        "session_search",
        {"query": "x"},
        config=ToolConfig(persisted_inspect_concurrency=3),
    )
    calls = title_calls(service)
    assert len(calls) == 1 and sorted(calls[0]) == sorted(HITS)
    assert "⟦Title of s-7⟧" in text
