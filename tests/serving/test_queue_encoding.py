"""What a queued search carries (worker.serving.queue_encoding), without a server."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from worker.serving import queue_encoding as qe

NOW = 1_796_000_000_000
ENVELOPE = orjson.dumps(
    {"request_id": "r-1", "execution": {"agent": {"session_id": "s-a"}}, "arguments": {"q": 1}}
)


def test_a_search_round_trips_with_its_envelope_unchanged() -> None:
    data = qe.encode(ENVELOPE, "_INBOX.x", NOW)
    assert qe.decode(data, {}) == qe.QueuedSearch("r-1", "_INBOX.x", NOW, orjson.loads(ENVELOPE))
    assert qe.decode(qe.encode(ENVELOPE, "_INBOX.x", None), None) == qe.QueuedSearch(
        "r-1", "_INBOX.x", None, orjson.loads(ENVELOPE)
    )


def test_the_body_is_one_versioned_document_and_repeats_nothing_in_headers() -> None:
    document = orjson.loads(qe.encode(ENVELOPE, "_INBOX.x", NOW))
    assert document == {
        "v": qe.QUEUE_FORMAT,
        "reply": "_INBOX.x",
        "deadline_ms": NOW,
        "request": orjson.loads(ENVELOPE),
    }


@given(
    rid=st.from_regex(r"[A-Za-z0-9_-]{1,128}", fullmatch=True),
    reply=st.text(min_size=1, max_size=60),
    deadline=st.none() | st.integers(min_value=0, max_value=2**53),
    arguments=st.dictionaries(
        st.text(max_size=8), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8)
    ),
)
def test_any_valid_envelope_round_trips(
    rid: str, reply: str, deadline: int | None, arguments: dict[str, object]
) -> None:
    envelope = {"request_id": rid, "arguments": arguments}
    decoded = qe.decode(qe.encode(orjson.dumps(envelope), reply, deadline), None)
    assert decoded == qe.QueuedSearch(rid, reply, deadline, envelope)


def test_a_search_queued_by_the_previous_release_is_still_read() -> None:
    headers = {
        qe.LEGACY_REQUEST_ID_HEADER: "r-1",
        qe.LEGACY_REPLY_HEADER: "_INBOX.old",
        qe.LEGACY_DEADLINE_HEADER: str(NOW),
    }
    assert qe.decode(ENVELOPE, headers) == qe.QueuedSearch(
        "r-1", "_INBOX.old", NOW, orjson.loads(ENVELOPE)
    )
    garbled = {**headers, qe.LEGACY_DEADLINE_HEADER: "soon"}
    decoded = qe.decode(ENVELOPE, garbled)
    assert isinstance(decoded, qe.QueuedSearch) and decoded.deadline_ms is None
    assert qe.decode(ENVELOPE, {qe.LEGACY_REPLY_HEADER: "_INBOX.old"}) is None
    assert qe.decode(ENVELOPE, {qe.LEGACY_REQUEST_ID_HEADER: "r-1"}) is None


def test_a_newer_format_says_whom_to_answer_and_by_when() -> None:
    data = orjson.dumps({"v": qe.QUEUE_FORMAT + 1, "reply": "_INBOX.n", "deadline_ms": NOW})
    assert qe.decode(data, None) == qe.NewerFormat(qe.QUEUE_FORMAT + 1, "_INBOX.n", NOW, "")
    named = orjson.dumps(
        {"v": qe.QUEUE_FORMAT + 1, "reply": "_INBOX.n", "request": {"request_id": "r-7"}}
    )
    assert qe.decode(named, None) == qe.NewerFormat(qe.QUEUE_FORMAT + 1, "_INBOX.n", None, "r-7")


def test_a_request_id_that_is_not_an_id_is_never_echoed() -> None:
    envelope = orjson.dumps({"request_id": "a b\nc", "arguments": {}})
    decoded = qe.decode(qe.encode(envelope, "_INBOX.x", None), None)
    assert isinstance(decoded, qe.QueuedSearch) and decoded.request_id == ""
    legacy = {qe.LEGACY_REQUEST_ID_HEADER: "a b", qe.LEGACY_REPLY_HEADER: "_INBOX.x"}
    assert qe.decode(ENVELOPE, legacy) is None


def test_malformed_messages_are_not_searches() -> None:
    for data in (
        b"",
        b"not json",
        b"[1, 2]",
        orjson.dumps({"v": qe.QUEUE_FORMAT, "request": {}}),  # no reply
        orjson.dumps({"v": qe.QUEUE_FORMAT, "reply": "", "request": {}}),
        orjson.dumps({"v": qe.QUEUE_FORMAT, "reply": "i", "request": []}),
        orjson.dumps({"v": qe.QUEUE_FORMAT, "reply": "i"}),
        orjson.dumps({"v": "1", "reply": "i", "request": {}}),
        orjson.dumps({"v": True, "reply": "i", "request": {}}),
        orjson.dumps({"v": 0, "reply": "i", "request": {}}),
        orjson.dumps({"v": qe.QUEUE_FORMAT, "reply": "i", "deadline_ms": "x", "request": {}}),
        orjson.dumps({"v": qe.QUEUE_FORMAT + 1, "reply": 5}),
    ):
        assert qe.decode(data, None) is None, data
