"""The store's reads other than search, each a function of one read transaction: build the
statement (``worker.store.sql``), run it (``Tx.read``), map its rows (``worker.store.results``,
``lineage``)."""

from __future__ import annotations

from contracts.partitions import PartitionScope
from worker.store import results, sql
from worker.store.protocol import (
    EventRelations,
    EventSummary,
    EventWindow,
    Generation,
    Lineage,
    LinkedEvent,
    TitleObservation,
)
from worker.store.sqlite import lineage as trees
from worker.store.sqlite.pool import Tx


def generation(tx: Tx) -> Generation:
    found, at = tx.read(sql.GENERATION)
    return results.generation(found[0], at)


def latest_seq_of_type(tx: Tx, session_id: str, event_type: str) -> int | None:
    statement = sql.LATEST_SEQ_OF_TYPE.get(event_type)
    if statement is None:
        found, at = tx.read(sql.LATEST_SEQ_OF_TYPE[None], (session_id, event_type))
    else:
        found, at = tx.read(statement, (session_id,))
    value = found[0][at["seq"]]
    return int(value) if value is not None else None


def titles(tx: Tx, ids: list[str]) -> dict[str, TitleObservation]:
    if not ids:
        return {}
    if len(ids) <= len(sql.TITLES_BY_KEYS):
        found, at = tx.read(sql.TITLES_BY_KEYS[len(ids) - 1], ids)
    else:
        found, at = tx.read(sql.TITLES_BY_JSON, (sql.json_list(ids),))
    observed: dict[str, TitleObservation] = {}
    for row in found:
        observation = results.title_observation(row, at)
        observed[observation.header.session_id] = observation
    return observed


def event_window(tx: Tx, session_id: str, seq: int, before: int, after: int) -> EventWindow | None:
    found, at = tx.read(sql.EVENT_WINDOW, (seq - before, seq + after, session_id))
    if not found:
        return None
    values, decode = at.getter(results.WINDOW_NAMES), tx.codec.json_and_preview_source
    events = [
        results.window_event(values(row), decode)
        for row in found
        if row[at["event_session_id"]] is not None
    ]
    observation = results.title_observation(found[0], at)
    return EventWindow(
        header=observation.header,
        target=next((ev for ev in events if ev.summary.seq == seq), None),
        before=tuple(ev for ev in events if ev.summary.seq < seq),
        after=tuple(ev for ev in events if ev.summary.seq > seq),
        title=observation,
    )


def seq_held(tx: Tx, session_id: str, seq: int, scope: PartitionScope | None = None) -> int | None:
    """The row id of event ``seq`` (0 when absent) once the session holds ``seq``, else
    None; also None for a session whose workspace is outside ``scope``."""
    found, at = tx.read(sql.SEQ_HELD, {"sid": session_id, "seq": seq})
    if not found or not found[0][at["held"]]:
        return None
    if scope is not None and not scope.holds_cwd(found[0][at["cwd"]]):
        return None
    return int(found[0][at["event_id"]] or 0)


def lineage(tx: Tx, session_id: str, cap: int) -> Lineage | trees.Truncated | None:
    """``cap``: rows either walk may take (-1: no LIMIT); ``TRUNCATED`` past it."""
    found, at = tx.read(sql.LINEAGE, {"sid": session_id, "cap": cap})
    return trees.lineage(found, at, session_id, cap)


def event_relations(tx: Tx, session_id: str, seq: int) -> EventRelations | None:
    found, at = tx.read(sql.HEADER_AND_EVENT, (seq, session_id))
    if not found:
        return None
    observation = results.title_observation(found[0], at)
    return EventRelations(
        header=observation.header,
        event=results.summary_or_none(found[0], at),
        replaces=_replacements(tx, sql.REPLACES, session_id, seq),
        replaced_by=_replacements(tx, sql.REPLACED_BY, session_id, seq),
        cites=_linked(tx, sql.CITES, session_id, seq),
        cited_by=_linked(tx, sql.CITED_BY, session_id, seq),
        title=observation,
    )


def _replacements(tx: Tx, statement: str, session_id: str, seq: int) -> tuple[EventSummary, ...]:
    found, at = tx.read(statement, (seq, session_id, session_id, seq, seq))
    return tuple(results.summary(row, at) for row in found)


def _linked(tx: Tx, statement: str, session_id: str, seq: int) -> tuple[LinkedEvent, ...]:
    found, at = tx.read(statement, (session_id, seq))
    return tuple(results.linked(row, at) for row in found)
