"""Spill: the generic post-execute step that keeps replies within NATS's max_payload.

A result whose text is over the threshold (or whose encoded reply would not fit) is stored
whole in a JetStream object store under a random name, sealed with AES-256-GCM under a
fresh key that only the reply's locator carries (contracts.spill_crypto): whoever can list
or read the bucket learns sizes, not contents. The reply carries a preview cut at a line
boundary, the locator (with the key and ``expires_at``) and a hint. The tools know nothing
of this.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext, api
from nats.js.errors import BadRequestError, BucketNotFoundError
from nats.js.object_store import ObjectStore

from contracts.envelope import SpillEncryption, SpillLocator
from contracts.spill_crypto import TAG_BYTES, plaintext_digest, seal
from worker.runtime import replies
from worker.runtime.replies import EncodedReply

log = structlog.get_logger("worker.runtime.spill")

# Room for the reply envelope around the inline text, and for headers.
PAYLOAD_HEADROOM_BYTES: Final = 8 * 1024
CHUNK_BYTES: Final = 1024 * 1024  # 1 MiB chunks put ~1.7× faster than 128 KiB (DESIGN.md)
NAME_ENTROPY_BYTES: Final = 24  # 192 random bits: unguessable
# Sealing and hashing a result this large runs on a thread, off the event loop.
SEAL_OFF_LOOP_BYTES: Final = 256 * 1024


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
        f"{name!r} for a limited time, encrypted; fetch it with the spill locator, which "
        f"holds its key (e.g. the client's fetch_spilled decrypts it and checks its SHA-256 "
        f"digest)."
    )


class Spiller:
    """Binds the spill bucket once; turns a tool's text into the reply to send."""

    def __init__(
        self,
        policy: SpillPolicy,
        store: ObjectStore,
        *,
        chunk_bytes: int,
        max_payload: int,
        ttl_s: float | None = None,
    ) -> None:
        self.policy = policy
        self._store = store
        self._chunk_bytes = chunk_bytes
        self._reply_limit = max_payload - PAYLOAD_HEADROOM_BYTES
        # The bucket's own TTL (another worker may have created it); expires_at uses it.
        self._ttl_s = ttl_s if ttl_s else float(policy.ttl_s)

    @classmethod
    async def bind(cls, nc: NATS, js: JetStreamContext, policy: SpillPolicy) -> Spiller:
        policy.validate(nc.max_payload)
        store = await _bind_bucket(js, policy)
        ttl_s: float | None = None
        try:
            ttl_s = (await js.stream_info(f"OBJ_{policy.bucket}")).config.max_age
        except Exception:
            log.warning("could not read the spill bucket's TTL; using the configured one")
        # A chunk is one message: it must fit max_payload.
        chunk = min(CHUNK_BYTES, nc.max_payload)
        return cls(policy, store, chunk_bytes=chunk, max_payload=nc.max_payload, ttl_s=ttl_s)

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
        if len(data) >= SEAL_OFF_LOOP_BYTES:
            sealed, encryption, digest = await asyncio.to_thread(_seal, data)
        else:
            sealed, encryption, digest = _seal(data)
        stored_at = time.time()
        info = await self._store.put(name, sealed, meta=meta)
        log.info("result spilled", size=info.size, chunks=info.chunks)
        if int(info.size or 0) != len(data) + TAG_BYTES:
            raise RuntimeError("the object store recorded a different size than was put")
        return SpillLocator(
            bucket=self.policy.bucket,
            name=name,
            size=len(data),
            digest=digest,
            hint="",
            encryption=encryption,
            expires_at=_rfc3339(stored_at + self._ttl_s),
        )


def _seal(data: bytes) -> tuple[bytes, SpillEncryption, str]:
    sealed, encryption = seal(data)
    return sealed, encryption, plaintext_digest(data)


def _rfc3339(epoch_s: float) -> str:
    instant = datetime.fromtimestamp(epoch_s, tz=UTC)
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"


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
