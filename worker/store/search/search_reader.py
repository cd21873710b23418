"""The readers' side of the search index: a commit to search (``SearchIndexReader``,
``IndexView``), the queries a plan becomes (``QueryBuilder``, ``scope_clauses``) and the
searches (``top``, ``count``, ``session_counts``). Every hit is a candidate SQL confirms."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import tantivy

from worker.store.search import analysis, ranking
from worker.store.search.query import PlanTerm, QueryPlan
from worker.store.search.search_schema import (
    CONVERSATION_MARK,
    LEAD_MARK,
    LONG_MARK,
    SCHEMA,
    SHORT_MARK,
    TITLE_MARK,
    Position,
    open_index,
    read_position,
    search_index_path,
    workspace_key,
)
from worker.store.search.time_words import TimeRange


@dataclass(frozen=True, slots=True)
class Candidate:
    event_id: int
    score: float  # higher is better (``ranking``)
    seq: int  # the event's position in its session: the total order's last key

    @property
    def coverage(self) -> int:
        return ranking.coverage_of(self.score)

    @property
    def holds_all(self) -> bool:
        """The event holds every required group."""
        return ranking.holds_all(self.score)


@dataclass(frozen=True, slots=True)
class IndexView:
    """One commit of the search index: its searcher and the store's stream sequence the
    commit covers (no document of it is past that)."""

    searcher: tantivy.Searcher
    covers_stream_seq: int
    # Whether the commit may hold deleted documents of a workspace (a purge was applied):
    # the engine's document frequencies count those until segments merge, so counts are
    # then read by a search instead (exact on every replica, whatever its merges).
    purged: bool = False
    # Per workspace key: whether two of its titles or first prompts share a paragraph at
    # all (read once per commit; most workspaces have none, and their searches then skip
    # the shared-prompt reads: ``QueryBuilder._read_lead_bonus``).
    shares_leads: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def doc_freq(self, field: str, token: str) -> int:
        """Live events holding ``token`` (a workspace-prefixed term)."""
        if self.purged:
            return count(self.searcher, tantivy.Query.term_query(SCHEMA, field, token))
        return int(self.searcher.doc_freq(field, token))


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
            self._view = IndexView(
                searcher, self._position.stream_seq, purged=self._position.deletion_id > 0
            )
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
    """Turns a ``QueryPlan`` into tantivy queries for one workspace's key, scored as
    ``worker.store.search.ranking`` says: constant-score clauses weighted from the workspace's own
    counts (read once per query, from the searched commit)."""

    def __init__(
        self, plan: QueryPlan, ws: str, view: IndexView, favour: Sequence[TimeRange] = ()
    ) -> None:
        self.plan = plan
        self._key = workspace_key(ws)
        self._view = view
        self._weights: ranking.Weights | None = None
        self._favour = favour
        self._lead: list[tantivy.Query] | None = None  # ``_lead_bonus``, read once

    @property
    def weights(self) -> ranking.Weights:
        if self._weights is None:
            self._weights = ranking.weights(self.plan, self._key, self._view.doc_freq)
        return self._weights

    def term(self, term: PlanTerm) -> tantivy.Query:
        """What one term matches: its exact words, or (unquoted) their derived forms."""
        exact_q = self._exact(term)
        if term.quoted and not any(w.cjk for w in term.words):
            return exact_q
        derived = [self._key + d for w in term.words for d in w.derived]
        return _any([exact_q, _phrase("nm", derived)])

    def _exact(self, term: PlanTerm) -> tantivy.Query:
        return _phrase("ex", [self._key + w.exact for w in term.words])

    def _exact_form(self, term: PlanTerm) -> tantivy.Query:
        """What earns the exact-form bonus: the words as written, or for a one-word term
        any form ``analysis.exact_forms`` counts as the same (a Russian plural's)."""
        if len(term.words) != 1 or term.quoted:
            return self._exact(term)
        forms = analysis.exact_forms(term.words[0])
        return _any([_term("ex", self._key + form) for form in forms])

    def group(self, group: Sequence[PlanTerm]) -> tantivy.Query:
        return _any([self.term(t) for t in group])

    def all_words(self, scope: Sequence[tantivy.Query]) -> tantivy.Query:
        """Every required group must match, so every hit has the all-groups bit (scored by
        the clause that requires them); function words count only in the phrase bonus."""
        required = [self.group(g) for g in self.plan.required]
        matched = _const(_all(required), ranking.ALL_BIT)
        scoring = self._scoring(required, all_bit=False)
        return self._with([(tantivy.Occur.Must, matched), *scoring], scope)

    def partial(self, scope: Sequence[tantivy.Query]) -> tantivy.Query:
        """Any required group; ranked by the workspace-weighted share of groups held. For
        a question, a group held only by the event an event answers (its context, issue
        42) counts ``ranking.context_units`` of its share. The context makes no candidate
        of its own: read only beside the event's own matches, it costs a skip through its
        postings rather than a union with them."""
        required = [self.group(g) for g in self.plan.required]
        context: list[tantivy.Query | None] = [None] * len(required)
        if self.plan.natural_language:
            context = [self.context_group(g) for g in self.plan.required]
        scoring = self._scoring(required, all_bit=True, context=context)
        matched = _any(required)
        return self._with([(tantivy.Occur.Must, _filter(matched)), *scoring], scope)

    def context_group(self, group: Sequence[PlanTerm]) -> tantivy.Query | None:
        """A group held by the event an event answers (the ``cx`` field, words without
        positions: a term's words each, in any order); None when no term of it can be (a
        quoted term asks for its exact words, which the context does not keep)."""
        held = [
            _all([_term("cx", self._key + d) for w in t.words for d in w.derived])
            for t in group
            if not t.quoted and any(w.derived for w in t.words)
        ]
        return _any(held) if held else None

    def one_group(self, group: Sequence[PlanTerm], scope: Sequence[tantivy.Query]) -> tantivy.Query:
        return self._with([(tantivy.Occur.Must, _filter(self.group(group)))], scope)

    @property
    def distinctive(self) -> int:
        """The question's distinctive groups, a bit mask (``ranking.Weights``)."""
        return self.weights.distinctive_mask

    def all_distinctive(self, scope: Sequence[tantivy.Query]) -> tantivy.Query:
        """Events holding every distinctive group (``ranking.decided``)."""
        groups = [
            self.group(g) for i, g in enumerate(self.plan.required) if self.distinctive >> i & 1
        ]
        return self._with([(tantivy.Occur.Must, _filter(_all(groups)))], scope)

    def held_by(self, event_ids: Sequence[int]) -> dict[int, int]:
        """The distinctive groups each of ``event_ids`` holds, as bit masks (an event
        holding none is left out): one search per distinctive group, over those ids."""
        mask = self.distinctive
        if not mask or not event_ids:
            return {}
        ids = tantivy.Query.term_set_query(SCHEMA, "id", sorted(set(event_ids)))
        held: dict[int, int] = {}
        for i, group in enumerate(self.plan.required):
            if mask >> i & 1:
                query = _all([ids, self.group(group)])
                for candidate in top(self._view.searcher, query, len(event_ids)):
                    held[candidate.event_id] = held.get(candidate.event_id, 0) | 1 << i
        return held

    def _scoring(
        self,
        required: Sequence[tantivy.Query],
        *,
        all_bit: bool,
        context: Sequence[tantivy.Query | None] = (),
    ) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        """The optional clauses that make the score (``ranking``'s coverage, bonuses and,
        with ``all_bit``, the all-groups bit); ``required``: the plan's groups' queries;
        ``context``: per group, what holds it in the event answered (or None)."""
        weights = self.weights
        key = self._key
        # Scattered words count half in a long event; one word cannot be scattered.
        split = len(required) > 1
        long = _term("nm", key + LONG_MARK)
        scoring: list[tantivy.Query] = []
        held = list(context) or [None] * len(required)
        for group, query, cover, exact, answered in zip(
            self.plan.required, required, weights.cover, weights.exact, held, strict=True
        ):
            units = ranking.context_units(cover)
            own = ranking.COVER_SCALE * cover // 2 if split else ranking.COVER_SCALE * cover
            clause = _const(query, own)
            if answered is not None and units:
                # The larger of the two: the words held count whole, the context's only
                # where the event lacks them (one read of each field's postings).
                answer = _const(answered, ranking.COVER_SCALE * units)
                clause = tantivy.Query.disjunction_max_query([clause, answer])
            scoring.append(clause)
            if split:
                scoring.append(_const(_all([query], but=long), own))
            if exact:
                scoring.append(_const(_any([self._exact_form(t) for t in group]), exact))
        if all_bit:
            scoring.append(_const(_all(required), ranking.ALL_BIT))
        phrase = ranking.phrase_tokens(self.plan)
        if phrase:
            tokens = [key + t for t in phrase]
            scoring.append(_const(_phrase("ex", tokens), ranking.PHRASE_BONUS))
        near = ranking.near_tokens(self.plan)
        if near:
            slop = ranking.NEAR_SLOP_PER_WORD * (len(near) - 1)
            near_q = _phrase("nm", [key + t for t in near], slop)
            scoring.append(_const(near_q, ranking.NEAR_BONUS))
            if split:  # near each other in a long event: the other half back
                restore = ranking.COVER_SCALE * ranking.COVER_UNITS // 2
                scoring.append(_const(_all([near_q, long]), restore))
        scoring.extend(self._lead_bonus(required))
        scoring.append(_const(_term("nm", key + SHORT_MARK), ranking.SHORT_BONUS))
        if self.plan.natural_language:
            mark = _term("nm", key + CONVERSATION_MARK)
            scoring.append(_const(mark, ranking.CONVERSATION_BONUS))
        if self._favour:
            spans = [_range("time", tantivy.FieldType.Integer, a, b) for a, b in self._favour]
            scoring.append(_const(_any(spans), ranking.COVER_SCALE * ranking.TIME_UNITS))
        return [(tantivy.Occur.Should, q) for q in scoring]

    def _lead_bonus(self, required: Sequence[tantivy.Query]) -> list[tantivy.Query]:
        """The title/first-prompt bonus: full, but where the query's words are all in a
        paragraph several of the workspace's sessions open with (a pasted template), the
        share ``ranking.shared_bonus`` gives for their number (the most shared such
        paragraph decides). The shared paragraphs are read from the query's matches among
        the workspace's titles and first prompts: sessions sharing a paragraph hold its
        words, so when the words are in it every one of them matches, and the count is the
        workspace's own on every layout (a search counts no deleted document)."""
        if self._lead is None:
            self._lead = self._read_lead_bonus(required)
        return self._lead

    def _read_lead_bonus(self, required: Sequence[tantivy.Query]) -> list[tantivy.Query]:
        key = self._key
        mark = _term("nm", key + TITLE_MARK)
        if not self._workspace_shares_leads(mark):
            return [_const(mark, ranking.TITLE_BONUS)]
        shared = self._shared_leads(_all([_any(required), mark]))
        if not shared:
            return [_const(mark, ranking.TITLE_BONUS)]
        by_bonus: dict[int, list[tantivy.Query]] = {}
        for token in sorted(shared):
            digest = token[len(key) + len(LEAD_MARK) :]
            held = _all([self._in_paragraph(g, digest) for g in self.plan.required])
            by_bonus.setdefault(ranking.shared_bonus(shared[token]), []).append(held)
        clauses: list[tantivy.Query] = []
        lower: list[tantivy.Query] = []  # the paragraphs of lower bonuses, which decide
        for bonus in sorted(by_bonus):
            here = _any(by_bonus[bonus])
            if bonus:
                clauses.append(_const(_all([here], but=_any(lower)) if lower else here, bonus))
            lower.append(here)
        clauses.append(_const(_all([mark], but=_any(lower)), ranking.TITLE_BONUS))
        return clauses

    def _workspace_shares_leads(self, mark: tantivy.Query) -> bool:
        """Whether any paragraph of the workspace's titles and first prompts is on two of
        them (once per commit and workspace). When none is, no query's matches can share
        one, and the per-query reads are skipped: the same bonus, without their cost
        (~0.7 ms of a search at 1M events)."""
        cache = self._view.shares_leads
        found = cache.get(self._key)
        if found is None:
            terms = {"field": "lead", "size": 1, "min_doc_count": 2}
            result = self._view.searcher.aggregate(mark, {"leads": {"terms": terms}})
            found = bool(result.get("leads", {}).get("buckets"))
            cache[self._key] = found
        return found

    def _in_paragraph(self, group: Sequence[PlanTerm], digest: str) -> tantivy.Query:
        """A group's words inside one paragraph of a title or first prompt."""
        return _any(
            [_phrase("lp", [f"{digest}:{d}" for w in t.words for d in w.derived]) for t in group]
        )

    def _shared_leads(self, query: tantivy.Query) -> dict[str, int]:
        """The lead tokens two or more sessions hold among ``query``'s matches -> sessions.
        Two steps: the tokens on two or more matches (cheap, and mostly none), then the
        sessions holding only those."""
        searcher = self._view.searcher
        terms = {"field": "lead", "size": _LEAD_BUCKETS, "min_doc_count": 2}
        found = searcher.aggregate(query, {"leads": {"terms": terms}})
        tokens = [str(b["key"]) for b in found.get("leads", {}).get("buckets", [])]
        if not tokens:
            return {}
        held = _all([query, tantivy.Query.term_set_query(SCHEMA, "lead", tokens)])
        sessions = {"terms": {"field": "sid", "size": _SHARED_SESSIONS}}
        result = searcher.aggregate(held, {"leads": {"terms": terms, "aggs": {"s": sessions}}})
        shared: dict[str, int] = {}
        for bucket in result.get("leads", {}).get("buckets", []):
            count = len(bucket.get("s", {}).get("buckets", []))
            token = str(bucket["key"])
            if count > 1 and token in tokens:
                shared[token] = count
        return shared

    def _with(
        self, clauses: list[tuple[tantivy.Occur, tantivy.Query]], scope: Sequence[tantivy.Query]
    ) -> tantivy.Query:
        clauses = list(clauses)
        clauses += [(tantivy.Occur.Must, _filter(q)) for q in scope]
        clauses += [(tantivy.Occur.MustNot, self.term(t)) for t in self.plan.excluded]
        return tantivy.Query.boolean_query(clauses)


def _any(queries: Sequence[tantivy.Query]) -> tantivy.Query:
    if len(queries) == 1:
        return queries[0]
    return tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in queries])


def _all(queries: Sequence[tantivy.Query], but: tantivy.Query | None = None) -> tantivy.Query:
    """Every one of ``queries`` (and not ``but``), scoring nothing of its own."""
    if len(queries) == 1 and but is None:
        return queries[0]
    clauses = [(tantivy.Occur.Must, _filter(q)) for q in queries]
    if but is not None:
        clauses.append((tantivy.Occur.MustNot, but))
    return tantivy.Query.boolean_query(clauses)


def _term(field: str, token: str) -> tantivy.Query:
    return tantivy.Query.term_query(SCHEMA, field, token)


def _const(query: tantivy.Query, score: int) -> tantivy.Query:
    return tantivy.Query.const_score_query(query, float(score))


def _phrase(field: str, tokens: Sequence[str], slop: int = 0) -> tantivy.Query:
    if len(tokens) == 1:
        return _term(field, tokens[0])
    return tantivy.Query.phrase_query(SCHEMA, field, list(tokens), slop)


def _filter(query: tantivy.Query) -> tantivy.Query:
    """A clause that restricts without scoring."""
    return tantivy.Query.const_score_query(query, 0.0)


def scope_clauses(
    *,
    as_of_seq: int,
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

    ``covered_seq``: the stream sequence the searched commit covers. When ``as_of_seq``
    is not older, no document can be past it and its range is left out (a range
    over a number unique per event cost ~1 ms per query at 1M events)."""
    clauses: list[tantivy.Query] = []
    if covered_seq is None or covered_seq > as_of_seq:
        clauses.append(_range("sseq", tantivy.FieldType.Unsigned, 0, as_of_seq))
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


# Distinct titles/first prompts a query's matches are read for, and the sessions counted
# per text (the bonus is 0 from 12 on, so a count cut at 64 gives the same bonus).
_LEAD_BUCKETS: Final = 10_000
_SHARED_SESSIONS: Final = 64

# Hits asked for past the limit at once, to see where a run of equal scores ends.
_TIE_LOOKAHEAD: Final = 16


def top(searcher: tantivy.Searcher, query: tantivy.Query, limit: int) -> list[Candidate]:
    """The best ``limit`` events and every event that ties with the last of them, best
    first. Taking whole runs of equal scores makes the set independent of the engine's
    internal document order (segments, merges, batch sizes); callers order it by
    ``ranking.order_key``."""
    if limit <= 0:
        return []
    want = limit + _TIE_LOOKAHEAD
    while True:
        hits = searcher.search(query, want, count=False, weight_by_field="prior").hits
        if len(hits) <= limit:
            break
        boundary = hits[limit - 1][0]
        if len(hits) < want or hits[-1][0] != boundary:
            hits = [hit for i, hit in enumerate(hits) if i < limit or hit[0] == boundary]
            break
        want *= 2  # the run of equal scores goes on past what was fetched
    if not hits:
        return []
    addresses = [address for _, address in hits]
    ids = searcher.fast_field_values("id", addresses)
    seqs = searcher.fast_field_values("seq", addresses)
    return [
        Candidate(int(event_id), float(score), int(seq or 0))
        for (score, _), event_id, seq in zip(hits, ids, seqs, strict=True)
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


def sessions_holding(searcher: tantivy.Searcher, query: tantivy.Query, limit: int) -> list[str]:
    """Up to ``limit`` sessions with an event matching ``query``, by session id (the
    engine's order of buckets never decides: the ids are sorted)."""
    result = searcher.aggregate(query, {"s": {"terms": {"field": "sid", "size": limit}}})
    return sorted(str(b["key"]) for b in result.get("s", {}).get("buckets", []))
