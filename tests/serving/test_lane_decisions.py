"""The lanes' admit/route/answer decisions, without a server (worker.serving.lane_decisions)."""

from __future__ import annotations

import orjson
import pytest

from contracts.envelope import ToolRequest
from contracts.errors import ErrorCode
from worker.serving import lane_decisions as decide
from worker.serving import replies

NOW = 1_796_000_000_000


def request(
    rid: str = "r-1", session: str | None = "s-a", agent: str | None = "a-1"
) -> ToolRequest:
    who = {"session_id": session, "agent_id": agent} if session else None
    return ToolRequest.model_validate(
        {"request_id": rid, "execution": {"agent": who}, "arguments": {"query": "x"}}
    )


def code(reply: replies.EncodedReply | None) -> str:
    assert reply is not None
    body = orjson.loads(reply.data)
    return str(body["error"]["code"]) if body["status"] == "error" else "ok"


def test_exclusive_tools_take_the_search_queue_and_the_rest_the_pool() -> None:
    assert decide.lane_of("exclusive") == decide.SEARCH_LANE == "search-queue"
    assert decide.lane_of("parallel") == decide.PARALLEL_LANE == "parallel-pool"


def test_a_search_is_queued_unless_expired_or_too_large() -> None:
    assert decide.enqueue_refusal("r", NOW + 1, 100, 1000, now_ms=NOW) is None
    assert decide.enqueue_refusal("r", None, 1000, 1000, now_ms=NOW) is None
    expired = decide.enqueue_refusal("r", NOW, 100, 1000, now_ms=NOW)
    assert code(expired) == ErrorCode.TIMEOUT.value
    too_large = decide.enqueue_refusal("r", None, 1001, 1000, now_ms=NOW)
    assert code(too_large) == ErrorCode.INVALID_ARGUMENTS.value
    assert too_large is not None and decide.TOO_LARGE_MESSAGE.encode() in too_large.data


def test_the_size_counted_includes_the_header_block() -> None:
    headers = {"A": "1", "Nats-Msg-Id": "x" * 10}
    size = decide.encoded_size(b"body", headers)
    assert size == len(b"NATS/1.0\r\nA: 1\r\nNats-Msg-Id: xxxxxxxxxx\r\n\r\nbody")


@pytest.mark.parametrize(
    ("failure", "expired", "expected"),
    [
        ("queue-full", False, ErrorCode.OVERLOADED),
        ("queue-full", True, ErrorCode.OVERLOADED),
        ("timed-out", False, ErrorCode.OVERLOADED),
        ("timed-out", True, ErrorCode.TIMEOUT),
        ("refused", False, ErrorCode.TOOL_FAILED),
        ("failed", True, ErrorCode.TOOL_FAILED),
    ],
)
def test_a_failed_enqueue_is_answered_by_what_failed(
    failure: decide.EnqueueFailure, expired: bool, expected: ErrorCode
) -> None:
    assert code(decide.enqueue_failure_reply("r", failure, expired=expired)) == expected.value


def test_a_reused_request_id_is_refused_as_invalid() -> None:
    reply = decide.duplicate_reply("r")
    assert code(reply) == ErrorCode.INVALID_ARGUMENTS.value
    assert replies.DUPLICATE_MESSAGE.encode() in reply.data


def test_dedupe_is_scoped_to_the_caller() -> None:
    mine = decide.dedupe_id(request("r-1", "s-a", "a-1"))
    assert mine == decide.dedupe_id(request("r-1", "s-a", "a-1"))
    assert mine != decide.dedupe_id(request("r-1", "s-b", "a-1"))
    assert mine != decide.dedupe_id(request("r-1", "s-a", "a-2"))
    assert mine != decide.dedupe_id(request("r-2", "s-a", "a-1"))
    assert len(decide.dedupe_id(request("r-1", None))) == 64


def test_the_only_queue_header_is_the_dedupe_id() -> None:
    assert decide.queue_headers(request("r-9")) == {
        decide.MSG_ID_HEADER: decide.dedupe_id(request("r-9"))
    }


def test_a_newer_format_is_left_for_another_worker_until_expired_or_given_up() -> None:
    def newer(**overrides: int | None) -> decide.FetchedRefusal | None:
        values: dict[str, int | None] = {
            "deadline_ms": NOW + 1,
            "delivered": 1,
            "max_deliver": 3,
            "now_ms": NOW,
        }
        values.update(overrides)
        return decide.newer_format_refusal(**values)  # type: ignore[arg-type]

    assert newer() is None
    assert newer(delivered=2) is None
    assert newer(deadline_ms=None) is None
    assert newer(delivered=3) == "given-up"
    assert newer(delivered=1, max_deliver=1) == "given-up"
    assert newer(max_deliver=-1, delivered=50) is None  # unlimited deliveries: never given up
    assert newer(deadline_ms=NOW) == "expired"


def refusal(**overrides: object) -> decide.FetchedRefusal | None:
    values: dict[str, object] = {
        "cancelled": False,
        "deadline_ms": NOW + 1,
        "delivered": 1,
        "max_deliver": 3,
        "now_ms": NOW,
    }
    values.update(overrides)
    return decide.fetched_refusal(**values)  # type: ignore[arg-type]


def test_a_fetched_search_runs_unless_cancelled_expired_or_given_up() -> None:
    assert refusal() is None
    assert refusal(deadline_ms=None, delivered=2) is None
    assert refusal(cancelled=True) == "cancelled"
    # A cancel wins over a deadline that passed too.
    assert refusal(cancelled=True, deadline_ms=NOW) == "cancelled"
    assert refusal(deadline_ms=NOW) == "expired"
    assert refusal(delivered=3) == "given-up"
    # The only delivery allowed (max_deliver 1) still runs once.
    assert refusal(delivered=1, max_deliver=1) is None


def test_a_refused_fetched_search_is_answered_with_its_code() -> None:
    cancelled = decide.fetched_refusal_reply("r", "cancelled", "stop (reason)")
    assert code(cancelled) == ErrorCode.CANCELLED.value
    assert b"stop (reason)" in cancelled.data
    assert code(decide.fetched_refusal_reply("r", "expired", "")) == ErrorCode.TIMEOUT.value
    assert code(decide.fetched_refusal_reply("r", "given-up", "")) == ErrorCode.TOOL_FAILED.value
