"""Balanced partition sets: which partitions each shard of a layout holds.

``balance(sizes, shards)`` is pure: ``sizes[k]`` is partition ``k``'s weight (its events'
bytes in the stream) and the answer is ``shards`` sets of partitions whose weights are as
near the mean as this finds. It is deterministic (same sizes, same sets), so two operators
planning the same stream print the same layout:

1. Greedy, largest first: partitions by size descending (ties: lower partition first), each
   to the set with the least weight so far (ties: the one with fewer partitions, then the
   lower set, so empty partitions spread instead of piling on one set).
2. Improvement: while some pair of sets (heavier ``a``, lighter ``b``) admits a move of one
   partition from ``a`` to ``b``, or a swap of one of each, that shifts ``d`` with
   ``0 < d < weight(a) - weight(b)``, apply the best such shift of the pair with the widest
   gap. Both sets end between their old weights, so the heaviest set never gets heavier
   nor the lightest lighter, and the sum of squared weights falls at every step (so it
   ends). A set is never emptied: a worker needs at least one partition.

At the end no partition can move from the heaviest set to the lightest usefully, so their
gap is at most the smallest partition of the heaviest set: when every partition is small
against a set's share, the sets are near-equal. When they cannot be (one partition larger
than a share's tolerance, or partitions too coarse), the plan says so and is still the
best this found (``ShardPlan.within_tolerance``, ``ShardPlan.problem``).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from worker.failures import RuntimeFailure

# Each set within this fraction of the mean weight (issue 29: ±5% by bytes).
TOLERANCE: Final = 0.05
# Bound on improvement steps (each lowers the sum of squares; this only caps a pathological
# input's time: 16 partitions take a handful).
_MAX_STEPS_PER_PARTITION: Final = 50


class PlanError(RuntimeFailure, ValueError):
    """No plan can be made for these inputs (e.g. more shards than partitions)."""


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """``sets[i]``: the sorted partitions of shard ``i``; ``weights[i]``: their total."""

    sets: tuple[tuple[int, ...], ...]
    weights: tuple[int, ...]
    sizes: tuple[int, ...]
    tolerance: float = TOLERANCE

    @property
    def mean(self) -> float:
        return sum(self.weights) / len(self.weights)

    def deviation(self, shard: int) -> float:
        """Shard ``shard``'s weight against the mean, as a signed fraction (0.03: 3% over)."""
        mean = self.mean
        return (self.weights[shard] - mean) / mean if mean else 0.0

    @property
    def max_deviation(self) -> float:
        """The largest distance of a set from the mean, as a fraction of the mean."""
        return max(abs(self.deviation(i)) for i in range(len(self.sets)))

    @property
    def within_tolerance(self) -> bool:
        return self.max_deviation <= self.tolerance

    @property
    def problem(self) -> str | None:
        """Why the plan is outside the tolerance, in words, or None when it is within."""
        if self.within_tolerance:
            return None
        mean = self.mean
        largest = max(range(len(self.sizes)), key=lambda k: (self.sizes[k], -k))
        if self.sizes[largest] > mean * (1 + self.tolerance):
            return (
                f"partition {largest} alone holds {self.sizes[largest] / mean:.2f}x a shard's"
                f" share, so no layout of {len(self.sets)} shards is within"
                f" ±{self.tolerance:.0%}: use fewer shards, or a stream with more partitions"
                " (its workspaces spread thinner)"
            )
        return (
            f"the best sets found are {self.max_deviation:.1%} from the mean, beyond"
            f" ±{self.tolerance:.0%}: the partitions are too coarse for {len(self.sets)}"
            " shards (the largest holds "
            f"{self.sizes[largest] / mean:.0%} of a share); use fewer shards, or a stream"
            " with more partitions"
        )


def balance(sizes: Sequence[int], shards: int, tolerance: float = TOLERANCE) -> ShardPlan:
    """``shards`` sets of the partitions ``0..len(sizes)-1`` balanced by ``sizes``."""
    count = len(sizes)
    if shards < 1:
        raise PlanError(f"shards must be at least 1, not {shards}")
    if shards > count:
        raise PlanError(
            f"{shards} shards need at least {shards} partitions (a worker holds at least one)"
            f" and the stream has {count}: use at most {count} shards"
        )
    if any(size < 0 for size in sizes):
        raise PlanError("partition sizes cannot be negative")
    sets: list[list[int]] = [[] for _ in range(shards)]
    weights = [0] * shards
    for k in sorted(range(count), key=lambda k: (-sizes[k], k)):
        lightest = min(range(shards), key=lambda i: (weights[i], len(sets[i]), i))
        sets[lightest].append(k)
        weights[lightest] += sizes[k]
    for _ in range(_MAX_STEPS_PER_PARTITION * count):
        if not _improve(sets, weights, sizes):
            break
    ordered = sorted((tuple(sorted(s)) for s in sets), key=lambda s: s[0])
    return ShardPlan(
        sets=tuple(ordered),
        weights=tuple(sum(sizes[k] for k in s) for s in ordered),
        sizes=tuple(sizes),
        tolerance=tolerance,
    )


def _improve(sets: list[list[int]], weights: list[int], sizes: Sequence[int]) -> bool:
    """Apply one improving move or swap (see the module's step 2); False when none is left."""
    order = sorted(range(len(sets)), key=lambda i: (weights[i], i))
    pairs = sorted(
        ((a, b) for ai, a in enumerate(order) for b in order[:ai] if weights[a] > weights[b]),
        key=lambda p: (weights[p[1]] - weights[p[0]], p),
    )
    for a, b in pairs:
        shift = _best_shift(sets[a], sets[b], weights[a] - weights[b], sizes)
        if shift is None:
            continue
        out, back = shift
        sets[a].remove(out)
        sets[b].append(out)
        weights[a] -= sizes[out]
        weights[b] += sizes[out]
        if back is not None:
            sets[b].remove(back)
            sets[a].append(back)
            weights[b] -= sizes[back]
            weights[a] += sizes[back]
        return True
    return False


def _best_shift(
    heavy: list[int], light: list[int], gap: int, sizes: Sequence[int]
) -> tuple[int, int | None] | None:
    """The move (partition, None) or swap (partition, partition) from ``heavy`` to ``light``
    whose shifted weight ``d`` is nearest ``gap / 2`` with ``0 < d < gap``; None if none."""
    best: tuple[float, int, int, int | None] | None = None

    def consider(d: int, out: int, back: int | None) -> None:
        nonlocal best
        if 0 < d < gap:
            key = (abs(2 * d - gap) / 2, out, -1 if back is None else back)
            if best is None or key < best[:3]:
                best = (*key, back)

    if len(heavy) > 1:  # a move must leave the heavy set a partition
        for out in heavy:
            consider(sizes[out], out, None)
    # Swaps: for each partition leaving, the returning one nearest ``size - gap / 2``.
    light_sorted = sorted(light, key=lambda k: (sizes[k], k))
    light_sizes = [sizes[k] for k in light_sorted]
    for out in heavy:
        target = sizes[out] - gap / 2
        at = bisect.bisect_left(light_sizes, target)
        for j in (at - 1, at):
            if 0 <= j < len(light_sorted):
                consider(sizes[out] - light_sizes[j], out, light_sorted[j])
    if best is None:
        return None
    return best[1], best[3]
