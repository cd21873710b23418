"""The workspace key and partition function, against nats-server's own ``partition()``."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.js.api import StoreCompression

from contracts.partitions import (
    NO_CWD_KEY,
    PartitionSet,
    PartitionSetError,
    fnv1a_32,
    partition_of,
    workspace_key,
)
from contracts.streams import (
    ensure_events_stream,
    events_partition_count,
    events_stream_config,
)
from deploy.streams import ensure_replicated_events_stream
from tests._subjects import unique_subjects


def test_workspace_key_is_sha256_prefix() -> None:
    assert workspace_key("/repo") == hashlib.sha256(b"/repo").hexdigest()[:16]
    assert workspace_key(None) == NO_CWD_KEY
    assert workspace_key("") != NO_CWD_KEY  # an empty cwd is a cwd


def test_documented_vectors() -> None:
    # docs/protocol.md §10 prints these: a client in another language checks itself here.
    assert fnv1a_32(b"") == 0x811C9DC5
    assert fnv1a_32(b"a") == 0xE40C292C
    assert (
        workspace_key("/home/dev/project") == hashlib.sha256(b"/home/dev/project").hexdigest()[:16]
    )
    assert partition_of(NO_CWD_KEY, 16) == fnv1a_32(NO_CWD_KEY.encode()) % 16


@pytest.mark.parametrize(
    ("text", "members"),
    [("all", set(range(16))), ("0-3,8", {0, 1, 2, 3, 8}), (" 5 ", {5}), ("0-15", set(range(16)))],
)
def test_partition_set_parse(text: str, members: set[int]) -> None:
    parsed = PartitionSet.parse(text, 16)
    assert set(parsed) == members
    assert PartitionSet.parse(str(parsed), 16) == parsed


@pytest.mark.parametrize("text", ["", "x", "3-1", "16", "-1", "0-16", "1,,2"])
def test_partition_set_refuses(text: str) -> None:
    with pytest.raises(PartitionSetError):
        PartitionSet.parse(text, 16)


def test_partition_set_text() -> None:
    assert str(PartitionSet.parse("0-15", 16)) == "all"
    assert PartitionSet.parse("0-3,8,9", 16).label == "p0-3_8-9"


@given(st.sets(st.integers(0, 31), min_size=1))
def test_partition_set_round_trip(members: set[int]) -> None:
    parsed = PartitionSet(32, frozenset(members))
    assert PartitionSet.parse(str(parsed), 32) == parsed


async def test_stream_assigns_the_documented_partition(nc: Any) -> None:
    """Publish on the key subject; the stored subject carries partition_of(key)."""
    js = nc.jetstream()
    subjects = unique_subjects()
    assert await ensure_events_stream(js, subjects, partitions=7)
    assert await events_partition_count(js, subjects) == 7
    keys = [workspace_key(f"/w/{i}") for i in range(60)] + [NO_CWD_KEY]
    for key in keys:
        await js.publish(subjects.events(key, "s-1"), b"{}")
    for seq, key in enumerate(keys, start=1):
        stored = await js.get_msg(subjects.events_stream, seq=seq)
        _, partition, stored_key, sid = stored.subject.rsplit(".", 3)
        assert (int(partition), stored_key, sid) == (partition_of(key, 7), key, "s-1")


async def test_the_events_stream_is_created_compressed(nc: Any) -> None:
    """Issue 41: the stream's blocks are stored with JetStream's S2 compression."""
    subjects = unique_subjects()
    js = nc.jetstream()
    assert await ensure_events_stream(js, subjects)
    info = await js.stream_info(subjects.events_stream)
    assert info.config.compression == StoreCompression.S2


async def test_deploy_moves_an_uncompressed_stream_to_s2(nats_url: str, nc: Any) -> None:
    """An existing stream made before issue 41 is updated in place by ``deploy.streams``."""
    subjects = unique_subjects()
    js = nc.jetstream()
    config = events_stream_config(subjects)
    config.compression = StoreCompression.NONE
    await js.add_stream(config)
    assert not await ensure_replicated_events_stream([nats_url], replicas=1, subjects=subjects)
    info = await js.stream_info(subjects.events_stream)
    assert info.config.compression == StoreCompression.S2
