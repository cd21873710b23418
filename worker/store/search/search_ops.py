"""The two searches, as steps inside one read transaction of the store.

The search index proposes candidate event ids, best first; SQL then decides, in the same
transaction that reads the payload, which candidates are in the caller's workspace (exact
cwd equality), at or before the page's ``as_of_seq`` and inside the filters. The search
index is never the authority: a candidate SQL does not confirm is dropped, and its session
is excluded from the next round of candidates.

Semantics: for keywords, an all-words search first (every content word must match one
event; function words count only toward the query-as-written bonus). When that finds
nothing, and always for a natural-language question, the best partial matches: events
ranked by the share of the query's words they hold, each word weighted by its rarity in
the workspace (``worker.store.search.ranking``). When no event holds every word, the page says so
and names the terms that match nothing at all.

Order: a session ranks by its best event; events and sessions are in ``ranking``'s total
order (score, then session id, then seq), whatever the engine's internal order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any, Final, Generic, TypeVar

import orjson
import tantivy

from worker.store import results, sql
from worker.store.database import Fetch
from worker.store.event_codec import EventCodec
from worker.store.marks import plain_excerpt
from worker.store.protocol import (
    EventFilter,
    EventHit,
    EventSummary,
    SessionFilter,
    SessionHit,
)
from worker.store.search import ranking
from worker.store.search.copies import own_lines
from worker.store.search.excerpt import Highlighter, highlighter
from worker.store.search.hybrid import SemanticQuery
from worker.store.search.query import QueryPlan
from worker.store.search.search_reader import (
    Candidate,
    IndexView,
    QueryBuilder,
    count,
    excluding,
    scope_clauses,
    session_counts,
    sessions_holding,
    top,
)
from worker.store.search.search_schema import INDEX_TEXT_CAP_BYTES, SCHEMA, TITLE_TYPE
from worker.store.search.semantic.fusion import Lexical, fuse
from worker.store.search.text import searchable_text
from worker.store.search.time_words import TimeRange

_NONE: Final[frozenset[int]] = frozenset()

# Candidates per round, at least; rounds exclude the sessions already decided.
_ROUND_MIN: Final = 200
_ROUND_MAX: Final = 4000
_MAX_ROUNDS: Final = 50
# Groups of sessions with the same excerpt that get their own lines, per page.
_MAX_COPY_GROUPS: Final = 10
# Candidates a page may skip and take at most: a page past this is empty (a model's
# search stops at the tool's result cap long before).
MAX_CANDIDATE_WINDOW: Final = 100_000


@dataclass(frozen=True, slots=True)
class _Checked:
    """A candidate as SQL saw it."""

    session_id: str
    type: str
    ok: bool  # in the workspace, as of the page's seq, in the filters


@dataclass(slots=True)
class _Found:
    coverage: int  # ranking's coverage of the best event
    holds_all: bool  # the best event holds every group
    event_id: int
    score: float
    strongest: int | None = None  # the best event that is not the title, when seen


HitT = TypeVar("HitT", SessionHit, EventHit)


@dataclass(slots=True)
class PageResult(Generic[HitT]):
    """One page of either search, before it becomes the protocol's page."""

    hits: list[HitT]
    more: bool
    ranked_partial: bool  # the query mode, for the cursor
    partial: bool = False  # no event holds every word (the reply says so)
    unmatched: tuple[str, ...] = ()
    filtered_out: bool = False


@dataclass(slots=True)
class _Scope:
    clauses: list[tantivy.Query]
    excluded: list[str]
    minimal: list[tantivy.Query] = field(default_factory=list)


class SessionSearchRun:
    """One page of ``search_sessions`` inside a read transaction."""

    def __init__(
        self,
        fetch: Fetch,
        index: IndexView,
        plan: QueryPlan,
        *,
        codec: EventCodec,
        cwd: str,
        ws: str,
        sessions: SessionFilter,
        events: EventFilter,
        as_of_seq: int,
        semantic: SemanticQuery | None = None,
        favour: Sequence[TimeRange] = (),
    ) -> None:
        self._fetch = fetch
        self._codec = codec  # the connection's: the page's rows are decoded by it
        self._searcher = index.searcher
        self._plan = plan
        self._builder = QueryBuilder(plan, ws, index, favour)
        self._cwd = cwd
        self._ws = ws
        self._semantic = semantic
        self._semantic_only: set[str] = set()
        clauses, excluded = scope_clauses(
            as_of_seq=as_of_seq,
            covered_seq=index.covers_stream_seq,
            session_ids=sessions.session_ids,
            exclude_session_ids=sessions.exclude_session_ids,
            types=events.types,
            surfaces=events.surfaces,
            time_from_ms=events.time_from_ms,
            time_to_ms=events.time_to_ms,
        )
        minimal, _ = scope_clauses(as_of_seq=as_of_seq, covered_seq=index.covers_stream_seq)
        self._scope = _Scope(clauses, excluded, minimal)
        self._params: dict[str, Any] = {"cwd": cwd, "as_of": as_of_seq}
        check = sql.session_filter_sql(sessions, self._params)
        check += sql.event_filter_sql(events, self._params, with_seq=False)
        if sessions.session_ids is not None:
            self._params["only"] = sql.json_list(sessions.session_ids)
            check += " AND e.session_id IN (SELECT value FROM json_each(:only))"
        self._check_sql = check
        self._filtered = bool(check)

    def page(self, offset: int, size: int, partial: bool | None) -> PageResult[SessionHit]:
        want = offset + size + 1
        if want > MAX_CANDIDATE_WINDOW:
            return PageResult[SessionHit](hits=[], more=False, ranked_partial=bool(partial))
        if partial is None and self._plan.natural_language:
            partial = True  # a question: rank by how many of its words an event holds
        query = self._builder.all_words(self._scope.clauses)
        found = self._collect(query, want) if not partial else {}
        if partial is None:  # a first page decides: all words, else best partial matches
            partial = not found
        if partial:
            query = self._builder.partial(self._scope.clauses)
            found = self._collect(query, want)
        holds_all = any(entry.holds_all for entry in found.values())
        if self._semantic is not None and self._semantic.needed(
            partial and not self._decided(found)
        ):
            found = self._fused(found, partial)
        chosen = list(found.items())[offset : offset + size]
        result = PageResult[SessionHit](
            hits=self._hits(query, chosen), more=len(found) > offset + size, ranked_partial=partial
        )
        if offset == 0 and partial and not holds_all:
            result.partial = True
            result.unmatched = self._unmatched()
        if offset == 0 and not found and self._filtered:
            result.filtered_out = self._matches_unfiltered()
        return result

    def _collect(self, query: tantivy.Query, want: int) -> dict[str, _Found]:
        found: dict[str, _Found] = {}
        decided: set[str] = set(self._scope.excluded)
        size = min(max(_ROUND_MIN, 2 * want), _ROUND_MAX)
        for _ in range(_MAX_ROUNDS):
            candidates = top(self._searcher, excluding(query, sorted(decided)), size)
            checked = self._check(candidates)
            ranked = sorted(
                (c for c in candidates if c.event_id in checked),
                key=lambda c: ranking.order_key(c.score, checked[c.event_id].session_id, c.seq),
            )
            for candidate in ranked:
                seen = checked[candidate.event_id]
                entry = found.get(seen.session_id)
                if entry is not None:
                    if entry.strongest is None and seen.type != TITLE_TYPE and seen.ok:
                        entry.strongest = candidate.event_id
                    continue
                if seen.session_id in decided:
                    continue
                decided.add(seen.session_id)
                if seen.ok:
                    strongest = None if seen.type == TITLE_TYPE else candidate.event_id
                    found[seen.session_id] = _Found(
                        candidate.coverage,
                        candidate.holds_all,
                        candidate.event_id,
                        candidate.score,
                        strongest,
                    )
            if len(candidates) < size or len(found) >= want:
                break
        return found

    def _decided(self, found: dict[str, _Found]) -> bool:
        """``ranking.decided``: the only session of the scope with an event holding every
        distinctive group of the question is the lexical first."""
        mask = self._builder.distinctive
        if not mask or not found:
            return False
        query = excluding(self._builder.all_distinctive(self._scope.clauses), self._scope.excluded)
        return ranking.decided(next(iter(found)), sessions_holding(self._searcher, query, 2), mask)

    def _fused(self, found: dict[str, _Found], partial: bool) -> dict[str, _Found]:
        """The lexical sessions and the semantic ones merged by ``fusion.fuse``; a semantic
        candidate counts only when SQL confirms it, as a lexical one does."""
        assert self._semantic is not None
        scored = self._semantic.nearest(self._ws)
        checked = self._check([Candidate(event_id, cosine, 0) for event_id, cosine in scored])
        excluded = set(self._scope.excluded)
        semantic: dict[str, _Found] = {}
        for event_id, cosine in scored:
            seen = checked.get(event_id)
            if seen is None or not seen.ok or seen.session_id in excluded:
                continue
            semantic.setdefault(seen.session_id, _Found(0, False, event_id, cosine, event_id))
        lexical = [
            Lexical(sid, ranking.share(entry.coverage, entry.holds_all, partial))
            for sid, entry in found.items()
        ]
        # A session holds the distinctive groups its best lexical event or its nearest
        # event holds.
        events = [e.event_id for e in found.values()] + [e.event_id for e in semantic.values()]
        by_event = self._builder.held_by(events)
        held: dict[str, int] = {}
        for sid, entry in [*found.items(), *semantic.items()]:
            held[sid] = held.get(sid, 0) | by_event.get(entry.event_id, 0)
        order = fuse(self._plan, lexical, list(semantic), held)
        self._semantic_only = {sid for sid, only in order if only}
        return {sid: found.get(sid) or semantic[sid] for sid, _ in order}

    def _check(self, candidates: Sequence[Candidate]) -> dict[int, _Checked]:
        if not candidates:
            return {}
        params = dict(self._params, cand=sql.json_list(c.event_id for c in candidates))
        found, at = self._fetch(
            "SELECT e.id AS id, e.session_id AS session_id, e.type AS type,"
            f" (s.cwd = :cwd AND e.stream_seq <= :as_of{self._check_sql}) AS ok"
            " FROM events e JOIN sessions s ON s.session_id = e.session_id"
            " WHERE e.id IN (SELECT value FROM json_each(:cand))",
            params,
        )
        event_id, session_id, kind, ok = at["id"], at["session_id"], at["type"], at["ok"]
        return {int(r[event_id]): _Checked(r[session_id], r[kind], bool(r[ok])) for r in found}

    def _hits(self, query: tantivy.Query, chosen: list[tuple[str, _Found]]) -> list[SessionHit]:
        if not chosen:
            return []
        for session_id, entry in chosen:
            if entry.strongest is None:  # only the title was seen: look past it
                entry.strongest = self._best_not_title(query, session_id)
        ids = [entry.strongest or entry.event_id for _, entry in chosen]
        counts = session_counts(self._searcher, query, [sid for sid, _ in chosen])
        semantic = {e.event_id for sid, e in chosen if sid in self._semantic_only}
        loaded = load_events(
            self._fetch, self._codec, ids, self._plan, cwd=self._cwd, semantic=semantic
        )
        hits: list[SessionHit] = []
        for (session_id, entry), event_id in zip(chosen, ids, strict=True):
            row = loaded.get(event_id)
            if row is None:
                continue
            header, summary, excerpt = row
            hits.append(
                SessionHit(
                    header=header,
                    event=summary,
                    excerpt=excerpt,
                    score=-entry.score,
                    matching_events=max(1, counts.get(session_id, 1)),
                    # No event of the session holds a word of the query.
                    semantic_only=session_id in self._semantic_only and not counts.get(session_id),
                )
            )
        return self._told_apart(hits)

    def _told_apart(self, hits: list[SessionHit]) -> list[SessionHit]:
        """Sessions whose excerpts are the same text (copied events) get their own line."""
        by_excerpt: dict[str, list[str]] = {}
        for hit in hits:
            by_excerpt.setdefault(hit.excerpt, []).append(hit.header.session_id)
        copies = [ids for ids in by_excerpt.values() if len(ids) > 1]
        if not copies:
            return hits
        own: dict[str, str] = {}
        for group in copies[:_MAX_COPY_GROUPS]:
            own.update(own_lines(self._fetch, group))
        return [
            replace(hit, own_line=own.get(hit.header.session_id))
            if hit.header.session_id in own
            else hit
            for hit in hits
        ]

    def _best_not_title(self, query: tantivy.Query, session_id: str) -> int | None:
        narrowed = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, query),
                (tantivy.Occur.Must, tantivy.Query.term_query(SCHEMA, "sid", session_id)),
                (tantivy.Occur.MustNot, tantivy.Query.term_query(SCHEMA, "type", TITLE_TYPE)),
            ]
        )
        best = top(self._searcher, narrowed, 1)
        return min(best, key=lambda c: (-c.score, c.seq)).event_id if best else None

    def _unmatched(self) -> tuple[str, ...]:
        missing: list[str] = []
        for group in self._plan.required:
            query = excluding(
                self._builder.one_group(group, self._scope.minimal), self._scope.excluded
            )
            if count(self._searcher, query) == 0:
                missing.extend(term.text for term in group)
        return tuple(missing)

    def _matches_unfiltered(self) -> bool:
        query = excluding(self._builder.partial(self._scope.minimal), self._scope.excluded)
        candidates = top(self._searcher, query, 50)
        if not candidates:
            return False
        found, _ = self._fetch(
            "SELECT 1 AS found FROM events e JOIN sessions s ON s.session_id = e.session_id"
            " WHERE e.id IN (SELECT value FROM json_each(:cand)) AND +s.cwd = :cwd LIMIT 1",
            {"cand": sql.json_list(c.event_id for c in candidates), "cwd": self._cwd},
        )
        return bool(found)


def load_events(
    fetch: Fetch,
    codec: EventCodec,
    event_ids: Sequence[int],
    plan: QueryPlan,
    *,
    cwd: str,
    semantic: Set[int] = _NONE,
) -> dict[int, tuple[Any, Any, str]]:
    """Header, summary and excerpt of each event, still in ``cwd`` (checked again)."""
    # Here and wherever candidates are checked against a workspace or a session: the
    # unary ``+`` keeps SQLite from driving the join by the cwd (or session) index, which
    # walks every event of the workspace (~16 ms for 60 ids at 1M events / 24
    # workspaces) instead of looking the ids up by primary key (~0.3-0.7 ms).
    found, at = fetch(
        f"SELECT e.id AS id, {sql.HEADER_COLS}, {sql.DOC_COLS}"
        " FROM events e JOIN sessions s ON s.session_id = e.session_id"
        " WHERE e.id IN (SELECT value FROM json_each(:ids)) AND +s.cwd = :cwd",
        {"ids": sql.json_list(event_ids), "cwd": cwd},
    )
    # Each row's doc decoded once, in Python: its whole text, the preview cut from it.
    values, decode = at.getter(results.WINDOW_NAMES), codec.text_and_preview_source
    event_id = at["id"]
    rows = [(int(r[event_id]), r, values(r)) for r in found]
    decoded = {i: decode(v[-1], v[3]) for i, _, v in rows}
    light = highlighter(plan)
    bodies = ((i, body) for i, (body, _) in decoded.items())
    excerpts = _excerpts(fetch, bodies, light, semantic)
    loaded: dict[int, tuple[Any, Any, str]] = {}
    for i, r, v in rows:
        source = decoded[i][1]
        excerpt = excerpts.get(i) or plain_excerpt(results.preview(source))
        loaded[i] = (results.header(r, at), results.summary_of(v, source), excerpt)
    return loaded


def page_rows(
    fetch: Fetch,
    codec: EventCodec,
    event_ids: Sequence[int],
    light: Highlighter,
    semantic: Set[int] = _NONE,
) -> tuple[dict[int, EventSummary], dict[int, str]]:
    """The named events' summaries and excerpts (see ``_excerpts``) by id. Each row's doc
    is decoded once, in Python (as ``load_events``): its text, the preview cut from it."""
    if not event_ids:
        return {}, {}
    found, at = fetch(
        f"SELECT e.id AS id, {sql.DOC_COLS} FROM events e"
        " WHERE e.id IN (SELECT value FROM json_each(:ids))",
        {"ids": sql.json_list(event_ids)},
    )
    values, decode = at.getter(results.WINDOW_NAMES), codec.text_and_preview_source
    event_id = at["id"]
    summaries: dict[int, EventSummary] = {}
    bodies: list[tuple[int, str]] = []
    for r in found:
        row = values(r)
        text, source = decode(row[-1], row[3])
        summaries[int(r[event_id])] = results.summary_of(row, source)
        bodies.append((int(r[event_id]), text))
    return summaries, _excerpts(fetch, bodies, light, semantic)


def _excerpts(
    fetch: Fetch, bodies: Iterable[tuple[int, str]], light: Highlighter, semantic: Set[int]
) -> dict[int, str]:
    """Excerpts from each event's stored text, or from its whole payload when the match
    lies past the stored text's cap (a long tool output). A ``semantic`` event (found by
    meaning alone) with no match in its stored text is not searched further: its words
    are not in the index's list for the query, and its preview shows it."""
    excerpts: dict[int, str] = {}
    missing: list[int] = []
    for event_id, body in bodies:
        excerpt = light.excerpt(body)
        if excerpt is not None:
            excerpts[event_id] = excerpt
        elif event_id not in semantic:
            missing.append(event_id)
    if missing:
        found, at = fetch(
            "SELECT id AS id, event_json(doc) AS raw_json FROM events"
            " WHERE id IN (SELECT value FROM json_each(:ids))",
            {"ids": sql.json_list(missing)},
        )
        for event_id, raw in map(at.getter(("id", "raw_json")), found):
            payload = orjson.loads(raw).get("payload")
            excerpt = light.excerpt(searchable_text(payload, INDEX_TEXT_CAP_BYTES))
            if excerpt is not None:
                excerpts[int(event_id)] = excerpt
    return excerpts
