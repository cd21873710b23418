"""The three exact workflows: a session's lineage, an event's relations, an event read.

Each authorizes its target with the caller in one observation, reads the payload under
the unchanged execution signal, re-checks the header observed with that payload, and
renders only what the caller's workspace may see. Titles observed with the payload (the
target's, a lineage's) are shown as observed; any other is read after the payload.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pydantic_core import from_json

from contracts.errors import ErrorCode
from worker.signals import ExecutionSignal
from worker.store import LinkedEvent, StoredEvent, TitleObservation
from worker.tools import input as args_input
from worker.tools.context import ToolContext
from worker.tools.definitions import Admitted, ToolError
from worker.tools.presentation import (
    HIDDEN_PARENT,
    render_event_trace,
    render_trace,
)
from worker.tools.reading import render_event_read
from worker.tools.workspace_access import (
    Caller,
    authorized_subset,
    check_observation,
    event_not_found,
    is_authorized,
    lineage_ids,
    not_found,
    project_lineage,
    redact_session_ids,
)


async def session_trace(
    ctx: ToolContext, admitted: Admitted[args_input.SessionTraceArguments], signal: ExecutionSignal
) -> str:
    args = admitted.checked()
    caller, target = await ctx.caller_and_target(admitted, signal, args.session_id)
    lineage = await ctx.boundary.call(
        "lineage", signal, lambda: ctx.service.lineage(target, signal=signal)
    )
    if lineage is None:
        raise not_found(target)
    visible = project_lineage(caller, target, lineage)
    titles = await ctx.titles(
        caller, lineage_ids(visible), signal, fail_as=target, held=lineage.titles
    )
    return render_trace(visible, titles)


async def session_event_trace(
    ctx: ToolContext,
    admitted: Admitted[args_input.SessionEventTraceArguments],
    signal: ExecutionSignal,
) -> str:
    args = admitted.checked()
    caller, target = await ctx.caller_and_target(admitted, signal, args.session_id)
    relations = await ctx.boundary.call(
        "event_relations",
        signal,
        lambda: ctx.service.event_relations(target, args.seq, signal=signal),
    )
    check_observation(caller, target, relations.header if relations is not None else None)
    assert relations is not None
    event = relations.event
    if event is None or event.session_id != target or event.seq != args.seq:
        raise event_not_found(target, args.seq)
    same_session = [
        e for e in (*relations.replaces, *relations.replaced_by) if e.session_id != target
    ]
    if same_session:
        raise not_found(target)  # a replacement from another session: a broken observation
    cites, cited_by = _visible(caller, relations.cites), _visible(caller, relations.cited_by)
    ids = [target, *(link.ref.session_id for link in (*cites, *cited_by))]
    titles = await ctx.titles(
        caller, ids, signal, fail_as=target, held=_held(target, relations.title)
    )
    return render_event_trace(relations, event, cites, cited_by, titles)


def _visible(caller: Caller, links: Sequence[LinkedEvent]) -> list[LinkedEvent]:
    """The links into the caller's workspace: missing and foreign sessions are omitted
    alike, without their ids."""
    return [
        link
        for link in links
        if link.header is not None
        and link.header.session_id == link.ref.session_id
        and is_authorized(caller, link.header)
        and (link.event is None or link.event.session_id == link.ref.session_id)
    ]


async def session_event_read(
    ctx: ToolContext,
    admitted: Admitted[args_input.SessionEventReadArguments],
    signal: ExecutionSignal,
) -> str:
    args = admitted.checked()
    window_limit = ctx.limits().max_event_window
    before, after = args.before or 0, args.after or 0
    for name, value in (("before", before), ("after", after)):
        if value > window_limit:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Invalid arguments for session_event_read: '{name}' must be at most "
                f"{window_limit} (the event window limit).",
            )
    caller, target = await ctx.caller_and_target(admitted, signal, args.session_id)
    window = await ctx.boundary.call(
        "read_event",
        signal,
        lambda: ctx.service.read_event(target, args.seq, before=before, after=after, signal=signal),
    )
    check_observation(caller, target, window.header if window is not None else None)
    assert window is not None
    stored = window.target
    if stored is None:
        raise event_not_found(target, args.seq)
    if stored.summary.seq != args.seq or any(
        e.summary.session_id != target for e in (stored, *window.before, *window.after)
    ):
        raise not_found(target)  # events of another session: a broken observation
    titles = await ctx.titles(
        caller, [target], signal, fail_as=target, held=_held(target, window.title)
    )
    stored = await _redacted(ctx, caller, stored, window.header.parent_session_id, signal)
    return render_event_read(window, stored, titles, before=before, after=after)


def _held(target: str, observation: TitleObservation | None) -> dict[str, TitleObservation]:
    """The target's title as the payload's observation carried it (none: read it); its
    header is checked against ``target`` where it is projected, as a read's would be."""
    return {} if observation is None else {target: observation}


async def _redacted(
    ctx: ToolContext,
    caller: Caller,
    stored: StoredEvent,
    parent_session_id: str | None,
    signal: ExecutionSignal,
) -> StoredEvent:
    """The exact JSON may name other sessions (its parent, cited sources); those outside
    the workspace (or missing, alike) are never printed."""
    referenced = _referenced_sessions(stored, parent_session_id)
    if not referenced:
        return stored
    visible = await authorized_subset(ctx.service, ctx.boundary, caller, referenced, signal)
    hidden = frozenset(referenced).difference(visible)
    return replace(stored, raw_json=redact_session_ids(stored.raw_json, hidden, HIDDEN_PARENT))


def _referenced_sessions(stored: StoredEvent, parent_session_id: str | None) -> tuple[str, ...]:
    """Other sessions the event's exact JSON names: a session/start's parent, cited sources."""
    own = stored.summary.session_id
    ids: list[str] = []
    if stored.summary.type == "session/start" and parent_session_id:
        ids.append(parent_session_id)
    cites = _cites_of(stored.raw_json)
    for cite in cites if isinstance(cites, list) else ():
        if isinstance(cite, dict) and isinstance(cite.get("session_id"), str):
            ids.append(cite["session_id"])
    return tuple(sid for sid in dict.fromkeys(ids) if sid != own)


def _cites_of(raw_json: str) -> object:
    """The exact JSON's ``cites`` value. Parsed only when the text can hold the key: it
    is spelled ``cites`` or with a ``\\u`` escape (a key may be escaped, and must still
    be found), so an event without citations is not parsed a second time."""
    if '"cites"' not in raw_json and "\\u" not in raw_json:
        return None
    try:
        raw = from_json(raw_json)
    except ValueError:
        return None
    return raw.get("cites") if isinstance(raw, dict) else None
