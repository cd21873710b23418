"""Balanced partition sets (``partition_plan.balance``): properties of the pure planner."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.partitions import PartitionSet
from worker.commands.partition_plan import TOLERANCE, PlanError, balance

# A plan of 64 partitions takes milliseconds, more on a loaded machine: no per-example
# deadline (time is not the property here).
relaxed = settings(deadline=None)
sizes_st = st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=64)


def _greedy_max_deviation(sizes: list[int], shards: int) -> float:
    """Largest-first to the lightest set, without improvement: what the plan must not lose to."""
    weights = [0] * shards
    for size in sorted(sizes, reverse=True):
        weights[weights.index(min(weights))] += size
    mean = sum(weights) / shards
    return max(abs(w - mean) / mean for w in weights) if mean else 0.0


@relaxed
@given(sizes_st, st.integers(min_value=1, max_value=16))
def test_every_partition_is_in_exactly_one_nonempty_set(sizes: list[int], shards: int) -> None:
    if shards > len(sizes):
        with pytest.raises(PlanError, match="at most"):
            balance(sizes, shards)
        return
    plan = balance(sizes, shards)
    members = [k for s in plan.sets for k in s]
    assert sorted(members) == list(range(len(sizes)))
    assert len(plan.sets) == shards and all(plan.sets)
    assert list(plan.weights) == [sum(sizes[k] for k in s) for s in plan.sets]
    # Each set is a value --partitions reads back as the same members.
    for s in plan.sets:
        written = str(PartitionSet(len(sizes), frozenset(s)))
        assert tuple(PartitionSet.parse(written, len(sizes))) == s


@relaxed
@given(sizes_st, st.integers(min_value=1, max_value=8))
def test_deterministic_and_never_worse_than_the_greedy(sizes: list[int], shards: int) -> None:
    if shards > len(sizes):
        return
    plan = balance(sizes, shards)
    assert balance(list(sizes), shards) == plan
    assert plan.max_deviation <= _greedy_max_deviation(sizes, shards) + 1e-12


@relaxed
@given(
    # 200+ partitions of 50..100 over at most 4 shards: none exceeds 5% of a share.
    st.lists(st.integers(min_value=50, max_value=100), min_size=200, max_size=400),
    st.integers(min_value=2, max_value=4),
)
def test_small_partitions_are_always_balanced_within_tolerance(
    sizes: list[int], shards: int
) -> None:
    # When no partition exceeds 5% of a share, the improvement steps leave the heaviest and
    # lightest sets apart by at most one partition of the heaviest: within ±5%.
    assert max(sizes) <= TOLERANCE * sum(sizes) / shards
    plan = balance(sizes, shards)
    assert plan.within_tolerance and plan.problem is None


def test_improvement_beats_the_greedy_where_it_is_off() -> None:
    # Greedy puts 5+4 and 5+3+3 (9 / 11); one swap (a 5 for the 4) makes 10 / 10.
    sizes = [5, 5, 4, 3, 3]
    assert _greedy_max_deviation(sizes, 2) == pytest.approx(0.1)
    plan = balance(sizes, 2)
    assert plan.weights == (10, 10) and plan.max_deviation == 0


def test_one_huge_partition_is_said_plainly() -> None:
    plan = balance([100, 10, 10, 10, 10, 10], 2)
    assert not plan.within_tolerance
    assert plan.sets == ((0,), (1, 2, 3, 4, 5))  # still the best plan there is
    assert plan.problem is not None and "partition 0 alone holds 1.33x a shard's share" in (
        plan.problem
    )


def test_coarse_partitions_are_said_plainly() -> None:
    plan = balance([10, 10, 10], 2)
    assert plan.weights in ((20, 10), (10, 20))
    assert plan.problem is not None and "too coarse for 2 shards" in plan.problem


def test_an_empty_stream_shares_the_partitions_by_number() -> None:
    plan = balance([0] * 16, 4)
    assert [len(s) for s in plan.sets] == [4, 4, 4, 4] and plan.within_tolerance


@pytest.mark.parametrize(
    ("sizes", "shards", "message"),
    [([1, 2], 3, "3 shards need at least 3 partitions"), ([1], 0, "at least 1"),
     ([1, -1], 1, "negative")],
)  # fmt: skip
def test_refuses_what_cannot_be_planned(sizes: list[int], shards: int, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        balance(sizes, shards)
