"""Traces of any depth: lineage pruning and rendering never recurse.

Over the real SQLite provider: a chain of N levels, a fan-out of N children, and a chain
that crosses into a foreign workspace in the middle. (Recursion failed at ~500 levels.) N is
3,000 by default, three times the interpreter's recursion limit, and 10,000 in the slow
suite: the same property, a larger corpus.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools._corpus import Index, sqlite_index, start
from tests.tools._harness import as_caller, run_tool
from worker.store.protocol import LineageNode, SessionHeader
from worker.tools.presentation import DEEP_TREE_NOTE, HIDDEN_ANCESTORS, MAX_INDENT_DEPTH, _tree
from worker.tools.workspace_access import Caller, _prune

# Deeper than recursion could go (sys.getrecursionlimit() is 1,000): the default suite's size.
N = 3_000
SIZES = [pytest.param(N, id="3000"), pytest.param(10_000, id="10000", marks=pytest.mark.slow)]
WS = "/ws/deep"
FOREIGN = "/ws/foreign"


def chain_id(level: int) -> str:
    return f"s-chain-{level:05d}"


def chain(size: int, cwd_of: Any = lambda level: WS) -> list[dict[str, Any]]:
    return [
        start(chain_id(level), cwd_of(level), chain_id(level - 1) if level else None)
        for level in range(size)
    ]


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    async with sqlite_index(tmp_path, sample=False) as value:
        yield value


async def apply(index: Index, events: list[dict[str, Any]]) -> None:
    for begin in range(0, len(events), 2000):
        await index.apply(events[begin : begin + 2000])


async def trace(index: Index, caller: str, target: str | None = None) -> str:
    arguments = {} if target is None else {"session_id": target}
    return await run_tool(index.store, "session_trace", arguments, execution=as_caller(caller))


@pytest.mark.parametrize("size", SIZES)
async def test_a_10000_level_chain_traces_from_both_ends(index: Index, size: int) -> None:
    await apply(index, chain(size))
    from_root = await trace(index, chain_id(0))
    lines = from_root.splitlines()
    # Every descendant, in chain order, each once; the indentation stops growing.
    shown = [line for line in lines if "s-chain-" in line][1:]
    assert len(shown) == size - 1
    assert [line.split("s-chain-")[1][:5] for line in shown] == [
        f"{level:05d}" for level in range(1, size)
    ]
    assert shown[0].startswith("  - s-chain-00001 ")
    deepest = shown[-1]
    assert deepest.startswith(
        "  " * MAX_INDENT_DEPTH + f"- [depth {size - 1}] s-chain-{size - 1:05d}"
    )
    assert DEEP_TREE_NOTE in lines
    # Linear, not quadratic, in the depth.
    assert len(from_root) < size * 250
    from_leaf = await trace(index, chain_id(size - 1))
    ancestors = [line for line in from_leaf.splitlines() if line.startswith("  s-chain-")]
    assert len(ancestors) == size - 1
    assert ancestors[0].startswith(f"  s-chain-{size - 2:05d}")
    assert ancestors[-1].startswith("  s-chain-00000")


@pytest.mark.parametrize("size", SIZES)
async def test_a_10000_child_fan_out(index: Index, size: int) -> None:
    root = "s-fan-root"
    children = [start(f"s-fan-{n:05d}", WS, root) for n in range(size)]
    await apply(index, [start(root, WS), *children])
    text = await trace(index, root)
    shown = [line for line in text.splitlines() if line.startswith("  - s-fan-")]
    assert len(shown) == size
    assert DEEP_TREE_NOTE not in text


@pytest.mark.parametrize("size", SIZES)
async def test_a_chain_crossing_into_a_foreign_workspace_stops_there(
    index: Index, size: int
) -> None:
    middle = size // 2
    await apply(index, chain(size, lambda level: FOREIGN if level == middle else WS))
    from_root = await trace(index, chain_id(0))
    descendants = [line for line in from_root.splitlines() if "s-chain-" in line][1:]
    # Below the foreign session nothing is shown, and the foreign id never is.
    assert len(descendants) == middle - 1
    assert chain_id(middle) not in from_root and chain_id(middle + 1) not in from_root
    from_leaf = await trace(index, chain_id(size - 1))
    ancestors = [line for line in from_leaf.splitlines() if line.startswith("  s-chain-")]
    assert len(ancestors) == size - 2 - middle
    assert HIDDEN_ANCESTORS in from_leaf
    assert chain_id(middle) not in from_leaf and chain_id(middle - 1) not in from_leaf


def _header(session_id: str, cwd: str) -> SessionHeader:
    return SessionHeader(
        session_id=session_id,
        cwd=cwd,
        parent_session_id=None,
        created_ms=0,
        updated_ms=0,
        availability="persisted",
        last_seq=1,
        event_count=1,
    )


def test_prune_and_render_are_not_limited_by_the_recursion_limit() -> None:
    # Deeper than the interpreter's recursion limit, built bottom-up without recursion.
    depth = sys.getrecursionlimit() * 3
    node: LineageNode | None = None
    for level in reversed(range(depth)):
        cwd = FOREIGN if level == depth - 10 else WS
        header = _header(f"s-{level}", cwd)
        node = LineageNode(header=header, children=() if node is None else (node,))
    assert node is not None
    pruned = _prune(Caller(session_id="s-x", cwd=WS), (node,))
    kept = 0
    current: tuple[LineageNode, ...] = pruned
    while current:
        kept += 1
        current = current[0].children
    assert kept == depth - 10
    lines: list[str] = []
    _tree(pruned, {}, depth=1, into=lines)
    assert len(lines) == depth - 10 + 1  # and the deep-tree note
