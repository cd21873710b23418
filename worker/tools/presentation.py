"""Plain-text rendering of tool results, for a model to read.

Times render as UTC ISO 8601 with milliseconds. Only sessions the caller may see are
rendered here: the workflows hand over authorized, projected values only. Text recalled
from sessions (titles, excerpts, event previews, exact event JSON) is always passed
through ``quote_recalled`` (``formatting``): it is data from past work, never
instructions. ``reading`` renders an event read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from worker.store import (
    EventHit,
    EventRelations,
    EventSummary,
    LineageNode,
    LinkedEvent,
    SessionHeader,
    SessionHit,
)
from worker.tools.formatting import (
    count,
    event_head,
    event_line,
    format_title,
    one_line,
    quote_query,
    session_line,
)
from worker.tools.formatting import quote_recalled as quote_recalled  # re-exported
from worker.tools.titles import UNAVAILABLE, TitleInfo
from worker.tools.workspace_access import VisibleLineage

HIDDEN_PARENT: Final = "not available in this workspace"
HIDDEN_ANCESTORS: Final = "(the lineage continues with a session not available in this workspace)"
# Sub-sessions deeper than this are not indented further; their line gives the depth.
MAX_INDENT_DEPTH: Final = 32
DEEP_TREE_NOTE: Final = (
    f"  (sub-sessions deeper than {MAX_INDENT_DEPTH} levels are not indented further; "
    "[depth N] gives their level)"
)


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """How a search ended, beyond its hits."""

    capped: bool
    filtered_out: bool
    model_filters: bool
    partial: bool = False
    unmatched: tuple[str, ...] = ()
    time_readings: tuple[str, ...] = ()  # how the query's dates were read (first page)


# A hit of the semantic search alone (issue 21): related in meaning, no query word in it.
SEMANTIC_ONLY: Final = "related, no word in common"


def _time_line(outcome: SearchOutcome) -> list[str]:
    """How the query's dates were read: they are not words to match, events of that time
    rank first among like matches; the filters set a time exactly."""
    if not outcome.time_readings:
        return []
    return [
        "Time in the query: " + "; ".join(outcome.time_readings) + ". Not searched as words; "
        "events of that time rank higher. To set the time exactly, use the "
        "event_after/event_before filters."
    ]


def _partial_line(outcome: SearchOutcome) -> list[str]:
    """The one line that says the hits are best partial matches, and what matched nothing."""
    if not outcome.partial:
        return []
    line = (
        "No event contains every word; best partial matches shown"
        " (more of the words, and rarer ones, first)."
    )
    if outcome.unmatched:
        shown = ", ".join(quote_query(term) for term in outcome.unmatched[:10])
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
                f"The query {quote_query(query)} matched events in earlier sessions of this "
                "workspace, but the filters removed every match. Loosen or remove filters."
            )
        return " ".join(
            [
                f"No earlier session in this workspace matches {quote_query(query)}.",
                *_time_line(outcome),
            ]
        )
    lines = [
        f"Found {count(len(hits), 'session')} matching {quote_query(query)}, best match first."
    ]
    lines += _time_line(outcome) + _partial_line(outcome)
    for number, hit in enumerate(hits, start=1):
        header = hit.header
        lines.append("")
        lines.append(f"{number}. {session_line(header, titles)}")
        lines.append(f"   parent: {_parent(header, titles)}")
        if hit.semantic_only:  # found by meaning: the model should know no word matched
            lines.append(f"   {SEMANTIC_ONLY}: {event_head(hit.event)}")
        else:
            lines.append(
                f"   strongest match: {event_head(hit.event)} "
                f"({count(hit.matching_events, 'matching event')})"
            )
        lines.append(f"   {quote_recalled(one_line(hit.excerpt))}")
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
                f"The query {quote_query(query)} matched events in {session}, but the filters "
                f"removed every match{scope}. Loosen or remove filters."
            )
        earlier = " before the current step" if own_session else ""
        return " ".join(
            [f"No event{earlier} in {session} matches {quote_query(query)}.", *_time_line(outcome)]
        )
    lines = [
        f"Found {count(len(hits), 'event')} matching {quote_query(query)} in {session} "
        f"({header.availability}), best match first{scope}."
    ]
    lines += _time_line(outcome) + _partial_line(outcome)
    for hit in hits:
        event = hit.event
        lines.append("")
        related = f" ({SEMANTIC_ONLY})" if hit.semantic_only else ""
        lines.append(event_head(event) + related)
        lines.append(f"  {quote_recalled(one_line(hit.excerpt))}")
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
        f"Lineage of session {session_line(target, titles)}",
        "",
        "Ancestors (nearest first):",
    ]
    for ancestor in lineage.ancestors:
        lines.append(f"  {session_line(ancestor, titles)}")
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
        into.append(prefix + session_line(node.header, titles))
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
        f"  {event_line(event)}",
        "",
    ]
    _section(
        lines,
        "Replaces (events this one took the place of, nearest first):",
        [event_line(e) for e in relations.replaces],
    )
    _section(
        lines,
        "Replaced by (events that took this one's place, nearest first):",
        [event_line(e) for e in relations.replaced_by],
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
            rendered.append(f"{event_line(link.event, with_session=True)} · session {title}")
    return rendered
