"""How search ranks: a score computed from the caller's workspace alone, and a total order.

A reply must be a function of the caller's workspace and the request: other workspaces'
data, the partition layout, segment merges and replicas must not move a byte of it. So
the engine's own relevance (BM25 over index-wide document counts and lengths) is not used.
An event's score is built from constant-score clauses whose weights come from the
workspace's own counts (``Weights``), plus a per-event prior the index stores:

    score = (COVER_SCALE * (coverage + time) + ALL_BIT * holds_all + bonus) * log2(2 + prior)

- ``coverage`` (0..COVER_UNITS): the query's required word groups the event holds, each
  weighted by its rarity *in the workspace* (an idf over the workspace's event count and
  the group's document frequency, both read from workspace-prefixed terms). An event
  holding every group has ``COVER_UNITS``; a rare word counts for more than a common one.
  Coverage ranks first: an event holding the whole question beats events holding parts.
  In a long event (over ``LONG_WORDS`` words, a log or a pasted dump) words scattered far
  apart count half, unless the query's content words stand near each other there: a log
  that happens to hold every word on lines apart is not a focused answer.
- ``time``: when the query names a time and no time filter is given, ``TIME_UNITS`` more
  coverage for an event from that time (so coverage may pass ``COVER_UNITS``).
- ``holds_all``: the event holds every required group (what "partial" is decided by).
- ``bonus`` (0..COVER_SCALE-1), among events of equal coverage: the query's words as
  written, adjacent (a pasted error or phrase, unquoted); its content words near each
  other; the session's title or first prompt; a short event (a sentence holding the words
  over a paragraph that happens to); exact forms over derived ones; for a question,
  conversation over tool output.
- ``prior``: shorter events first among equal scores (a focused message over a long dump
  that happens to hold the word). Its factor is below 1 + 1/(2 * MAX_BASE), so it never
  reorders two different integer scores; scores stay exact in the engine's f32.

Term frequency and the workspace's average length are not used: a session must not rise
because it repeats loose matches, and a per-event length prior needs no average.

Total order: score (higher first), then session id, then seq. Every cut takes whole runs
of equal scores (``search_reader.top``), so the engine's internal document order never
decides what is kept or how it is ordered.

Hybrid search (issue 42): the semantic list may reorder only where the lexical evidence
leaves the question open. The question's *distinctive* groups (``Weights.distinctive``)
are the ones it names (a word written with a capital, not the first: a person, a product)
and its rare terms (held by at most ``RARE_SHARE`` of the workspace's events), each held by
some event of the workspace. ``held_by`` says which of them a candidate's event holds.

- ``decided``: one session (or event) of the scope holds every distinctive group in one
  event, and it is the lexical first: the lexical order is the page, and the question is
  never embedded (the same rule decides quality and cost).
- ``keep_distinctive``: otherwise fusion proposes an order, and a candidate may rise above
  one the lexical order put above it only when it holds every distinctive group that one
  holds (a semantic hit never passes the turn holding the speaker's name or the rare word).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from worker.store.search.query import PlanTerm, QueryPlan

# Coverage units shared out over the required groups, the score per unit, and the bit
# below it that says the event holds every group (bonuses stay below that bit).
COVER_UNITS: Final = 256
COVER_SCALE: Final = 64
ALL_BIT: Final = 32
# Bonuses (their sum stays below ALL_BIT, so coverage always ranks first).
PHRASE_BONUS: Final = 10  # every word of the query, as written, adjacent and in order
NEAR_BONUS: Final = 6  # the content words within a few words of each other
TITLE_BONUS: Final = 6  # the session's title or first prompt holds the match
EXACT_BONUS: Final = 2  # shared out over the rarest groups matched in their exact form
CONVERSATION_BONUS: Final = 3  # a question: a user or assistant message over tool output
SHORT_BONUS: Final = 3  # a short event (a sentence, not a paragraph of other words)
# The share of a group's coverage units an event earns when the event it answers holds the
# group and it does not (issue 42; ``context_units``): an answer after the question that
# asked ("a guinea pig named Oscar" after "do you have any pets?"), a tool result after its
# call. Below one, so the words themselves always count for more than their context.
CONTEXT_SHARE: Final = (1, 2)
# Coverage units an event from the time the query names earns ("in January 2024",
# ``QueryPlan.times``): a soft favour that decides between events holding the same or
# nearly the same words, never one holding much less (the prior's bound leaves room for 13).
TIME_UNITS: Final = 12
MAX_BASE: Final = COVER_SCALE * (COVER_UNITS + TIME_UNITS) + ALL_BIT + ALL_BIT - 1
# Events longer than this count scattered matches half; up to SHORT_WORDS is a short one
# (the index marks both).
LONG_WORDS: Final = 256
SHORT_WORDS: Final = 16
# The prior's largest value: log2(2 + v) - 1 ~ v / (2 ln 2) stays below 1 / (2 * MAX_BASE).
PRIOR_MAX: Final = 4.0e-5
_PRIOR_LEVELS: Final = 511
_PRIOR_LOG2_TOKENS: Final = 20.0  # ~1M tokens: every longer event has the lowest prior
# Words apart, per word of the query, that still count as near each other.
NEAR_SLOP_PER_WORD: Final = 6

# A group held by at most this share of the workspace's events is a rare term: a
# distinctive group (with names) that semantic evidence must not outrank.
RARE_SHARE: Final = 0.01

# What a workspace-prefixed term's document frequency is read with.
DocFreq = Callable[[str, str], int]  # (field, token) -> events of the workspace holding it

assert (
    PHRASE_BONUS + NEAR_BONUS + TITLE_BONUS + EXACT_BONUS + CONVERSATION_BONUS + SHORT_BONUS
    < ALL_BIT
)
assert (MAX_BASE + 1) * (1 + PRIOR_MAX / (2 * math.log(2))) < MAX_BASE + 1.5


def shared_bonus(sessions: int) -> int:
    """The title/first-prompt bonus of a text that ``sessions`` sessions of the workspace
    open with or are titled (issue 42): boilerplate (a pasted template, an ``/init``
    prompt) says little about any one of them. Full for one session, falling with the
    count, nothing from 12 on."""
    return TITLE_BONUS * 2 // (max(1, sessions) + 1)


def context_units(cover: int) -> int:
    """The coverage units of a group held only by the event an event answers: a fraction
    (``CONTEXT_SHARE``) of the group's own, rounded down (integers keep scores exact)."""
    numerator, denominator = CONTEXT_SHARE
    return cover * numerator // denominator


def prior(tokens: int) -> float:
    """The stored per-event prior from its number of words: shorter events higher, in
    ``_PRIOR_LEVELS`` steps (a function of the event alone)."""
    share = min(1.0, math.log2(1 + max(0, tokens)) / _PRIOR_LOG2_TOKENS)
    return PRIOR_MAX * (_PRIOR_LEVELS - round(share * _PRIOR_LEVELS)) / _PRIOR_LEVELS


def coverage_of(score: float) -> int:
    """The coverage part of an engine score (exact: the prior never crosses a unit)."""
    return int(score // COVER_SCALE)


def holds_all(score: float) -> bool:
    """Whether the engine score's event holds every required group."""
    return int(score // ALL_BIT) % 2 == 1


@dataclass(frozen=True, slots=True)
class Weights:
    """One query's clause weights in one workspace: coverage units per required group
    (summing to ``COVER_UNITS``) and exact-form bonus per required group."""

    cover: tuple[int, ...]
    exact: tuple[int, ...]
    # Per required group: distinctive (a name or a rare term the workspace holds).
    distinctive: tuple[bool, ...] = ()

    @property
    def distinctive_mask(self) -> int:
        """The distinctive groups as a bit mask (bit i: required group i)."""
        return sum(1 << i for i, d in enumerate(self.distinctive) if d)


def term_tokens(term: PlanTerm) -> tuple[str, list[str]]:
    """(field, tokens) that decide whether an event holds ``term``: a quoted term's exact
    words; otherwise the derived forms, which every exact form also yields."""
    if term.quoted:
        return "ex", [w.exact for w in term.words]
    return "nm", [d for w in term.words for d in w.derived]


def weights(plan: QueryPlan, key: str, doc_freq: DocFreq) -> Weights:
    """The clause weights from the workspace's own counts (``key`` prefixes its terms).

    A group's document frequency is its most frequent alternative's, a term's is its
    rarest word's (an upper bound of the phrase's, read in O(1) per word); the event
    count is the workspace marker's. Equal inputs give equal weights on every replica."""
    events = doc_freq("nm", key)
    dfs = [max(_term_df(t, key, doc_freq) for t in g) for g in plan.required]
    idfs = [_idf(events, df) for df in dfs]
    rare = max(1.0, RARE_SHARE * events)
    first = plan.groups[0][0] if plan.groups else None
    distinctive = tuple(
        df > 0 and (df <= rare or any(t is not first and _named(t) for t in g))
        for g, df in zip(plan.required, dfs, strict=True)
    )
    return Weights(
        cover=_shares(idfs, COVER_UNITS), exact=_exact_shares(idfs), distinctive=distinctive
    )


def _named(term: PlanTerm) -> bool:
    """Written with a capital: a name (a person, a place, a product), not the question's
    first word (whose capital says nothing)."""
    return not term.quoted and term.text[:1].isupper()


def _term_df(term: PlanTerm, key: str, doc_freq: DocFreq) -> int:
    field, tokens = term_tokens(term)
    return min((doc_freq(field, key + token) for token in tokens), default=0)


def _idf(events: int, df: int) -> float:
    df = min(df, events)
    return math.log(1 + (events - df + 0.5) / (df + 0.5))


def _shares(values: Sequence[float], total: int) -> tuple[int, ...]:
    """Integers >= 1 proportional to ``values`` summing to ``total`` (largest remainder;
    equal remainders go to the earlier group)."""
    n = len(values)
    if n == 0:
        return ()
    spare = total - n  # every group gets one unit first
    whole = sum(values)
    raw = [spare * v / whole if whole > 0 else spare / n for v in values]
    shares = [1 + math.floor(r) for r in raw]
    order = sorted(range(n), key=lambda i: (-(raw[i] - math.floor(raw[i])), i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return tuple(shares)


def _exact_shares(idfs: Sequence[float]) -> tuple[int, ...]:
    """One exact-form point for each of the ``EXACT_BONUS`` rarest groups."""
    rarest = sorted(range(len(idfs)), key=lambda i: (-idfs[i], i))[:EXACT_BONUS]
    return tuple(1 if i in rarest else 0 for i in range(len(idfs)))


def phrase_tokens(plan: QueryPlan) -> list[str]:
    """The query's words as written, in order, for the adjacency bonus: only when every
    group is one unquoted-or-quoted term (an OR has no single wording)."""
    if any(len(group) != 1 for group in plan.groups):
        return []
    tokens = [w.exact for group in plan.groups for w in group[0].words]
    return tokens if len(tokens) > 1 else []


def near_tokens(plan: QueryPlan) -> list[str]:
    """The content words' derived forms, in order, for the nearness bonus."""
    if any(len(group) != 1 for group in plan.required):
        return []
    tokens = [d for group in plan.required for w in group[0].words for d in w.derived]
    return tokens if len(tokens) > 1 else []


def share(coverage: int, holds_all: bool, partial: bool) -> float:
    """The share of the query a lexical hit holds, for fusion's weight (an event holding
    every group, or any hit of an all-words search: 1; the time favour counts as held
    words, up to 1)."""
    return min(1.0, coverage / COVER_UNITS) if partial and not holds_all else 1.0


def order_key(score: float, session_id: str, seq: int) -> tuple[float, str, int]:
    """The total order of events: higher score first, then session id, then seq."""
    return (-score, session_id, seq)


K = TypeVar("K", bound=Hashable)


def decided(lexical_first: K | None, holding_all: Sequence[K], distinctive: int) -> bool:
    """Whether the lexical evidence alone decides a hybrid page: the question has
    distinctive groups, and the only candidate of the scope holding all of them in one
    event (``holding_all``: up to two such candidates) is the lexical first."""
    return bool(distinctive) and lexical_first is not None and list(holding_all) == [lexical_first]


def keep_distinctive(proposed: Sequence[K], lexical: Sequence[K], held: Mapping[K, int]) -> list[K]:
    """``proposed`` (fusion's order), changed only where it would put a candidate above
    one the ``lexical`` order ranks higher and that holds a distinctive group it lacks
    (``held``: the bit mask of distinctive groups each candidate's event holds; a
    candidate not in ``lexical`` ranks below every lexical one). Each step takes the
    first proposed candidate nothing may stay above.

    In O(n log n + n * masks^2): the masks are few (the question's distinctive groups are
    a handful), and a candidate of mask ``m`` may be placed once every lexical candidate
    of a mask holding a group ``m`` lacks, ranked above it, is placed."""
    lexical_rank = {key: i for i, key in enumerate(lexical)}
    below = len(lexical)
    # The lexical ranks of each mask that can hold a candidate back, lowest first.
    waiting: dict[int, list[int]] = {}
    for key in lexical:
        mask = held.get(key, 0)
        if mask:
            waiting.setdefault(mask, []).append(lexical_rank[key])
    if not waiting:
        return list(proposed)
    # The candidates of each mask as (lexical rank, proposed position), lowest rank first.
    groups: dict[int, list[tuple[int, int]]] = {}
    for at, key in enumerate(proposed):
        groups.setdefault(held.get(key, 0), []).append((lexical_rank.get(key, below), at))
    for members in groups.values():
        members.sort()
    lowest_at = dict.fromkeys(waiting, 0)
    placed: set[int] = set()
    released = dict.fromkeys(groups, 0)
    ready: list[int] = []  # proposed positions that may be placed, a heap

    def lowest_waiting(mask: int) -> int:
        ranks = waiting[mask]
        at = lowest_at[mask]
        while at < len(ranks) and ranks[at] in placed:
            at += 1
        lowest_at[mask] = at
        return ranks[at] if at < len(ranks) else below + 1

    blocking = {mask: [o for o in waiting if o & ~mask] for mask in groups}

    def release() -> None:
        lowest = {mask: lowest_waiting(mask) for mask in waiting}
        for mask, members in groups.items():
            limit = min((lowest[o] for o in blocking[mask]), default=below + 1)
            at = released[mask]
            while at < len(members) and members[at][0] < limit:
                heapq.heappush(ready, members[at][1])
                at += 1
            released[mask] = at

    release()
    order: list[K] = []
    while ready:
        key = proposed[heapq.heappop(ready)]
        order.append(key)
        rank = lexical_rank.get(key, below)
        mask = held.get(key, 0)
        if rank < below and mask:
            placed.add(rank)
            # Only the lowest waiting rank of a mask holds others back.
            if lowest_at[mask] < len(waiting[mask]) and waiting[mask][lowest_at[mask]] == rank:
                release()
    return order
