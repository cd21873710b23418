"""The fusion rule of lexical and semantic results (pure functions; no model, no numpy).

- A query whose every term is exact intent (an identifier, a path, an error fragment, a
  quoted phrase, a number) skips the semantic path: it asks for those characters.
- Pinned lexical hits keep their lexical order above everything semantic: an event holding
  every word of the query, and any lexical hit of a query with an exact-intent term in it
  (the identifier's match ranks above a hit that only means something alike).
- The rest, lexical partial matches and semantic hits, are ordered by weighted reciprocal
  rank: ``w/(RRF_K + rank)`` summed over the lists an item is in, the lexical weight being the
  share of the query's words the hit holds (each word weighted by its rarity in the
  workspace, ``worker.store.search.ranking``), so a hit in both lists rises and a lexical hit
  holding one common word of five weighs little.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from worker.store.search.query import PlanTerm, QueryPlan

# Reciprocal-rank constant and the semantic list's weight: small and 2 so the first places
# of the semantic list count against partial lexical matches (bench.relevance, seed 11:
# paraphrase success@1 0.05 -> 0.14 against K=10 and weight 1, every other category the
# same; see bench/README.md "Semantic search").
RRF_K: Final = 3
SEMANTIC_WEIGHT: Final = 2.0
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
    plan: QueryPlan, lexical: Sequence[Lexical[K]], semantic: Sequence[K]
) -> list[tuple[K, bool]]:
    """Keys best first, each with whether it is a semantic-only hit. ``lexical`` and
    ``semantic`` are best first; a key may be in both."""
    pin_all = pins_lexical(plan)
    pinned = [h.key for h in lexical if pin_all or h.share >= 1.0]
    pinned_set = set(pinned)
    score: dict[K, float] = {}
    first: dict[K, tuple[int, int]] = {}
    for rank, hit in enumerate(lexical, 1):
        if hit.key not in pinned_set:
            score[hit.key] = score.get(hit.key, 0.0) + hit.share / (RRF_K + rank)
            first[hit.key] = (rank, 0)
    for rank, key in enumerate(semantic, 1):
        if key not in pinned_set:
            score[key] = score.get(key, 0.0) + SEMANTIC_WEIGHT / (RRF_K + rank)
            first.setdefault(key, (len(lexical) + 1, rank))
    rest = sorted(score, key=lambda key: (-score[key], first[key]))
    lexical_keys = {h.key for h in lexical}
    return [(key, False) for key in pinned] + [(key, key not in lexical_keys) for key in rest]


def within_margin(scored: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    """The semantic hits worth showing: best first, within ``SEMANTIC_MARGIN`` of the best."""
    if not scored:
        return []
    best = scored[0][1]
    return [(key, cosine) for key, cosine in scored if cosine >= best - SEMANTIC_MARGIN]
