"""The readers' side of the search index: a commit to search (``SearchIndexReader``,
``IndexView``), the queries a plan becomes (``QueryBuilder``, ``scope_clauses``) and the
searches (``top``, ``count``, ``session_counts``). Every hit is a candidate SQL confirms."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

from worker.store.query import PlanTerm, QueryPlan
from worker.store.search_index import (
    EXACT_BOOST,
    GROUP_SCORE,
    SCHEMA,
    Position,
    open_index,
    read_position,
    search_index_path,
    workspace_key,
)


@dataclass(frozen=True, slots=True)
class Candidate:
    event_id: int
    score: float  # higher is better
    groups: int  # query groups the event matched (partial matches), else 0


@dataclass(frozen=True, slots=True)
class IndexView:
    """One commit of the search index: its searcher and the store's stream sequence the
    commit covers (no document of it is past that)."""

    searcher: tantivy.Searcher
    covers_stream_seq: int


class SearchIndexReader:
    """Searches of the index, as of its last commit. Thread-safe for concurrent searches."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._index = open_index(path)
        self._index.config_reader("Manual")
        self._meta_stamp: tuple[int, int] | None = None
        self._position = Position()
        self._view = IndexView(self._index.searcher(), 0)
        self.refresh()

    @classmethod
    def open(cls, db_path: str | Path) -> SearchIndexReader | None:
        path = search_index_path(db_path)
        if not (path / "meta.json").exists():
            return None
        return cls(path)

    def refresh(self) -> Position:
        """Take the latest commit when the index changed (one stat call otherwise)."""
        try:
            st = os.stat(self._path / "meta.json")
        except FileNotFoundError:
            return self._position
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._meta_stamp:
            self._index.reload()
            searcher = self._index.searcher()
            self._position = read_position(searcher)
            # One attribute: a search never pairs one commit's searcher with another's
            # position.
            self._view = IndexView(searcher, self._position.stream_seq)
            self._meta_stamp = stamp
        return self._position

    @property
    def position(self) -> Position:
        return self._position

    def view(self) -> IndexView:
        return self._view

    def doc_count(self) -> int:
        return int(self._view.searcher.num_docs)


class QueryBuilder:
    """Turns a ``QueryPlan`` into tantivy queries for one workspace's key."""

    def __init__(self, plan: QueryPlan, ws: str) -> None:
        self.plan = plan
        self._key = workspace_key(ws)

    def term(self, term: PlanTerm) -> tantivy.Query:
        """What one term matches: exact words (boosted) or their derived forms."""
        key = self._key
        exact = [key + w.exact for w in term.words]
        derived = [key + d for w in term.words for d in w.derived]
        exact_q = _phrase("ex", exact)
        if term.quoted and not any(w.cjk for w in term.words):
            return exact_q
        return tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.boost_query(exact_q, EXACT_BOOST)),
                (tantivy.Occur.Should, _phrase("nm", derived)),
            ]
        )

    def group(self, group: Sequence[PlanTerm]) -> tantivy.Query:
        if len(group) == 1:
            return self.term(group[0])
        return tantivy.Query.boolean_query([(tantivy.Occur.Should, self.term(t)) for t in group])

    def all_words(self, scope: Sequence[tantivy.Query]) -> tantivy.Query:
        """Every required group must match; optional (function-word) groups only rank."""
        clauses = [(tantivy.Occur.Must, self.group(g)) for g in self.plan.required]
        clauses += [(tantivy.Occur.Should, self.group(g)) for g in self.plan.optional]
        return self._with(clauses, scope)

    def partial(self, scope: Sequence[tantivy.Query]) -> tantivy.Query:
        """Any required group; ranked by how many groups match, then relevance."""
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for group in self.plan.required:
            query = self.group(group)
            clauses.append(
                (tantivy.Occur.Should, tantivy.Query.const_score_query(query, GROUP_SCORE))
            )
            clauses.append((tantivy.Occur.Should, query))
        inner = tantivy.Query.boolean_query(clauses)
        return self._with([(tantivy.Occur.Must, inner)], scope)

    def one_group(self, group: Sequence[PlanTerm], scope: Sequence[tantivy.Query]) -> tantivy.Query:
        return self._with([(tantivy.Occur.Must, self.group(group))], scope)

    def _with(
        self, clauses: list[tuple[tantivy.Occur, tantivy.Query]], scope: Sequence[tantivy.Query]
    ) -> tantivy.Query:
        clauses = list(clauses)
        clauses += [(tantivy.Occur.Must, _filter(q)) for q in scope]
        clauses += [(tantivy.Occur.MustNot, self.term(t)) for t in self.plan.excluded]
        return tantivy.Query.boolean_query(clauses)


def _phrase(field: str, tokens: Sequence[str]) -> tantivy.Query:
    if len(tokens) == 1:
        return tantivy.Query.term_query(SCHEMA, field, tokens[0])
    return tantivy.Query.phrase_query(SCHEMA, field, list(tokens))


def _filter(query: tantivy.Query) -> tantivy.Query:
    """A clause that restricts without scoring."""
    return tantivy.Query.const_score_query(query, 0.0)


def scope_clauses(
    *,
    snapshot_seq: int,
    covered_seq: int | None = None,
    session_ids: Sequence[str] | None = None,
    exclude_session_ids: Sequence[str] = (),
    types: Sequence[str] | None = None,
    surfaces: Sequence[str] | None = None,
    time_from_ms: int | None = None,
    time_to_ms: int | None = None,
    seq_from: int | None = None,
    seq_to: int | None = None,
) -> tuple[list[tantivy.Query], list[str]]:
    """(restricting clauses, session ids to exclude). SQL re-checks every one of these.

    ``covered_seq``: the stream sequence the searched commit covers. When the snapshot is
    not older, no document can be past it and the snapshot's range is left out (a range
    over a number unique per event cost ~1 ms per query at 1M events)."""
    clauses: list[tantivy.Query] = []
    if covered_seq is None or covered_seq > snapshot_seq:
        clauses.append(_range("sseq", tantivy.FieldType.Unsigned, 0, snapshot_seq))
    if session_ids is not None:
        clauses.append(tantivy.Query.term_set_query(SCHEMA, "sid", list(session_ids)))
    if types is not None:
        clauses.append(tantivy.Query.term_set_query(SCHEMA, "type", list(types)))
    if surfaces is not None:
        clauses.append(tantivy.Query.term_set_query(SCHEMA, "surface", list(surfaces)))
    if time_from_ms is not None or time_to_ms is not None:
        clauses.append(_range("time", tantivy.FieldType.Integer, time_from_ms, time_to_ms))
    if seq_from is not None or seq_to is not None:
        clauses.append(_range("seq", tantivy.FieldType.Unsigned, seq_from, seq_to))
    return clauses, list(exclude_session_ids)


def _range(field: str, kind: tantivy.FieldType, low: int | None, high: int | None) -> tantivy.Query:
    if kind == tantivy.FieldType.Unsigned:
        low = None if low is None else max(0, low)
        if high is not None and high < 0:
            return tantivy.Query.empty_query()
    return tantivy.Query.range_query(SCHEMA, field, kind, low, high)


def excluding(query: tantivy.Query, session_ids: Sequence[str]) -> tantivy.Query:
    if not session_ids:
        return query
    return tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, query),
            (tantivy.Occur.MustNot, tantivy.Query.term_set_query(SCHEMA, "sid", list(session_ids))),
        ]
    )


def top(
    searcher: tantivy.Searcher, query: tantivy.Query, limit: int, offset: int = 0
) -> list[Candidate]:
    """The best ``limit`` events after ``offset``, best first."""
    if limit <= 0:
        return []
    hits = searcher.search(query, limit, count=False, offset=offset).hits
    if not hits:
        return []
    ids = searcher.fast_field_values("id", [address for _, address in hits])
    return [
        Candidate(int(event_id), float(score), int(score // GROUP_SCORE))
        for (score, _), event_id in zip(hits, ids, strict=True)
        if event_id is not None
    ]


def count(searcher: tantivy.Searcher, query: tantivy.Query) -> int:
    found: int | None = searcher.search(query, 1, count=True).count  # type: ignore[attr-defined]
    return int(found or 0)


def session_counts(
    searcher: tantivy.Searcher, query: tantivy.Query, session_ids: Sequence[str]
) -> dict[str, int]:
    """Matching events per session, for the named sessions only."""
    if not session_ids:
        return {}
    scoped = tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, query),
            (tantivy.Occur.Must, tantivy.Query.term_set_query(SCHEMA, "sid", list(session_ids))),
        ]
    )
    result = searcher.aggregate(
        scoped, {"by_session": {"terms": {"field": "sid", "size": len(session_ids)}}}
    )
    buckets = result.get("by_session", {}).get("buckets", [])
    return {str(b["key"]): int(b["doc_count"]) for b in buckets}
