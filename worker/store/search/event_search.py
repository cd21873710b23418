"""``search_events``: one session's events, best first, as steps inside one read
transaction of the store (the same semantics as ``search_ops.SessionSearchRun``, scoped to
one session)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tantivy

from worker.store import sql
from worker.store.database import Columns, Fetch
from worker.store.event_codec import EventCodec
from worker.store.marks import plain_excerpt
from worker.store.protocol import EventFilter, EventHit
from worker.store.search import ranking
from worker.store.search.excerpt import highlighter
from worker.store.search.hybrid import SemanticQuery
from worker.store.search.query import QueryPlan
from worker.store.search.search_ops import MAX_CANDIDATE_WINDOW, PageResult, page_rows
from worker.store.search.search_reader import (
    Candidate,
    IndexView,
    QueryBuilder,
    count,
    scope_clauses,
    top,
)
from worker.store.search.semantic.fusion import Lexical, fuse
from worker.store.search.time_words import TimeRange

# Each candidate SQL confirmed, with its row and the row's columns.
_Kept = list[tuple[Candidate, tuple[tuple[Any, ...], Columns]]]


class EventSearchRun:
    """One page of ``search_events`` inside a read transaction."""

    def __init__(
        self,
        fetch: Fetch,
        index: IndexView,
        plan: QueryPlan,
        *,
        codec: EventCodec,
        session_id: str,
        ws: str,
        events: EventFilter,
        as_of_seq: int,
        scope_to_seq: int | None,
        semantic: SemanticQuery | None = None,
        favour: Sequence[TimeRange] = (),
    ) -> None:
        self._ws = ws
        self._semantic = semantic
        self._fetch = fetch
        self._codec = codec  # the connection's: the page's rows are decoded by it
        self._searcher = index.searcher
        self._plan = plan
        self._builder = QueryBuilder(plan, ws, index, favour)
        self._as_of_seq = as_of_seq
        self._covered_seq = index.covers_stream_seq
        self._session_id = session_id
        self._scope_to_seq = scope_to_seq
        seq_to = events.seq_to
        if scope_to_seq is not None:
            seq_to = scope_to_seq if seq_to is None else min(seq_to, scope_to_seq)
        self._clauses, _ = scope_clauses(
            as_of_seq=as_of_seq,
            covered_seq=self._covered_seq,
            session_ids=[session_id],
            types=events.types,
            surfaces=events.surfaces,
            time_from_ms=events.time_from_ms,
            time_to_ms=events.time_to_ms,
            seq_from=events.seq_from,
            seq_to=seq_to,
        )
        self._params: dict[str, Any] = {"sid": session_id, "as_of": as_of_seq}
        check = sql.event_filter_sql(events, self._params, with_seq=True)
        if scope_to_seq is not None:
            self._params["scope_to"] = scope_to_seq
            check += " AND e.seq <= :scope_to"
        self._check = check

    def page(self, offset: int, size: int, partial: bool | None) -> PageResult[EventHit]:
        want = offset + size + 1
        if partial is None and self._plan.natural_language:
            partial = True  # a question: rank by how many of its words an event holds
        kept = self._run(self._builder.all_words(self._clauses), want) if not partial else []
        if partial is None:  # a first page decides: all words, else best partial matches
            partial = not kept
        if partial:
            kept = self._run(self._builder.partial(self._clauses), want)
        holds_all = any(c.holds_all for c, _ in kept)
        only: set[int] = set()
        semantic = self._semantic
        open_question = partial and not self._decided(kept)
        if semantic is not None and want <= MAX_CANDIDATE_WINDOW and semantic.needed(open_question):
            kept, only = self._fused(kept, partial)
        hits = self._hits(kept[offset : offset + size], only)
        result = PageResult[EventHit](
            hits=hits, more=len(kept) > offset + size, ranked_partial=partial
        )
        if offset == 0 and partial and not holds_all:
            result.partial = True
            result.unmatched = self._unmatched()
        if offset == 0 and not hits and self._check:
            result.filtered_out = self._matches_unfiltered()
        return result

    def _run(self, query: tantivy.Query, want: int) -> _Kept:
        if want > MAX_CANDIDATE_WINDOW:
            return []
        kept = self._confirmed(top(self._searcher, query, want))
        kept.sort(key=lambda pair: ranking.order_key(pair[0].score, self._session_id, pair[0].seq))
        return kept

    def _decided(self, kept: _Kept) -> bool:
        """``ranking.decided``: the only event of the scope holding every distinctive
        group of the question is the lexical first."""
        mask = self._builder.distinctive
        if self._semantic is None or not mask or not kept:
            return False
        holding = top(self._searcher, self._builder.all_distinctive(self._clauses), 2)
        return ranking.decided(kept[0][0].event_id, [c.event_id for c in holding], mask)

    def _fused(self, kept: _Kept, partial: bool) -> tuple[_Kept, set[int]]:
        """Lexical and semantic events merged by ``fusion.fuse``; semantic candidates are
        confirmed by the same SQL as lexical ones (the session, ``as_of_seq`` and filters)."""
        assert self._semantic is not None
        scored = self._semantic.nearest(self._ws, self._session_id)
        semantic = self._confirmed([Candidate(event_id, cos, 0) for event_id, cos in scored])
        by_id = {c.event_id: (c, row) for c, row in semantic}
        by_id.update({c.event_id: (c, row) for c, row in kept})
        lexical = [
            Lexical(c.event_id, ranking.share(c.coverage, c.holds_all, partial)) for c, _ in kept
        ]
        held = self._builder.held_by(list(by_id))
        order = fuse(self._plan, lexical, [c.event_id for c, _ in semantic], held)
        return [by_id[event_id] for event_id, _ in order], {e for e, only in order if only}

    def _confirmed(self, candidates: list[Candidate]) -> _Kept:
        """The candidates SQL confirms, in their order: ids only, no event's text derived
        (only the page's are, by ``_hits``)."""
        if not candidates:
            return []
        found, at = self._fetch(
            "SELECT e.id AS id FROM events e"
            " WHERE e.id IN (SELECT value FROM json_each(:cand)) AND +e.session_id = :sid"
            f" AND e.stream_seq <= :as_of{self._check}",
            dict(self._params, cand=sql.json_list(c.event_id for c in candidates)),
        )
        event_id = at["id"]
        by_id = {int(r[event_id]): r for r in found}
        return [(c, (by_id[c.event_id], at)) for c in candidates if c.event_id in by_id]

    def _hits(self, page: _Kept, only: set[int]) -> list[EventHit]:
        light = highlighter(self._plan)
        ids = [c.event_id for c, _ in page]
        summaries, excerpts = page_rows(self._fetch, self._codec, ids, light, only)
        hits = []
        for c, _ in page:
            summary = summaries[c.event_id]
            hits.append(
                EventHit(
                    event=summary,
                    excerpt=excerpts.get(c.event_id) or plain_excerpt(summary.preview),
                    score=-c.score,
                    # Semantic alone, and no word of the query highlighted in its text.
                    semantic_only=c.event_id in only and c.event_id not in excerpts,
                )
            )
        return hits

    def _unmatched(self) -> tuple[str, ...]:
        minimal = self._minimal()
        return tuple(
            term.text
            for group in self._plan.required
            if count(self._searcher, self._builder.one_group(group, minimal)) == 0
            for term in group
        )

    def _matches_unfiltered(self) -> bool:
        minimal = self._minimal(seq_to=self._scope_to_seq)
        return count(self._searcher, self._builder.partial(minimal)) > 0

    def _minimal(self, seq_to: int | None = None) -> list[tantivy.Query]:
        """The session and ``as_of_seq`` only: what the model's filters may have hidden."""
        clauses, _ = scope_clauses(
            as_of_seq=self._as_of_seq,
            covered_seq=self._covered_seq,
            session_ids=[self._session_id],
            seq_to=seq_to,
        )
        return clauses
