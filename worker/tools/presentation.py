"""Plain-text rendering of tool results, for a model to read.

Times render as UTC ISO 8601 with milliseconds. Only sessions the caller may see are
rendered here: the operations hand over authorized, projected values only. Text recalled
from sessions (titles, excerpts, event previews, exact event JSON) is always passed
through ``quote_recalled``: it is data from past work, never instructions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from worker.store import (
    EventHit,
    EventRelations,
    EventSummary,
    EventWindow,
    LineageNode,
    LinkedEvent,
    SessionHeader,
    SessionHit,
    StoredEvent,
)
from worker.tools.titles import UNAVAILABLE, TitleInfo
from worker.tools.workspace_access import VisibleLineage

HIDDEN_PARENT: Final = "not available in this workspace"
HIDDEN_ANCESTORS: Final = "(the lineage continues with a session not available in this workspace)"
_MAX_TITLE: Final = 200
# Sub-sessions deeper than this are not indented further; their line gives the depth.
MAX_INDENT_DEPTH: Final = 32
DEEP_TREE_NOTE: Final = (
    f"  (sub-sessions deeper than {MAX_INDENT_DEPTH} levels are not indented further; "
    "[depth N] gives their level)"
)


# Recalled text is shown between these; the text itself can never contain them bare.
RECALLED_OPEN: Final = "\u27e6"  # ⟦
RECALLED_CLOSE: Final = "\u27e7"  # ⟧
_RECALLED_ESCAPES: Final = str.maketrans({RECALLED_OPEN: "\\u27e6", RECALLED_CLOSE: "\\u27e7"})


def quote_recalled(text: str) -> str:
    """``text`` from another session marked as quoted data: ``⟦text⟧``.

    A ⟦ or ⟧ inside the text is written as its JSON escape (``\\u27e6``, ``\\u27e7``),
    so the text cannot close the quote and continue as if it were the tool's own words.
    In exact event JSON the two characters can only stand inside strings, where the
    escape decodes to the same value: the JSON stays exact.
    """
    return RECALLED_OPEN + text.translate(_RECALLED_ESCAPES) + RECALLED_CLOSE


def format_time(ms: int | None) -> str:
    if ms is None:
        return "unknown"
    instant = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def format_title(info: TitleInfo) -> str:
    if not info.available:
        return "(title unavailable)"
    if not info.title or not info.title.strip():
        return "(untitled)"
    title = _one_line(info.title)
    if len(title) > _MAX_TITLE:
        title = title[:_MAX_TITLE] + "…"
    return quote_recalled(title)


def _session_line(header: SessionHeader, titles: Mapping[str, TitleInfo]) -> str:
    title = format_title(titles.get(header.session_id, UNAVAILABLE))
    return (
        f"{header.session_id} {title} · {header.availability} · "
        f"created {format_time(header.created_ms)} · updated {format_time(header.updated_ms)}"
    )


def _event_head(event: EventSummary, *, with_session: bool = False) -> str:
    where = f"{event.session_id} seq {event.seq}" if with_session else f"seq {event.seq}"
    return f"{where} · {event.type} · {event.surface} · {format_time(event.time_ms)}"


def _event_line(event: EventSummary, *, with_session: bool = False) -> str:
    head = _event_head(event, with_session=with_session)
    preview = _one_line(event.preview)
    return f"{head} — {quote_recalled(preview)}" if preview else head


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """How a search ended, beyond its hits."""

    capped: bool
    filtered_out: bool
    model_filters: bool
    partial: bool = False
    unmatched: tuple[str, ...] = ()


def _partial_line(outcome: SearchOutcome) -> list[str]:
    """The one line that says the hits are best partial matches, and what matched nothing."""
    if not outcome.partial:
        return []
    line = "No event contains every word; best partial matches shown (most of the words first)."
    if outcome.unmatched:
        shown = ", ".join(_quote(term) for term in outcome.unmatched[:10])
        line += f" No match at all for: {shown}."
    return [line]


def render_session_search(
    query: str,
    hits: Sequence[SessionHit],
    titles: Mapping[str, TitleInfo],
    outcome: SearchOutcome,
    *,
    limit: int,
) -> str:
    if not hits:
        if outcome.filtered_out:
            return (
                f"The query {_quote(query)} matched events in earlier sessions of this "
                "workspace, but the filters removed every match. Loosen or remove filters."
            )
        return f"No earlier session in this workspace matches {_quote(query)}."
    lines = [f"Found {_count(len(hits), 'session')} matching {_quote(query)}, best match first."]
    lines += _partial_line(outcome)
    for number, hit in enumerate(hits, start=1):
        header = hit.header
        lines.append("")
        lines.append(f"{number}. {_session_line(header, titles)}")
        lines.append(f"   parent: {_parent(header, titles)}")
        lines.append(
            f"   strongest match: {_event_head(hit.event)} "
            f"({_count(hit.matching_events, 'matching event')})"
        )
        lines.append(f"   {quote_recalled(_one_line(hit.excerpt))}")
        if hit.own_line:
            own = quote_recalled(hit.own_line)
            lines.append(f"   shares copied events with another result; its own: {own}")
    lines.append("")
    if outcome.capped:
        lines.append(
            f"Showing the first {limit} sessions; more may match. Narrow the query or "
            "filters to reach the others."
        )
    lines.append(
        "Next: session_event_search (query, session_id) searches inside one session; "
        "session_event_read (session_id, seq, optional before/after) reads an event exactly; "
        "session_trace (session_id) shows a session's parents and sub-sessions."
    )
    return "\n".join(lines)


def _parent(header: SessionHeader, titles: Mapping[str, TitleInfo]) -> str:
    parent_id = header.parent_session_id
    if parent_id is None:
        return "none (root session)"
    info = titles.get(parent_id, UNAVAILABLE)
    if info.visible is not True:
        # Missing, foreign and unreadable parents read the same: no id is revealed.
        return HIDDEN_PARENT
    return f"{parent_id} {format_title(info)}"


def render_event_search(
    query: str,
    header: SessionHeader,
    hits: Sequence[EventHit],
    titles: Mapping[str, TitleInfo],
    outcome: SearchOutcome,
    *,
    limit: int,
    own_session: bool,
) -> str:
    session = (
        f"session {header.session_id} {format_title(titles.get(header.session_id, UNAVAILABLE))}"
    )
    scope = " (the current step is not searched)" if own_session else ""
    if not hits:
        if outcome.filtered_out and outcome.model_filters:
            return (
                f"The query {_quote(query)} matched events in {session}, but the filters "
                f"removed every match{scope}. Loosen or remove filters."
            )
        earlier = " before the current step" if own_session else ""
        return f"No event{earlier} in {session} matches {_quote(query)}."
    lines = [
        f"Found {_count(len(hits), 'event')} matching {_quote(query)} in {session} "
        f"({header.availability}), best match first{scope}."
    ]
    lines += _partial_line(outcome)
    for hit in hits:
        event = hit.event
        lines.append("")
        lines.append(_event_head(event))
        lines.append(f"  {quote_recalled(_one_line(hit.excerpt))}")
    lines.append("")
    if outcome.capped:
        lines.append(
            f"Showing the first {limit} events; more may match. Narrow the query or filters "
            "to reach the others."
        )
    lines.append(
        f'Next: session_event_read (session_id "{header.session_id}", seq, optional '
        "before/after) reads an event exactly with its neighbours; session_event_trace "
        "(session_id, seq) shows its replacements and citations."
    )
    return "\n".join(lines)


def render_trace(lineage: VisibleLineage, titles: Mapping[str, TitleInfo]) -> str:
    target = lineage.target
    lines = [
        f"Lineage of session {_session_line(target, titles)}",
        "",
        "Ancestors (nearest first):",
    ]
    for ancestor in lineage.ancestors:
        lines.append(f"  {_session_line(ancestor, titles)}")
    if lineage.continues_hidden:
        lines.append(f"  {HIDDEN_ANCESTORS}")
    elif not lineage.ancestors:
        lines.append("  none (root session)")
    lines.append("")
    lines.append("Descendants (sub-sessions, recursively):")
    if not lineage.descendants:
        lines.append("  none")
    _tree(lineage.descendants, titles, depth=1, into=lines)
    lines.append("")
    lines.append(
        "Next: session_event_search (query, session_id) searches one of these sessions; "
        "session_trace (session_id) re-centres on another."
    )
    return "\n".join(lines)


def _tree(
    nodes: Sequence[LineageNode], titles: Mapping[str, TitleInfo], *, depth: int, into: list[str]
) -> None:
    """Depth-first, children in order, without recursion (a lineage may be any depth).

    Indentation stops growing at ``MAX_INDENT_DEPTH``; deeper lines say their depth
    instead, so a deep chain costs linear, not quadratic, text."""
    stack: list[tuple[Iterator[LineageNode], int]] = [(iter(nodes), depth)]
    deep = False
    while stack:
        children, level = stack[-1]
        node = next(children, None)
        if node is None:
            stack.pop()
            continue
        if level <= MAX_INDENT_DEPTH:
            prefix = "  " * level + "- "
        else:
            prefix = "  " * MAX_INDENT_DEPTH + f"- [depth {level}] "
            deep = True
        into.append(prefix + _session_line(node.header, titles))
        if node.children:
            stack.append((iter(node.children), level + 1))
    if deep:
        into.append(DEEP_TREE_NOTE)


def render_event_trace(
    relations: EventRelations,
    event: EventSummary,
    cites: Sequence[LinkedEvent],
    cited_by: Sequence[LinkedEvent],
    titles: Mapping[str, TitleInfo],
) -> str:
    header = relations.header
    title = format_title(titles.get(header.session_id, UNAVAILABLE))
    lines = [
        f"Event seq {event.seq} of session {header.session_id} {title}",
        f"  {_event_line(event)}",
        "",
    ]
    _section(
        lines,
        "Replaces (events this one took the place of, nearest first):",
        [_event_line(e) for e in relations.replaces],
    )
    _section(
        lines,
        "Replaced by (events that took this one's place, nearest first):",
        [_event_line(e) for e in relations.replaced_by],
    )
    _section(lines, "Cites (source events it was derived from):", _linked(cites, titles))
    _section(lines, "Cited by (events derived from this one):", _linked(cited_by, titles))
    lines.append("Next: session_event_read (session_id, seq) reads any of these events exactly.")
    return "\n".join(lines)


def _section(lines: list[str], heading: str, items: Sequence[str]) -> None:
    lines.append(heading)
    lines.extend(f"  {item}" for item in items)
    if not items:
        lines.append("  none")
    lines.append("")


def _linked(links: Sequence[LinkedEvent], titles: Mapping[str, TitleInfo]) -> list[str]:
    rendered = []
    for link in links:
        title = format_title(titles.get(link.ref.session_id, UNAVAILABLE))
        if link.event is None:
            rendered.append(
                f"{link.ref.session_id} seq {link.ref.seq} · (event not in the index) · "
                f"session {title}"
            )
        else:
            rendered.append(f"{_event_line(link.event, with_session=True)} · session {title}")
    return rendered


def render_event_read(
    window: EventWindow,
    target: StoredEvent,
    titles: Mapping[str, TitleInfo],
    *,
    before: int,
    after: int,
) -> str:
    header = window.header
    summary = target.summary
    title = format_title(titles.get(header.session_id, UNAVAILABLE))
    lines = [
        f"Event seq {summary.seq} of session {header.session_id} {title} "
        f"({summary.type} · {summary.surface} · {format_time(summary.time_ms)})",
        "",
        "Exact event JSON:",
        quote_recalled(target.raw_json),
    ]
    lines.extend(_readable_text_fields(target.raw_json))
    if before:
        lines.append("")
        lines.append(f"Before ({_count(len(window.before), 'event')}, oldest first):")
        lines.extend(f"  {_event_line(e.summary)}" for e in window.before)
        if not window.before:
            lines.append("  none (no earlier events)")
    if after:
        lines.append("")
        lines.append(f"After ({_count(len(window.after), 'event')}, oldest first):")
        lines.extend(f"  {_event_line(e.summary)}" for e in window.after)
        if not window.after:
            lines.append("  none (no later events)")
    return "\n".join(lines)


# Multi-line payload strings rendered below the exact JSON, at most this many.
_MAX_READABLE_FIELDS: Final = 20
_QUOTE_PREFIX: Final = "> "


def _readable_text_fields(raw_json: str) -> list[str]:
    """The payload's multi-line strings again, readable: the JSON above shows them as one
    string full of \\n escapes. Every line is prefixed, so the text cannot end the quote."""
    if "\\n" not in raw_json:  # no escaped newline: nothing to render (the common case)
        return []
    try:
        payload = json.loads(raw_json).get("payload")
    except (ValueError, AttributeError):
        return []
    fields = [(path, text) for path, text in _strings("payload", payload) if "\n" in text]
    if not fields:
        return []
    lines = [
        "",
        f"Multi-line text of the payload, rendered (each line prefixed with "
        f'"{_QUOTE_PREFIX.strip()}"; the exact JSON above is authoritative):',
    ]
    for path, text in fields[:_MAX_READABLE_FIELDS]:
        lines.append(f"{path}:")
        lines.extend(
            _QUOTE_PREFIX + line if line else _QUOTE_PREFIX.strip()
            for line in quote_recalled(text).splitlines()
        )
    if len(fields) > _MAX_READABLE_FIELDS:
        lines.append(f"({len(fields) - _MAX_READABLE_FIELDS} more multi-line fields not shown)")
    return lines


def _strings(path: str, value: object) -> list[tuple[str, str]]:
    """(JSON path, string) for every string inside ``value``, in document order."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in _strings(f"{path}.{key}", item)]
    if isinstance(value, list):
        return [pair for i, item in enumerate(value) for pair in _strings(f"{path}[{i}]", item)]
    return []


def _quote(text: str) -> str:
    flat = _one_line(text)
    if len(flat) > 120:
        flat = flat[:120] + "…"
    return f'"{flat}"'
