"""A session's lineage from the rows of ``sql.LINEAGE``: the ancestor chain and the trees.

Both walks are cycle-safe and built without recursion (a chain may be thousands deep).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from worker.store import results
from worker.store.database import Columns
from worker.store.protocol import Lineage, LineageNode, SessionHeader


class Truncated:
    """A lineage walk that reached its cap: read it again without one."""


TRUNCATED: Final = Truncated()


def lineage(
    found: Sequence[results.Row], at: Columns, session_id: str, cap: int
) -> Lineage | Truncated | None:
    """The lineage of ``session_id``; ``TRUNCATED`` when a walk holds ``cap`` rows."""
    kind, sid = at["kind"], at["sid"]
    chain = [row for row in found if row[kind] == 0]
    tree = [row for row in found if row[kind] == 1]
    if len(chain) == cap or len(tree) == cap:
        return TRUNCATED
    present = at["session_id"]
    observed = {
        row[sid]: results.title_observation(row, at) for row in chain if row[present] is not None
    }
    known = {chain_id: observation.header for chain_id, observation in observed.items()}
    target = known.get(session_id)
    if target is None:
        return None
    placed = {target.session_id}
    ancestors, missing = _ancestors(target, known, placed)
    subtree = [results.title_observation(row, at) for row in tree]
    observed.update((o.header.session_id, o) for o in subtree)
    return Lineage(
        target=target,
        ancestors=ancestors,
        missing_ancestor_id=missing,
        descendants=descendant_trees(target.session_id, [o.header for o in subtree], placed),
        titles=observed,
    )


def _ancestors(
    target: SessionHeader, known: Mapping[str, SessionHeader], placed: set[str]
) -> tuple[tuple[SessionHeader, ...], str | None]:
    """Nearest parent first, and the parent id the chain ends on when it is not known;
    each ancestor is added to ``placed``."""
    ancestors: list[SessionHeader] = []
    parent = target.parent_session_id
    while parent is not None and parent not in placed:  # placed again: a cycle
        header = known.get(parent)
        if header is None:
            return tuple(ancestors), parent
        ancestors.append(header)
        placed.add(parent)
        parent = header.parent_session_id
    return tuple(ancestors), None


def descendant_trees(
    root: str, headers: Iterable[SessionHeader], placed: set[str]
) -> tuple[LineageNode, ...]:
    """Trees under ``root``; each session appears once, none of ``placed`` again.

    First choose each session's place breadth-first, then assemble nodes from the deepest
    level up.
    """
    children: dict[str, list[SessionHeader]] = {}
    for header in headers:
        if header.parent_session_id is not None:
            children.setdefault(header.parent_session_id, []).append(header)
    seen = set(placed)
    levels: list[list[tuple[str, list[SessionHeader]]]] = []  # (parent id, placed children)
    frontier = [root]
    while frontier:
        level: list[tuple[str, list[SessionHeader]]] = []
        for parent in frontier:
            kids = [h for h in children.get(parent, ()) if h.session_id not in seen]
            seen.update(h.session_id for h in kids)
            level.append((parent, kids))
        levels.append(level)
        frontier = [h.session_id for _, kids in level for h in kids]
    built: dict[str, tuple[LineageNode, ...]] = {}  # parent id -> its finished subtrees
    for level in reversed(levels):
        for parent, kids in level:
            built[parent] = tuple(LineageNode(h, built.pop(h.session_id, ())) for h in kids)
    return built.get(root, ())
