"""The reader pool's two modes and the SQL pieces the store's reads are built from.

Cancellation mid-statement is covered by ``test_cancellation``; here: errors, rollback,
closing, and the column names rows are read by.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from worker.signals import ExecutionCancelled, ExecutionSignal
from worker.store import sql, tables
from worker.store.errors import StoreError
from worker.store.protocol import EventFilter, SessionFilter
from worker.store.sqlite.pool import ReaderPool, Tx


@pytest.fixture
async def pool(tmp_path: Path) -> AsyncIterator[ReaderPool]:
    opened = await ReaderPool.open(str(tmp_path / "index.sqlite"), 2)
    try:
        yield opened
    finally:
        await opened.close()


def generation_seq(tx: Tx) -> int:
    found, at = tx.read(sql.GENERATION)
    return int(found[0][at["seq"]] or 0)


def broken(tx: Tx) -> None:
    tx.read("SELECT no_such_column FROM meta")


async def test_both_modes_return_the_work_result(pool: ReaderPool) -> None:
    assert pool.run_inline(ExecutionSignal(), generation_seq, one_statement=True) == 0
    assert pool.run_inline(ExecutionSignal(), generation_seq) == 0
    assert await pool.run_on_reader(ExecutionSignal(), generation_seq) == 0
    assert pool.qsize() == 2


@pytest.mark.parametrize("one_statement", [True, False])
async def test_a_failed_inline_read_is_a_store_error_and_the_next_read_works(
    pool: ReaderPool, one_statement: bool
) -> None:
    with pytest.raises(StoreError, match="index read failed"):
        pool.run_inline(ExecutionSignal(), broken, one_statement=one_statement)
    assert pool.run_inline(ExecutionSignal(), generation_seq) == 0


async def test_a_failed_reader_read_is_a_store_error_and_the_reader_comes_back(
    pool: ReaderPool,
) -> None:
    for _ in range(3):  # more than the pool holds: each reader came back
        with pytest.raises(StoreError, match="index read failed"):
            await pool.run_on_reader(ExecutionSignal(), broken)
    assert pool.qsize() == 2
    assert await pool.run_on_reader(ExecutionSignal(), generation_seq) == 0


async def test_an_aborted_signal_runs_nothing(pool: ReaderPool) -> None:
    signal = ExecutionSignal()
    signal.cancel("requester cancelled")
    ran: list[int] = []

    def work(tx: Tx) -> None:
        ran.append(1)

    with pytest.raises(ExecutionCancelled):
        pool.run_inline(signal, work)
    with pytest.raises(ExecutionCancelled):
        await pool.run_on_reader(signal, work)
    assert ran == []
    assert pool.qsize() == 2


async def test_a_closed_pool_refuses_both_modes(tmp_path: Path) -> None:
    pool = await ReaderPool.open(str(tmp_path / "index.sqlite"), 1)
    await pool.close()
    await pool.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        pool.run_inline(ExecutionSignal(), generation_seq)
    with pytest.raises(StoreError, match="closed"):
        await pool.run_on_reader(ExecutionSignal(), generation_seq)


async def test_the_column_lists_name_their_columns_in_order(pool: ReaderPool) -> None:
    def names(tx: Tx) -> list[str]:
        _, at = tx.read(
            f"SELECT {sql.HEADER_COLS}, {sql.EVENT_COLS} FROM sessions s"
            " JOIN events e ON e.session_id = s.session_id LIMIT 0"
        )
        return sorted(at, key=at.__getitem__)

    assert pool.run_inline(ExecutionSignal(), names, one_statement=True) == [
        *tables.HEADER_NAMES,
        *tables.EVENT_NAMES,
    ]


def test_the_filter_builder_binds_each_set_filter_once() -> None:
    params: dict[str, Any] = {}
    events = EventFilter(
        types=("message",), surfaces=("user",), time_from_ms=1, time_to_ms=2, seq_from=3
    )
    text = sql.event_filter_sql(events, params, with_seq=True)
    assert text == (
        " AND e.type IN (SELECT value FROM json_each(:types))"
        " AND e.surface IN (SELECT value FROM json_each(:surfaces))"
        " AND e.time_ms >= :time_from AND e.time_ms <= :time_to AND e.seq >= :seq_from"
    )
    assert params == {
        "types": '["message"]',
        "surfaces": '["user"]',
        "time_from": 1,
        "time_to": 2,
        "seq_from": 3,
    }
    assert sql.event_filter_sql(EventFilter(seq_from=3), {}, with_seq=False) == ""


def test_the_session_filter_matches_nothing_without_a_parent_or_root() -> None:
    params: dict[str, Any] = {}
    text = sql.session_filter_sql(
        SessionFilter(parent_session_ids=(), updated_to_ms=9, availability=("live",)), params
    )
    assert text == (
        " AND (0) AND s.updated_ms <= :updated_to"
        " AND s.availability IN (SELECT value FROM json_each(:availability))"
    )
    assert params == {"updated_to": 9, "availability": '["live"]'}
