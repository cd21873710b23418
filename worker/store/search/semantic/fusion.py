"""The fusion rule of lexical and semantic results (pure functions; no model, no numpy).

- A query whose every term is exact intent (an identifier, a path, an error fragment, a
  quoted phrase, a number) skips the semantic path: it asks for those characters.
- Pinned lexical hits keep their lexical order above everything semantic: an event holding
  every word of the query and every lexical hit ranked above one, and any lexical hit of a
  query with an exact-intent term in it (the identifier's match ranks above a hit that only
  means something alike).
- The rest, lexical partial matches and semantic hits, rank by evidence first: the share of
  the query's words a hit holds (each word weighted by its rarity in the workspace,
  ``worker.store.search.ranking``), in tiers of ``1/SHARE_TIERS``. A semantic hit counts as
  holding ``SEMANTIC_SHARE`` of the query at the top of its list (less further down), so
  meaning lifts a hit over lexical hits whose evidence is weak (a name and a common word)
  and never over one holding most of the rare words (issue 34: the reciprocal-rank fusion
  before let the model's first choice beat the turn holding "birthday" and "daughter").
- Inside a tier, weighted reciprocal rank decides: ``w/(RRF_K + rank)`` summed over the
  lists an item is in, the lexical weight being the hit's share, so a hit in both lists
  rises.
- Last, the ranking module's rule (issue 42, ``ranking.keep_distinctive``): no hit rises
  above one the lexical order put above it that holds a distinctive word of the question
  (a name, a rare term) it lacks. When the lexical evidence alone decides the page
  (``ranking.decided``) the search does not come here, nor embed the question.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from worker.store.search.query import PlanTerm, QueryPlan
from worker.store.search.ranking import keep_distinctive

# Reciprocal-rank constant and the semantic list's weight, inside a tier (issue 21's).
RRF_K: Final = 3
SEMANTIC_WEIGHT: Final = 2.0
# Evidence tiers, and the share of the query a semantic hit counts as holding at the top
# of its list: SEMANTIC_SHARE * (RRF_K + 1) / (RRF_K + rank). Measured on bench.relevance
# (seed 11, 1x; bench/README.md "Semantic search"): see the figures there.
SHARE_TIERS: Final = 8
SEMANTIC_SHARE: Final = 0.5
# Semantic hits kept: within this (centred) cosine of the best one, at most
# SEMANTIC_EVENTS events. 0.35 kept the paraphrase category's success@5 at its best
# (0.76; 0.15 gave 0.48) while a far-off event stays out.
SEMANTIC_MARGIN: Final = 0.35
SEMANTIC_EVENTS: Final = 100
_EXACT_SHAPE: Final = re.compile(r"[_./\\:()\[\]{}<>=#@$%&*+|~`0-9]|[a-z][A-Z]|\w-\w")

K = TypeVar("K", bound=Hashable)


def exact_intent(term: PlanTerm) -> bool:
    """The term asks for exact characters: quoted, or shaped like an identifier, a path, an
    error fragment or a number."""
    if term.quoted:
        return True
    if any(w.cjk for w in term.words):
        return False
    return len(term.words) > 1 or bool(_EXACT_SHAPE.search(term.text))


def skips_semantic(plan: QueryPlan) -> bool:
    """Every required term is exact intent: the query is an identifier (or such)."""
    return all(exact_intent(t) for group in plan.required for t in group)


def pins_lexical(plan: QueryPlan) -> bool:
    """Any exact-intent term: every lexical hit ranks above semantic-only ones."""
    return any(exact_intent(t) for group in plan.groups for t in group)


@dataclass(frozen=True, slots=True)
class Lexical(Generic[K]):
    key: K
    share: float  # the share of the query's (weighted) words the hit holds; 1.0: every one


def fuse(
    plan: QueryPlan,
    lexical: Sequence[Lexical[K]],
    semantic: Sequence[K],
    held: Mapping[K, int] | None = None,
) -> list[tuple[K, bool]]:
    """Keys best first, each with whether it is a semantic-only hit. ``lexical`` and
    ``semantic`` are best first; a key may be in both. ``held``: the distinctive groups
    each key's event holds (``ranking.keep_distinctive``; none: no such group)."""
    pin_all = pins_lexical(plan)
    # Lexical order is kept down to the last hit holding every word: a hit ranked above it
    # (a focused message above a log holding the words scattered) is at least as sure.
    last = max((i for i, h in enumerate(lexical) if pin_all or h.share >= 1.0), default=-1)
    pinned = [h.key for h in lexical[: last + 1]]
    pinned_set = set(pinned)
    evidence: dict[K, float] = {}
    score: dict[K, float] = {}
    first: dict[K, tuple[int, int]] = {}
    for rank, hit in enumerate(lexical, 1):
        if hit.key not in pinned_set:
            evidence[hit.key] = hit.share
            score[hit.key] = hit.share / (RRF_K + rank)
            first[hit.key] = (rank, 0)
    for rank, key in enumerate(semantic, 1):
        if key not in pinned_set:
            evidence[key] = max(evidence.get(key, 0.0), semantic_share(rank))
            score[key] = score.get(key, 0.0) + SEMANTIC_WEIGHT / (RRF_K + rank)
            first.setdefault(key, (len(lexical) + 1, rank))
    rest = sorted(score, key=lambda key: (-tier(evidence[key]), -score[key], first[key]))
    lexical_keys = {h.key for h in lexical}
    order = pinned + rest
    if held:
        order = keep_distinctive(order, [h.key for h in lexical], held)
    return [(key, key not in lexical_keys) for key in order]


def semantic_share(rank: int) -> float:
    """The share of the query a semantic hit at ``rank`` (from 1) counts as holding."""
    return SEMANTIC_SHARE * (RRF_K + 1) / (RRF_K + rank)


def tier(share: float) -> int:
    """The evidence tier of a share (0..SHARE_TIERS); shares are sums of 1/256 units, the
    small margin keeps a share exactly on a step in the tier above."""
    return math.floor(share * SHARE_TIERS + 1e-9)


def within_margin(scored: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    """The semantic hits worth showing: best first, within ``SEMANTIC_MARGIN`` of the best."""
    if not scored:
        return []
    best = scored[0][1]
    return [(key, cosine) for key, cosine in scored if cosine >= best - SEMANTIC_MARGIN]
