"""Argument validation, timestamp normalization and filter translation (pure, no provider)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from contracts.errors import ErrorCode
from worker.store import EventFilter
from worker.tools import ToolError, filters
from worker.tools.input import (
    SessionEventReadArguments,
    SessionEventSearchArguments,
    SessionSearchArguments,
    parse_arguments,
)


def invalid(model: type[Any], arguments: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as caught:
        parse_arguments("tool_x", model, arguments)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    message = caught.value.message
    assert "pydantic" not in message and "http" not in message
    return message


# --- argument validation ---


def test_argument_validation_unknown_field_is_named() -> None:
    message = invalid(SessionSearchArguments, {"query": "x", "cwd": "/etc"})
    assert "unknown field 'cwd'" in message
    assert "query" in message  # the allowed fields are listed


def test_argument_validation_model_supplied_cursor_or_limit_is_refused() -> None:
    for name in ("cursor", "limit", "offset", "page_size", "workspace"):
        assert f"'{name}'" in invalid(SessionSearchArguments, {"query": "x", name: 1})


def test_argument_validation_missing_required_field() -> None:
    assert "'query' is required" in invalid(SessionSearchArguments, {})
    assert "'seq' is required" in invalid(SessionEventReadArguments, {})


def test_argument_validation_wrong_type_says_what_was_expected() -> None:
    assert "'query' must be a string" in invalid(SessionSearchArguments, {"query": 5})
    assert "'seq' must be an integer" in invalid(SessionEventReadArguments, {"seq": "3"})
    assert "'event_types' must be a list" in invalid(
        SessionSearchArguments, {"query": "x", "event_types": "tool/result"}
    )
    assert "'include_root_sessions' must be true or false" in invalid(
        SessionSearchArguments, {"query": "x", "include_root_sessions": "yes"}
    )


def test_argument_validation_closed_values() -> None:
    message = invalid(SessionSearchArguments, {"query": "x", "event_surfaces": ["usr"]})
    assert "'event_surfaces[0]'" in message and "'user'" in message
    message = invalid(SessionSearchArguments, {"query": "x", "availability": ["gone"]})
    assert "'availability[0]'" in message and "'live'" in message


def test_argument_validation_event_types_stay_open() -> None:
    args = parse_arguments(
        "t", SessionSearchArguments, {"query": "x", "event_types": ["custom/thing"]}
    )
    assert args.event_types == ["custom/thing"]


def test_argument_validation_ids_and_positions() -> None:
    assert "session id" in invalid(SessionEventReadArguments, {"session_id": "a b", "seq": 1})
    assert "'seq' must be at least 1" in invalid(SessionEventReadArguments, {"seq": 0})
    assert "'before' must be at least 0" in invalid(
        SessionEventReadArguments, {"seq": 1, "before": -1}
    )


def test_argument_validation_ranges_in_order() -> None:
    message = invalid(SessionEventSearchArguments, {"query": "x", "from_seq": 9, "to_seq": 3})
    assert "from_seq must not be later than to_seq" in message
    message = invalid(
        SessionSearchArguments,
        {
            "query": "x",
            "created_after": "2026-12-02T10:00:00Z",
            "created_before": "2026-12-02T09:00:00Z",
        },
    )
    assert "created_after must not be later than created_before" in message


def test_argument_validation_not_an_object() -> None:
    with pytest.raises(ToolError) as caught:
        parse_arguments("tool_x", SessionSearchArguments, ["query"])  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


# --- timestamp normalization ---


def test_timestamp_normalization_naive_timestamp_needs_a_timezone() -> None:
    message = invalid(SessionSearchArguments, {"query": "x", "event_after": "2026-12-02T09:25:49"})
    assert "'event_after' needs a timezone" in message


def test_timestamp_normalization_garbage_and_wrong_type() -> None:
    assert "ISO 8601" in invalid(SessionSearchArguments, {"query": "x", "event_after": "today"})
    assert "ISO 8601" in invalid(SessionSearchArguments, {"query": "x", "event_after": 17})


def test_timestamp_normalization_offsets_become_inclusive_epoch_ms() -> None:
    args = parse_arguments(
        "t",
        SessionSearchArguments,
        {
            "query": "x",
            "created_after": "2026-12-02T11:25:49.123+02:00",
            "created_before": "2026-12-02T09:25:49.123Z",
            "event_after": "2026-12-02T09:25:49.1231Z",  # sub-ms lower bound rounds up
            "event_before": "2026-12-02T09:25:49.1239Z",  # sub-ms upper bound rounds down
        },
    )
    request = filters.session_search_request(args)
    expected = int(datetime(2026, 12, 2, 9, 25, 49, 123000, tzinfo=UTC).timestamp() * 1000)
    assert request.sessions.created_from_ms == expected
    assert request.sessions.created_to_ms == expected
    assert request.events.time_from_ms == expected + 1
    assert request.events.time_to_ms == expected


# --- filter translation ---


def test_filter_translation_lists_deduplicated_and_fields_mapped() -> None:
    args = parse_arguments(
        "t",
        SessionSearchArguments,
        {
            "query": "flaky test",
            "session_ids": ["s-a", "s-b", "s-a"],
            "parent_session_ids": ["p-1", "p-1"],
            "include_root_sessions": True,
            "availability": ["live", "live", "persisted"],
            "event_types": ["tool/result", "tool/result", "message/user"],
            "event_surfaces": ["tool", "user", "tool"],
            "updated_after": "2026-12-01T00:00:00Z",
        },
    )
    request = filters.session_search_request(args)
    assert request.sessions.session_ids == ("s-a", "s-b")
    assert request.requested_parent_ids == ("p-1",)
    assert request.include_roots is True
    assert request.sessions.availability == ("live", "persisted")
    assert request.sessions.updated_from_ms is not None
    assert request.events == EventFilter(
        types=("tool/result", "message/user"), surfaces=("tool", "user")
    )
    assert request.sessions.parent_session_ids is None  # set only after authorization


def test_filter_translation_empty_lists_mean_no_filter() -> None:
    args = parse_arguments(
        "t", SessionSearchArguments, {"query": "x", "event_types": [], "session_ids": []}
    )
    request = filters.session_search_request(args)
    assert request.events.types is None and request.sessions.session_ids is None


def test_filter_translation_parent_clause() -> None:
    def clause(arguments: dict[str, Any], authorized: tuple[str, ...]) -> object:
        args = parse_arguments("t", SessionSearchArguments, {"query": "x", **arguments})
        return filters.parent_clause(filters.session_search_request(args), authorized)

    assert clause({}, ()) == (None, False)
    # Every guessed parent was missing or foreign: () matches nothing.
    assert clause({"parent_session_ids": ["p-x"]}, ()) == ((), False)
    assert clause({"parent_session_ids": ["p-x"]}, ("p-x",)) == (("p-x",), False)
    # The root marker stays independently ORed in.
    assert clause({"include_root_sessions": True}, ()) == ((), True)
    assert clause({"parent_session_ids": ["p"], "include_root_sessions": True}, ()) == ((), True)


def test_filter_translation_event_search_seq_range() -> None:
    args = parse_arguments(
        "t",
        SessionEventSearchArguments,
        {"query": "x", "from_seq": 2, "to_seq": 9, "event_surfaces": ["assistant"]},
    )
    events = filters.event_filter(
        event_types=args.event_types,
        event_surfaces=args.event_surfaces,
        event_after=args.event_after,
        event_before=args.event_before,
        from_seq=args.from_seq,
        to_seq=args.to_seq,
    )
    assert events == EventFilter(surfaces=("assistant",), seq_from=2, seq_to=9)
