"""Reading a spilled result: its chunks pulled from the object store, hashed, decrypted
with the locator's key and verified (docs/spill.md). ``SessionQueryClient.fetch_spilled``
is the public way in; this module holds the reading itself."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final

import orjson
from nats.aio.client import Client as NATS
from nats.aio.subscription import Subscription
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api
from nats.js.errors import NotFoundError, ObjectNotFoundError
from nats.js.object_store import VALID_BUCKET_RE, ObjectStore

from contracts.envelope import SpillLocator
from contracts.errors import SessionQueryClientError
from contracts.spill_crypto import DIGEST_PREFIX, TAG_BYTES, SealedOpener, SpillDecryptError

# Bytes of chunks requested per pull; two pulls are kept outstanding, well under nats-py's
# pending-bytes limit of a subscription.
FETCH_WINDOW_BYTES: Final = 16 * 1024 * 1024


class SpillFetchError(SessionQueryClientError):
    """A spilled result could not be read."""


class SpillDigestMismatch(SpillFetchError):
    """The bytes read do not match the digest: the object is corrupt or was replaced."""


async def fetch_spilled(
    nc: NATS,
    locator: SpillLocator,
    *,
    timeout: float = 30.0,  # noqa: ASYNC109 - bounds the pulls, not one await
) -> bytearray:
    """The whole spilled result: read, decrypted with the locator's key, verified.

    The object is AES-256-GCM ciphertext followed by its tag (docs/spill.md); a wrong
    key or a changed object fails authentication, the chunks must hash to the object
    store's recorded digest, and the plaintext's SHA-256 must equal the locator's.
    nats-py's ``ObjectStore.get`` grows its result by concatenation and stalls on flow
    control; this pulls the chunks through a temporary consumer of our own, pipelined,
    and as each arrives hashes it on one thread and decrypts it on another straight
    into a buffer allocated once at the plaintext's size, which it returns (no copy).
    """
    if VALID_BUCKET_RE.match(locator.bucket) is None:
        raise SpillFetchError(f"spilled result bucket {locator.bucket!r} is not a bucket name")
    # The store bound by name: ``js.object_store`` would ask for the stream's info first,
    # a round trip (1-6 ms measured) that get_info's own answer makes needless.
    store = ObjectStore(name=locator.bucket, stream=f"OBJ_{locator.bucket}", js=nc.jetstream())
    try:
        info = await store.get_info(locator.name)
    except (ObjectNotFoundError, NotFoundError):
        raise SpillFetchError(
            f"spilled result {locator.bucket}/{locator.name} not found (it may have expired)"
        ) from None
    stored_size = locator.size + TAG_BYTES
    if info.size != stored_size:
        raise SpillDigestMismatch(
            f"spilled result {locator.name} does not match its locator "
            f"(size {info.size} vs {stored_size})"
        )
    if not info.nuid or not info.digest or not info.chunks:
        raise SpillFetchError(f"spilled result {locator.name} has no chunks recorded")
    recorded = _decode_digest(info.digest)
    expected = _decode_digest(locator.digest)
    try:
        opener = SealedOpener(locator.encryption, locator.size)
    except SpillDecryptError as exc:
        raise SpillDigestMismatch(f"spilled result {locator.name}: {exc}") from None
    digest = await _read_chunks(
        nc,
        stream=f"OBJ_{locator.bucket}",
        subject=f"$O.{locator.bucket}.C.{info.nuid}",
        size=stored_size,
        chunks=info.chunks,
        timeout=timeout,
        sink=opener.feed,
    )
    if digest != recorded:
        raise SpillDigestMismatch(
            f"spilled result {locator.name}: the chunks read do not match the object's "
            "recorded digest"
        )
    try:
        plaintext, plaintext_sha256 = opener.finish()
    except SpillDecryptError as exc:
        raise SpillDigestMismatch(f"spilled result {locator.name}: {exc}") from None
    if plaintext_sha256 != expected:
        raise SpillDigestMismatch(
            f"spilled result {locator.name}: SHA-256 of the decrypted text does not match "
            f"{locator.digest}"
        )
    return plaintext


def _decode_digest(digest: str) -> bytes:
    if not digest.upper().startswith(DIGEST_PREFIX):
        raise SpillFetchError(f"unsupported digest {digest!r}; expected {DIGEST_PREFIX}...")
    encoded = digest[len(DIGEST_PREFIX) :]
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except ValueError:
        raise SpillFetchError(f"malformed digest {digest!r}") from None


async def _read_chunks(
    nc: NATS,
    *,
    stream: str,
    subject: str,
    size: int,
    chunks: int,
    timeout: float,  # noqa: ASYNC109
    sink: Callable[[bytes], None],
) -> bytes:
    """Pull every chunk of one object in order; each goes to ``sink`` (in order, on a
    thread of its own) while the SHA-256 of them all is computed on another. Returns that
    digest once the object is complete and both threads have caught up."""
    js = nc.jetstream()
    consumer = await js.add_consumer(
        stream,
        config=api.ConsumerConfig(
            filter_subject=subject,
            deliver_policy=api.DeliverPolicy.ALL,
            ack_policy=api.AckPolicy.NONE,
            # A consumer left by a crashed client disappears by itself.
            inactive_threshold=max(5.0, timeout),
            mem_storage=True,
            num_replicas=1,
        ),
    )
    name = consumer.name
    assert name is not None
    reader = _ChunkReader(nc, size=size, chunks=chunks, timeout=timeout, sink=sink)
    # The pull request's subject (nc.jetstream() uses the default API prefix).
    next_subject = f"{api.DEFAULT_PREFIX}.CONSUMER.MSG.NEXT.{stream}.{name}"
    try:
        return await reader.read(next_subject)
    finally:
        # Best effort: inactive_threshold removes a consumer left behind anyway.
        with contextlib.suppress(Exception):
            await js.delete_consumer(stream, name)


class _ChunkReader:
    """Pulls an object's chunks, keeping up to two windows of ``FETCH_WINDOW_BYTES``
    requested so the server never waits for the next pull; each chunk is handed to the
    sink and the hash, each on its own thread (hashlib and the cipher release the GIL), so
    receiving, hashing and decrypting overlap."""

    def __init__(
        self,
        nc: NATS,
        *,
        size: int,
        chunks: int,
        timeout: float,
        sink: Callable[[bytes], None],
    ) -> None:
        self._nc = nc
        self._size = size
        self._chunks = chunks
        self._timeout = timeout
        self._deadline = time.monotonic() + timeout
        self._sink = sink
        self._hasher = hashlib.sha256()
        self._work: list[asyncio.Future[None]] = []
        self._offset = 0
        self._received = 0
        self._requested = 0
        chunk_size = max(1, -(-size // self._chunks))
        self._window = max(1, FETCH_WINDOW_BYTES // chunk_size)

    async def read(self, next_subject: str) -> bytes:
        inbox = self._nc.new_inbox()
        sub = await self._nc.subscribe(inbox)
        hashing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spill-sha256")
        opening = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spill-open")
        try:
            while self._offset < self._size:
                await self._request_more(next_subject, inbox)
                await self._take(sub, hashing, opening)
            # Any failure of a step surfaces here (both threads keep their order).
            await asyncio.gather(*self._work)
        finally:
            for pool in (hashing, opening):
                pool.shutdown(wait=False, cancel_futures=True)
            await sub.unsubscribe()
        return self._hasher.digest()

    async def _request_more(self, next_subject: str, inbox: str) -> None:
        """Pull requests until two windows are outstanding (or every chunk is asked for)."""
        while self._requested < self._chunks and self._requested - self._received < self._window:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise self._too_slow()
            want = min(self._window, self._chunks - self._requested)
            request = {"batch": want, "expires": int(remaining * 1e9)}
            await self._nc.publish(next_subject, orjson.dumps(request), reply=inbox)
            self._requested += want

    async def _take(
        self, sub: Subscription, hashing: ThreadPoolExecutor, opening: ThreadPoolExecutor
    ) -> None:
        """The next chunk."""
        loop = asyncio.get_running_loop()
        try:
            msg = await sub.next_msg(timeout=max(0.01, self._deadline - time.monotonic()))
        except NatsTimeoutError:
            raise self._too_slow() from None
        status = msg.headers.get(api.Header.STATUS) if msg.headers else None
        if status == "408":
            raise self._too_slow()
        if status == "404":  # nothing left to deliver while chunks are missing
            raise SpillDigestMismatch("the spilled result is shorter than recorded")
        if status:
            description = msg.headers.get(api.Header.DESCRIPTION, "") if msg.headers else ""
            raise SpillFetchError(f"reading the spilled result failed: {status} {description}")
        data = msg.data
        end = self._offset + len(data)
        if end > self._size:
            raise SpillDigestMismatch("the spilled result is larger than recorded")
        self._work.append(loop.run_in_executor(hashing, self._hasher.update, data))
        self._work.append(loop.run_in_executor(opening, self._sink, data))
        self._offset = end
        self._received += 1
        if self._offset < self._size and (
            self._received >= self._chunks or msg.metadata.num_pending == 0
        ):
            # Every recorded chunk is in, or the stream holds no more: bytes are missing.
            raise SpillDigestMismatch("the spilled result is shorter than recorded")

    def _too_slow(self) -> SpillFetchError:
        return SpillFetchError(f"reading the spilled result took over {self._timeout:.0f} s")
