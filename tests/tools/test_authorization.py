"""Workspace authority over a protocol fake: identity, exact cwd, parent preauthorization,
oracle resistance, changed-observation rejection, hidden-boundary pruning.

Over 400 lines: every tool's authorisation, one rule per test.

The fake is used where an observation must be swapped or a call inspected; the same
properties are checked against the real SQLite provider in test_integration.py.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.envelope import Execution
from contracts.errors import ErrorCode
from contracts.partitions import PartitionScope, partition_of_cwd
from tests.tools._fakes import (
    CALLER,
    CWD,
    GEN,
    OTHER_CWD,
    FakeService,
    event_hit,
    header,
    session_hit,
    stored,
    summary,
)
from tests.tools._harness import as_caller, outcome, run_tool, tool_error
from worker.signals import ExecutionSignal
from worker.store import (
    EventRef,
    EventRelations,
    EventSearchPage,
    EventWindow,
    Lineage,
    LineageNode,
    LinkedEvent,
    SessionSearchPage,
    StoredEvent,
)
from worker.tools import ToolConfig, ToolError, register_tools
from worker.tools.presentation import HIDDEN_PARENT
from worker.tools.workspace_access import redact_session_ids

TARGET = "s-target"

DIRECT_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("session_event_search", {"query": "flaky", "session_id": TARGET}),
    ("session_trace", {"session_id": TARGET}),
    ("session_event_trace", {"session_id": TARGET, "seq": 3}),
    ("session_event_read", {"session_id": TARGET, "seq": 3, "before": 1}),
]


def serving_target(service: FakeService) -> FakeService:
    """Event searches of any indexed session find one hit (the fake serves the rest)."""

    async def search_events(*, session_id: str, **_: Any) -> EventSearchPage | None:
        value = service.headers.get(session_id)
        if value is None:
            return None
        return EventSearchPage(
            header=value, hits=(event_hit(session_id, 3),), next_cursor=None, generation=GEN
        )

    service.overrides["search_events"] = search_events
    return service


# --- missing identity ---


MINIMAL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "session_search": {"query": "x"},
    "session_event_search": {"query": "x"},
    "session_trace": {},
    "session_event_trace": {"seq": 1},
    "session_event_read": {"seq": 1},
}


@pytest.mark.parametrize("tool", list(MINIMAL_ARGUMENTS))
async def test_missing_identity_fails_closed(tool: str) -> None:
    service = FakeService.with_caller()
    error = await tool_error(service, tool, MINIMAL_ARGUMENTS[tool], execution=Execution())
    assert error.code is ErrorCode.NO_IDENTITY
    assert service.calls == []


async def test_missing_identity_caller_not_in_index_fails_closed() -> None:
    service = FakeService()
    error = await tool_error(service, "session_search", {"query": "x"})
    assert error.code is ErrorCode.NO_IDENTITY
    assert service.calls_of("search_sessions") == []


async def test_read_your_writes_waits_for_the_step_before() -> None:
    service = FakeService.with_caller()
    await run_tool(service, "session_trace", {}, execution=as_caller(step_start_seq=57))
    assert service.calls[0].method == "wait_for_seq"
    assert service.calls[0].args == {"session_id": CALLER, "seq": 56, "scope": None}
    service.calls.clear()
    await run_tool(service, "session_trace", {}, execution=as_caller(step_start_seq=1))
    assert service.calls_of("wait_for_seq") == []


async def test_a_partition_s_tools_wait_for_the_step_within_that_partition() -> None:
    """The wait itself is scoped: a caller of another partition then waits out the bound
    as an unknown caller does, instead of being told apart after the wait."""
    service = FakeService.with_caller()
    scope = PartitionScope((partition_of_cwd(CWD, 16) + 1) % 16, 16)  # not the caller's
    trace = register_tools(service, ToolConfig(), partition=scope).get("session_trace")
    assert trace is not None
    with pytest.raises(ToolError) as caught:
        await trace.run({}, as_caller(step_start_seq=57), ExecutionSignal())
    assert caught.value.code is ErrorCode.NO_IDENTITY
    assert service.calls[0].method == "wait_for_seq"
    assert service.calls[0].args == {"session_id": CALLER, "seq": 56, "scope": scope}


# --- exact-workspace authorization ---


@pytest.mark.parametrize("tool,arguments", DIRECT_CALLS)
@pytest.mark.parametrize(
    "target_cwd,visible",
    [(CWD, True), (CWD + "/", False), (CWD.upper(), False), (None, False), (OTHER_CWD, False)],
)
async def test_exact_workspace_authorization(
    tool: str, arguments: dict[str, Any], target_cwd: str | None, visible: bool
) -> None:
    service = serving_target(FakeService.with_caller(header(TARGET, target_cwd)))
    if visible:
        assert TARGET in await run_tool(service, tool, arguments)
    else:
        error = await tool_error(service, tool, arguments)
        assert error.code is ErrorCode.NOT_FOUND


async def test_exact_workspace_authorization_caller_without_cwd_sees_only_itself() -> None:
    service = serving_target(FakeService.with_caller(header(TARGET, None), caller_cwd=None))
    assert CALLER in await run_tool(service, "session_trace", {})
    error = await tool_error(service, "session_trace", {"session_id": TARGET})
    assert error.code is ErrorCode.NOT_FOUND
    text = await run_tool(service, "session_search", {"query": "flaky"})
    assert "no recorded workspace" in text
    assert service.calls_of("search_sessions") == []


async def test_cross_session_search_carries_the_cwd_and_omits_the_caller() -> None:
    service = FakeService.with_caller()
    await run_tool(service, "session_search", {"query": "flaky", "session_ids": [CALLER]})
    (call,) = service.calls_of("search_sessions")
    assert call.args["cwd"] == CWD
    assert call.args["sessions"].exclude_session_ids == (CALLER,)


async def test_a_provider_hit_outside_the_workspace_is_never_rendered() -> None:
    service = FakeService.with_caller(header("s-near"), header("s-far", OTHER_CWD))

    async def search(**_: Any) -> SessionSearchPage:
        hits = (session_hit(header("s-far", OTHER_CWD)), session_hit(service.headers["s-near"]))
        return SessionSearchPage(hits=hits, next_cursor=None, generation=GEN)

    service.overrides["search_sessions"] = search
    text = await run_tool(service, "session_search", {"query": "flaky"})
    assert "s-near" in text and "s-far" not in text


# --- parent preauthorization and oracle resistance ---


async def test_parent_preauthorization_only_workspace_parents_reach_the_provider() -> None:
    service = FakeService.with_caller(header("p-near"), header("p-far", OTHER_CWD))
    await run_tool(
        service,
        "session_search",
        {"query": "x", "parent_session_ids": ["p-far", "p-missing", "p-near", "p-near"]},
    )
    (call,) = service.calls_of("search_sessions")
    assert call.args["sessions"].parent_session_ids == ("p-near",)
    assert call.args["sessions"].include_roots is False


async def test_parent_preauthorization_oracle_resistance_missing_equals_foreign() -> None:
    async def reply(guess: str, **extra: Any) -> tuple[str, Any]:
        service = FakeService.with_caller(header("p-far", OTHER_CWD))
        text = await run_tool(
            service, "session_search", {"query": "x", "parent_session_ids": [guess], **extra}
        )
        return text, service.calls_of("search_sessions")[0].args["sessions"]

    foreign, missing = await reply("p-far"), await reply("p-gone")
    assert foreign == missing
    assert foreign[1].parent_session_ids == ()  # matches nothing...
    rooted_foreign = await reply("p-far", include_root_sessions=True)
    rooted_missing = await reply("p-gone", include_root_sessions=True)
    assert rooted_foreign == rooted_missing
    assert rooted_foreign[1].include_roots is True  # ...but roots stay ORed in


@pytest.mark.parametrize("tool,arguments", DIRECT_CALLS)
async def test_oracle_resistance_missing_and_foreign_ids_give_identical_bytes(
    tool: str, arguments: dict[str, Any]
) -> None:
    foreign = serving_target(FakeService.with_caller(header(TARGET, OTHER_CWD)))
    missing = serving_target(FakeService.with_caller())
    a = await tool_error(foreign, tool, arguments)
    b = await tool_error(missing, tool, arguments)
    assert outcome(a) == outcome(b)
    assert a.code is ErrorCode.NOT_FOUND
    # Nothing but the preflight touched the foreign target.
    assert {c.method for c in foreign.calls} <= {"read_titles"}


# --- changed-observation rejection (the header is swapped between check and use) ---


def moved_target(service: FakeService) -> FakeService:
    """Preflight and title reads see TARGET in the workspace; the read itself sees it moved.

    Only the check of the header returned with the same observation can catch this.
    """
    moved = header(TARGET, OTHER_CWD)

    async def search_events(**_: Any) -> EventSearchPage:
        return EventSearchPage(
            header=moved, hits=(event_hit(TARGET, 3),), next_cursor=None, generation=GEN
        )

    async def lineage(**_: Any) -> Lineage:
        return Lineage(target=moved, ancestors=(), missing_ancestor_id=None, descendants=())

    async def event_relations(*, seq: int, **_: Any) -> EventRelations:
        return EventRelations(header=moved, event=summary(TARGET, seq))

    async def read_event(*, seq: int, **_: Any) -> EventWindow:
        return EventWindow(header=moved, target=stored(TARGET, seq))

    service.overrides.update(
        search_events=search_events,
        lineage=lineage,
        event_relations=event_relations,
        read_event=read_event,
    )
    return service


@pytest.mark.parametrize("tool,arguments", DIRECT_CALLS)
async def test_changed_observation_rejection(tool: str, arguments: dict[str, Any]) -> None:
    swapped = moved_target(FakeService.with_caller(header(TARGET)))
    error = await tool_error(swapped, tool, arguments)
    missing = await tool_error(serving_target(FakeService.with_caller()), tool, arguments)
    assert outcome(error) == outcome(missing)
    # The payload was never rendered: titles were not even fetched after the bad read.
    # Caller identity and preflight are one observation; nothing was read after it.
    assert [c.args["session_ids"] for c in swapped.calls_of("read_titles")] == [[CALLER, TARGET]]


async def test_changed_observation_rejection_on_a_later_search_page() -> None:
    service = FakeService.with_caller(header(TARGET))

    async def search_events(*, cursor: str | None, **_: Any) -> EventSearchPage:
        moved = cursor is not None
        return EventSearchPage(
            header=header(TARGET, OTHER_CWD if moved else CWD),
            hits=(event_hit(TARGET, 9 if moved else 3),),
            next_cursor=None if moved else "c1",
            generation=GEN,
        )

    service.overrides["search_events"] = search_events
    error = await tool_error(service, "session_event_search", {"query": "x", "session_id": TARGET})
    assert outcome(error) == outcome(
        await tool_error(FakeService.with_caller(), "session_event_search",
                         {"query": "x", "session_id": TARGET})
    )  # fmt: skip


async def test_changed_observation_rejection_header_of_another_session() -> None:
    # Same cwd but the observation is of a different session: still not ours to render.
    service = serving_target(FakeService.with_caller(header(TARGET)))

    async def read_event(**_: Any) -> EventWindow:
        return EventWindow(header=header("s-else"), target=stored("s-else", 3))

    service.overrides["read_event"] = read_event
    error = await tool_error(service, "session_event_read", {"session_id": TARGET, "seq": 3})
    assert error.code is ErrorCode.NOT_FOUND


# --- hidden-boundary pruning ---


def lineage_service(*, ancestors: tuple[Any, ...], missing: str | None) -> FakeService:
    service = FakeService.with_caller(
        header(TARGET, parent="s-parent"),
        header("s-parent"),
        header("s-old"),
        header("s-kid", parent=TARGET),
        header("s-grandkid", parent="s-kid"),
        header("s-far-kid", OTHER_CWD, parent=TARGET),
        header("s-hidden-grandkid", parent="s-far-kid"),
    )

    async def lineage(*, session_id: str, **_: Any) -> Lineage:
        h = service.headers
        far_subtree = LineageNode(
            header=h["s-far-kid"], children=(LineageNode(header=h["s-hidden-grandkid"]),)
        )
        kid = LineageNode(header=h["s-kid"], children=(LineageNode(header=h["s-grandkid"]),))
        return Lineage(
            target=h[TARGET],
            ancestors=ancestors,
            missing_ancestor_id=missing,
            descendants=(kid, far_subtree),
        )

    service.overrides["lineage"] = lineage
    return service


async def test_hidden_boundary_pruning_stops_at_a_foreign_ancestor() -> None:
    foreign_ancestor = header("s-far-grandparent", OTHER_CWD)
    service = lineage_service(
        ancestors=(header("s-parent"), foreign_ancestor, header("s-old")), missing=None
    )
    text = await run_tool(service, "session_trace", {"session_id": TARGET})
    assert "s-parent" in text and "s-kid" in text and "s-grandkid" in text
    for hidden in ("s-far-grandparent", "s-old", "s-far-kid", "s-hidden-grandkid"):
        assert hidden not in text
    assert "lineage continues" in text
    # Titles were fetched only for visible sessions.
    fetched = {sid for c in service.calls_of("read_titles") for sid in c.args["session_ids"]}
    assert "s-far-kid" not in fetched and "s-hidden-grandkid" not in fetched


async def test_hidden_boundary_missing_and_foreign_ancestor_render_identically() -> None:
    foreign = lineage_service(
        ancestors=(header("s-parent"), header("s-far-grandparent", OTHER_CWD)), missing=None
    )
    missing = lineage_service(ancestors=(header("s-parent"),), missing="s-far-grandparent")
    a = await run_tool(foreign, "session_trace", {"session_id": TARGET})
    b = await run_tool(missing, "session_trace", {"session_id": TARGET})
    assert a == b
    assert "s-far-grandparent" not in a


async def test_hidden_boundary_event_trace_omits_missing_and_foreign_citations() -> None:
    def relations_service(foreign_exists: bool) -> FakeService:
        service = serving_target(FakeService.with_caller(header(TARGET), header("s-src")))
        if foreign_exists:
            service.add(header("s-far", OTHER_CWD))

        async def event_relations(*, session_id: str, seq: int, **_: Any) -> EventRelations:
            far = service.headers.get("s-far")
            return EventRelations(
                header=service.headers[TARGET],
                event=summary(TARGET, seq),
                replaces=(summary(TARGET, 2, type_="message/assistant"),),
                cites=(
                    LinkedEvent(
                        EventRef("s-src", 4), service.headers["s-src"], summary("s-src", 4)
                    ),
                    LinkedEvent(EventRef("s-far", 5), far, summary("s-far", 5) if far else None),
                ),
                cited_by=(
                    LinkedEvent(EventRef("s-far", 8), far, summary("s-far", 8) if far else None),
                ),
            )

        service.overrides["event_relations"] = event_relations
        return service

    arguments = {"session_id": TARGET, "seq": 3}
    a = await run_tool(relations_service(True), "session_event_trace", arguments)
    b = await run_tool(relations_service(False), "session_event_trace", arguments)
    assert a == b
    assert "s-src seq 4" in a and "s-far" not in a
    assert "seq 2 · message/assistant" in a


# --- redaction of hidden ids in exact JSON ---

MARKER = "marker-for-a-hidden-id"  # longer than any generated text, so never a collision
_IDS = st.sampled_from(["s-hidden", "s-seen", "hidden", "s-hidden-2"])
_JSON_VALUES = st.recursive(
    st.none() | st.integers(-(2**53), 2**53) | st.text(max_size=12) | _IDS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6) | _IDS, inner, max_size=4)
    ),
    max_leaves=12,
)


def _escape_all(text: str, upper: bool) -> str:
    units = text.encode("utf-16-be")
    hexes = (units[i : i + 2].hex() for i in range(0, len(units), 2))
    return '"' + "".join("\\u" + (h.upper() if upper else h) for h in hexes) + '"'


def _spell(value: Any, data: st.DataObject) -> str:
    """JSON text of ``value`` where each string is written plainly or fully \\u-escaped."""
    if isinstance(value, str):
        if data.draw(st.booleans()):
            return _escape_all(value, upper=data.draw(st.booleans()))
        return orjson.dumps(value).decode()
    if isinstance(value, list):
        return "[" + ",".join(_spell(v, data) for v in value) + "]"
    if isinstance(value, dict):
        members = (f"{_spell(k, data)}:{_spell(v, data)}" for k, v in value.items())
        return "{" + ",".join(members) + "}"
    return orjson.dumps(value).decode()


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES, escape=st.data())
def test_redaction_hides_every_spelling_of_a_hidden_id_and_keeps_the_rest(
    value: Any, escape: st.DataObject
) -> None:
    raw = _spell(value, escape)
    out = redact_session_ids(raw, frozenset({"s-hidden"}), MARKER)
    strings = _strings(orjson.loads(out))
    assert "s-hidden" not in strings
    assert strings.count(MARKER) >= _strings(value).count("s-hidden")
    # Nothing else moves: with nothing hidden the text is returned byte for byte, and a
    # document without the hidden id is untouched.
    assert redact_session_ids(raw, frozenset(), MARKER) == raw
    if "s-hidden" not in _strings(value):
        assert out == raw


@pytest.mark.parametrize("key", ['"cites"', '"\\u0063ites"', '"c\\u0069tes"'])
async def test_read_hides_a_foreign_citation_whatever_the_key_spelling(key: str) -> None:
    # The exact JSON is printed as published: its cites key may be spelled with escapes,
    # and a foreign (or missing) cited session is still never named.
    service = FakeService.with_caller(header(TARGET), header("s-src"))
    service.add(header("s-far", OTHER_CWD))
    raw = (
        f'{{"session_id":"{TARGET}","seq":3,"type":"message/assistant","surface":"assistant",'
        f'"payload":{{"text":"done"}},{key}:[{{"session_id":"s-far","seq":5}},'
        '{"session_id":"s-src","seq":4},{"session_id":"s-gone","seq":1}]}'
    )

    async def read_event(*, session_id: str, seq: int, **_: Any) -> EventWindow:
        target = StoredEvent(summary=summary(TARGET, seq), raw_json=raw)
        return EventWindow(header=service.headers[TARGET], target=target)

    service.overrides["read_event"] = read_event
    text = await run_tool(service, "session_event_read", {"session_id": TARGET, "seq": 3})
    assert "s-far" not in text and "s-gone" not in text
    assert '"session_id":"s-src"' in text
    assert text.count(f'"{HIDDEN_PARENT}"') == 2
