"""Oracle resistance: another workspace's id answers exactly like an id that never existed.

For each of the five tools (and the session_ids / parent_session_ids filters of
session_search), a request naming a session of workspace B, or an event in it, is compared
with the same request naming a missing id of the same length: the reply bytes (body and
headers, with the request id and the named id masked) are identical, both or neither are
spilled, and the minimum latency over many interleaved runs differs by less than a small
bound. Min-of-many is robust to a noisy machine; the bound is loose enough not to flake and
tight enough to catch a gross oracle (a extra query per foreign id, a fetched payload).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from contracts.errors import ErrorCode
from tests.hostile._harness import (
    A_ROOT,
    B_CANARIES,
    B_CHILD,
    B_ROOT,
    CALLER,
    Corpus,
    LiveWorker,
    LogWatch,
    LoopThread,
    Reply,
    encode,
    live_worker,
    two_workspace_corpus,
)

RUNS = 40
MIN_LATENCY_BOUND_S = 0.003
CORPUS: Corpus = two_workspace_corpus()
# Missing ids the same length as the foreign ones, so nothing but content could differ.
M_ROOT = "s-m-root"
M_CHILD = "s-m-child"
assert len(M_ROOT) == len(B_ROOT) and len(M_CHILD) == len(B_CHILD)


@dataclass(frozen=True)
class Case:
    name: str
    tool: str
    foreign: dict[str, Any]
    missing: dict[str, Any]
    foreign_id: str
    missing_id: str


def _pair(name: str, tool: str, template: dict[str, Any], foreign: str, missing: str) -> Case:
    def fill(session: str) -> dict[str, Any]:
        return {
            key: (
                [session if v == "<id>" else v for v in value]
                if isinstance(value, list)
                else session
                if value == "<id>"
                else value
            )
            for key, value in template.items()
        }

    return Case(name, tool, fill(foreign), fill(missing), foreign, missing)


CASES = (
    _pair("trace", "session_trace", {"session_id": "<id>"}, B_ROOT, M_ROOT),
    # B's child has its parent in A: still B's, still hidden.
    _pair("trace-child", "session_trace", {"session_id": "<id>"}, B_CHILD, M_CHILD),
    _pair(
        "event-search",
        "session_event_search",
        {"query": "zebrafish", "session_id": "<id>"},
        B_ROOT,
        M_ROOT,
    ),
    _pair("event-trace", "session_event_trace", {"session_id": "<id>", "seq": 3}, B_ROOT, M_ROOT),
    _pair(
        "event-trace-no-seq",
        "session_event_trace",
        {"session_id": "<id>", "seq": 99},
        B_ROOT,
        M_ROOT,
    ),
    _pair(
        "event-read",
        "session_event_read",
        {"session_id": "<id>", "seq": 3, "before": 2, "after": 2},
        B_ROOT,
        M_ROOT,
    ),
    _pair(
        "event-read-child", "session_event_read", {"session_id": "<id>", "seq": 2}, B_CHILD, M_CHILD
    ),
    _pair(
        "search-session-ids",
        "session_search",
        {"query": "zebrafish", "session_ids": ["<id>"]},
        B_ROOT,
        M_ROOT,
    ),
    _pair(
        "search-session-ids-mixed",
        "session_search",
        {"query": "zebrafish", "session_ids": [A_ROOT, "<id>"]},
        B_CHILD,
        M_CHILD,
    ),
    _pair(
        "search-parents",
        "session_search",
        {"query": "nectarine", "parent_session_ids": ["<id>"]},
        B_ROOT,
        M_ROOT,
    ),
    _pair(
        "search-parents-and-roots",
        "session_search",
        {
            "query": "zebrafish",
            "parent_session_ids": ["<id>", A_ROOT],
            "include_root_sessions": True,
        },
        B_ROOT,
        M_ROOT,
    ),
)


def _body(case: Case, arguments: dict[str, Any], request_id: str) -> bytes:
    return encode(
        {
            "request_id": request_id,
            "execution": {
                "agent": {"session_id": CALLER},
                "step_start_seq": CORPUS.caller_step,
            },
            "arguments": arguments,
        }
    )


def _masked(reply: Reply, request_id: str, session_id: str) -> tuple[bytes, dict[str, str], bool]:
    def mask(data: bytes) -> bytes:
        return data.replace(request_id.encode(), b"<request>").replace(
            session_id.encode(), b"<session>"
        )

    headers = {key: mask(value.encode()).decode() for key, value in reply.headers.items()}
    return mask(reply.data), headers, reply.spilled


def _request_id() -> str:
    # Same length every time, and unique: the search queue refuses a reused request id.
    return "r-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture(scope="module")
def live(
    loop: LoopThread, nats_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveWorker]:
    with (
        LogWatch(),
        live_worker(
            loop, nats_url, tmp_path_factory.mktemp("hostile-oracle"), events=CORPUS.events
        ) as worker,
    ):
        yield worker


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_foreign_id_and_a_missing_id_answer_with_identical_bytes(
    case: Case, live: LiveWorker, loop: LoopThread
) -> None:
    foreign_rid, missing_rid = _request_id(), _request_id()
    foreign = loop.run(live.call_raw(case.tool, _body(case, case.foreign, foreign_rid)))
    missing = loop.run(live.call_raw(case.tool, _body(case, case.missing, missing_rid)))
    assert _masked(foreign, foreign_rid, case.foreign_id) == _masked(
        missing, missing_rid, case.missing_id
    ), (foreign.body, missing.body)
    # Nothing of B in either (its canaries, its other session ids).
    for reply in (foreign, missing):
        for secret in (*B_CANARIES, B_ROOT, B_CHILD):
            if secret != case.foreign_id:
                assert secret not in reply.data.decode(), (case.name, secret, reply.body)
    if case.tool != "session_search":
        assert foreign.code == ErrorCode.NOT_FOUND.value, foreign.body
    elif case.name in ("search-session-ids-mixed", "search-parents-and-roots"):
        # Only the foreign half of the filter is dropped: A's root still matches.
        assert foreign.ok and A_ROOT in foreign.text, foreign.body
    else:
        # The filters hid B's sessions; the reply says so rather than "nothing matched".
        assert foreign.ok and "filters removed every match" in foreign.text, foreign.body


def test_the_minimum_latency_does_not_tell_foreign_from_missing(
    live: LiveWorker, loop: LoopThread
) -> None:
    async def measure() -> dict[str, tuple[float, float]]:
        mins: dict[str, tuple[float, float]] = {}
        for case in CASES:
            best_foreign = best_missing = float("inf")
            for run in range(RUNS):
                # Interleaved, alternating which goes first, so drift hits both alike.
                order = ((case.foreign, "f"), (case.missing, "m"))
                for arguments, which in order if run % 2 == 0 else order[::-1]:
                    data = _body(case, arguments, _request_id())
                    started = time.perf_counter()
                    await live.call_raw(case.tool, data)
                    elapsed = time.perf_counter() - started
                    if which == "f":
                        best_foreign = min(best_foreign, elapsed)
                    else:
                        best_missing = min(best_missing, elapsed)
            mins[case.name] = (best_foreign, best_missing)
        return mins

    mins = loop.run(measure(), timeout=300)
    report = {
        name: (
            f"foreign {f * 1000:.2f} ms, missing {m * 1000:.2f} ms, delta {(f - m) * 1000:+.2f} ms"
        )
        for name, (f, m) in mins.items()
    }
    print(f"\nmin latency over {RUNS} runs each (bound {MIN_LATENCY_BOUND_S * 1000:.0f} ms):")
    for name, line in report.items():
        print(f"  {name}: {line}")
    slow = {n: report[n] for n, (f, m) in mins.items() if abs(f - m) >= MIN_LATENCY_BOUND_S}
    assert slow == {}, slow


def test_the_comparison_can_fail_a_visible_id_answers_differently(
    live: LiveWorker, loop: LoopThread
) -> None:
    """A control: the same masking leaves an own-workspace id distinguishable, so the
    identical-bytes property above is not vacuous."""
    assert len(A_ROOT) == len(M_ROOT)
    visible_rid, missing_rid = _request_id(), _request_id()
    case = CASES[0]
    visible = loop.run(live.call_raw(case.tool, _body(case, {"session_id": A_ROOT}, visible_rid)))
    missing = loop.run(live.call_raw(case.tool, _body(case, case.missing, missing_rid)))
    assert visible.ok
    assert _masked(visible, visible_rid, A_ROOT) != _masked(missing, missing_rid, M_ROOT)


@pytest.fixture(scope="module")
def spilling(
    loop: LoopThread, nats_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveWorker]:
    """A worker that spills everything over 256 bytes, so ok replies go through spill."""
    with live_worker(
        loop,
        nats_url,
        tmp_path_factory.mktemp("hostile-oracle-spill"),
        events=CORPUS.events,
        spill_threshold_bytes=256,
        spill_preview_bytes=128,
    ) as worker:
        yield worker


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_spilled_or_not_foreign_and_missing_look_the_same(
    case: Case, spilling: LiveWorker, loop: LoopThread
) -> None:
    foreign_rid, missing_rid = _request_id(), _request_id()
    foreign = loop.run(spilling.call_raw(case.tool, _body(case, case.foreign, foreign_rid)))
    missing = loop.run(spilling.call_raw(case.tool, _body(case, case.missing, missing_rid)))
    assert foreign.spilled == missing.spilled

    def unnamed(reply: Reply, rid: str, sid: str) -> tuple[bytes, dict[str, str], bool]:
        data, headers, spilled = _masked(reply, rid, sid)
        # The object name, its key and nonce, and its expiry instant are random (or timed)
        # per result; the size and digest must still agree.
        spill = reply.body.get("spill", {})
        encryption = spill.get("encryption", {})
        for value, marker in (
            (spill.get("name"), b"<object>"),
            (encryption.get("key"), b"<key>"),
            (encryption.get("nonce"), b"<nonce>"),
            (spill.get("expires_at"), b"<expires>"),
        ):
            if value:
                data = data.replace(str(value).encode(), marker)
        return data, headers, spilled

    assert unnamed(foreign, foreign_rid, case.foreign_id) == unnamed(
        missing, missing_rid, case.missing_id
    ), (foreign.body, missing.body)
    if case.name in ("search-session-ids-mixed", "search-parents-and-roots"):
        assert foreign.spilled, foreign.body  # the ok results are long enough to spill
