"""``ReplicaStore``: the typed seam the tools and the operator reads hold across a rebuild's
swap. Method by method (no ``__getattr__``), so the protocols are checked where they are
received, and a swap serves the new file while the old one closes after its reads."""

from __future__ import annotations

import inspect
from pathlib import Path

from tests.store._corpus import Corpus, writer_and_store
from worker.replica.replica_store import ReplicaStore
from worker.signals import ExecutionSignal
from worker.store.operator import OperatorReads
from worker.store.protocol import SessionQueryService
from worker.store.sqlite import SqliteSessionStore


def _protocol_members(protocol: type) -> set[str]:
    return {
        name
        for name, member in vars(protocol).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }


def test_every_protocol_method_is_its_own_not_forwarded_by_name() -> None:
    assert not hasattr(ReplicaStore, "__getattr__")
    wanted = _protocol_members(SessionQueryService) | _protocol_members(OperatorReads)
    assert {"search_sessions", "read_titles", "wait_for_seq", "timeline"} <= wanted
    missing = sorted(name for name in wanted if name not in vars(ReplicaStore))
    assert missing == []
    # Each forwarding method takes exactly the protocol's parameters.
    for name in wanted - {"limits"}:
        ours = inspect.signature(getattr(ReplicaStore, name))
        theirs = inspect.signature(getattr(SqliteSessionStore, name))
        assert list(ours.parameters) == list(theirs.parameters), name


async def _store_with(path: Path, session_id: str) -> SqliteSessionStore:
    async with writer_and_store(path) as (writer, _reads):
        corpus = Corpus(writer=writer, path=path)
        corpus.start(session_id)
        corpus.say(session_id, "the ledger reconciliation finished")
        await corpus.flush()
    return await SqliteSessionStore.open(path)


async def test_a_swap_serves_the_new_file_and_closes_the_old(tmp_path: Path) -> None:
    old = await _store_with(tmp_path / "old.sqlite", "s-old")
    new = await _store_with(tmp_path / "new.sqlite", "s-new")
    replica = ReplicaStore(old)
    signal = ExecutionSignal()
    assert set(await replica.read_titles(["s-old", "s-new"], signal=signal)) == {"s-old"}
    await replica.swap(new)
    assert set(await replica.read_titles(["s-old", "s-new"], signal=signal)) == {"s-new"}
    assert replica.current is new
    # The old store was closed by the swap: reading it again fails.
    try:
        await old.read_titles(["s-old"], signal=signal)
    except Exception:
        closed = True
    else:
        closed = False
    assert closed
    await replica.close()
