"""A small async requester client for the session query worker.

Depends only on nats-py and ``contracts``, so an agent runtime can import it without the
worker. It speaks exactly the wire contract in docs/protocol.md: one request subject per tool,
``sessionquery.cancel`` broadcasts, ``sessionquery.manifest``, and the spill object store
(whose objects it decrypts with the key in each reply's locator).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import enum
import hashlib
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api
from nats.js.errors import NotFoundError, ObjectNotFoundError
from nats.js.object_store import VALID_BUCKET_RE, ObjectStore
from pydantic import ValidationError

from contracts.envelope import (
    AgentIdentity,
    CancelRequest,
    Execution,
    SpillLocator,
    ToolReply,
    ToolRequest,
)
from contracts.errors import SessionQueryClientError as SessionQueryClientError
from contracts.partitions import MAX_PARTITION_COUNT, partition_of_cwd
from contracts.spill_crypto import TAG_BYTES, SealedOpener, SpillDecryptError
from contracts.subjects import TOOL_NAMES, Subjects

# Search runs under a 30 s deadline by default; the reply may take a little longer.
DEFAULT_TIMEOUT_S: Final = 35.0
# How long "no responders" is retried before the caller hears NoWorkerError.
NO_RESPONDERS_RETRY_S: Final = 1.0
# Margin past an explicit deadline: the worker answers TIMEOUT itself once it passes.
DEADLINE_MARGIN_S: Final = 2.0
# Bytes of chunks requested per pull; two pulls are kept outstanding, well under nats-py's
# pending-bytes limit of a subscription.
FETCH_WINDOW_BYTES: Final = 16 * 1024 * 1024
DIGEST_PREFIX: Final = "SHA-256="
# What a routed call's error says when the partition count could not be learned.
ROUTING_NEEDS_MANIFEST: Final = (
    "routing by cwd needs the stream's partition count from the manifest"
)


class NoWorkerError(SessionQueryClientError):
    """Nobody subscribes to the subject: no worker is running on this NATS."""


class ReplyTimeoutError(SessionQueryClientError):
    """No reply within the timeout."""


class SpillFetchError(SessionQueryClientError):
    """A spilled result could not be read."""


class SpillDigestMismatch(SpillFetchError):
    """The bytes read do not match the digest: the object is corrupt or was replaced."""


def _partition_count_in(manifest: dict[str, Any]) -> int | None:
    """The manifest's ``partition_count`` when it is a sane one (protocol 2), else None."""
    count = manifest.get("partition_count")
    if isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= MAX_PARTITION_COUNT:
        return count
    return None


def new_request_id() -> str:
    return "r-" + uuid.uuid4().hex


class Unrouted(enum.Enum):
    """No cwd given: a request for the unpartitioned subject."""

    UNROUTED = "unrouted"


UNROUTED: Final = Unrouted.UNROUTED


class SessionQueryClient:
    """Call the five tools, cancel, read the manifest, and fetch spilled results."""

    def __init__(self, nc: NATS, subjects: Subjects | None = None) -> None:
        self._nc = nc
        self.subjects = subjects or Subjects()
        self._partition_count: int | None = None
        self._partition_count_read = asyncio.Lock()

    async def partition_count(self) -> int:
        """The stream's partition count, from the manifest: read once (concurrent first
        callers share the read), then kept, as it is fixed when the stream is created. Any
        ``manifest()`` read that carries it sets it too. A manifest that cannot be read is
        not kept: the next routed call asks again."""
        async with self._partition_count_read:
            if self._partition_count is None:
                try:
                    manifest = await self.manifest()
                except SessionQueryClientError as exc:
                    # The same class (NoWorkerError stays NoWorkerError), saying why.
                    raise type(exc)(f"{ROUTING_NEEDS_MANIFEST}: {exc}") from exc
                if _partition_count_in(manifest) is None:
                    raise SessionQueryClientError(
                        f"{ROUTING_NEEDS_MANIFEST}: the manifest has no partition_count"
                        " (the worker predates protocol 2)"
                    )
            count = self._partition_count
            assert count is not None  # manifest() kept it
            return count

    async def tool_subject(self, tool: str, cwd: str | Unrouted | None = UNROUTED) -> str:
        """Where a request of ``tool`` goes: the partition of the caller's workspace when its
        ``cwd`` is given (``docs/protocol.md`` §10.4; None: a session with no cwd), else the
        unpartitioned subject."""
        if isinstance(cwd, Unrouted):
            return self.subjects.tool(tool)
        return self.subjects.tool(tool, partition_of_cwd(cwd, await self.partition_count()))

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        execution: Execution | dict[str, Any],
        *,
        request_id: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the NATS request's own timeout
        cwd: str | Unrouted | None = UNROUTED,
    ) -> ToolReply:
        """Send one tool request and return its reply (``status`` ok or error).

        ``cwd``: the calling session's working directory (None: it has none), which routes
        the request to the workers holding its workspace's partition (needed when the
        workers are sharded); without it the request goes to the unpartitioned subject,
        which only workers holding every partition answer.

        Cancelling the awaiting task broadcasts a cancel for this request, so the worker
        stops the work rather than finishing it for nobody.
        """
        if tool not in TOOL_NAMES:
            raise ValueError(f"unknown tool {tool!r}; expected one of: {', '.join(TOOL_NAMES)}")
        if not isinstance(execution, Execution):
            execution = Execution.model_validate(execution)
        request = ToolRequest(
            request_id=request_id or new_request_id(),
            execution=execution,
            arguments=arguments,
        )
        body = orjson.dumps(request.model_dump(mode="json", exclude_none=True))
        wait = timeout if timeout is not None else _timeout_for(execution)
        subject = await self.tool_subject(tool, cwd)
        try:
            msg = await self._request(subject, body, wait)
        except NoRespondersError:
            raise NoWorkerError(f"no session query worker answers {subject}") from None
        except NatsTimeoutError:
            raise ReplyTimeoutError(
                f"no reply to {request.request_id} within {wait:.1f} s"
            ) from None
        except asyncio.CancelledError:
            if execution.agent is not None:
                await self._cancel_quietly(
                    request.request_id, "requester cancelled", execution.agent
                )
            raise
        return _parse_reply(msg)

    async def _request(self, subject: str, body: bytes, wait: float) -> Msg:
        """A request that retries "no responders" briefly, within ``wait``.

        A worker may be restarting, and a connection's first request can be answered "no
        responders" spuriously (see worker.runtime.connection.open_connection). Retrying
        is safe: nothing was delivered.
        """
        loop = asyncio.get_running_loop()
        give_up = loop.time() + min(wait, NO_RESPONDERS_RETRY_S)
        delay = 0.02
        while True:
            try:
                return await self._nc.request(subject, body, timeout=wait)
            except NoRespondersError:
                if loop.time() + delay >= give_up:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.2)

    async def cancel(
        self, request_id: str, reason: str, *, agent: AgentIdentity | dict[str, Any]
    ) -> None:
        """Broadcast a cancel: whichever worker holds the request stops it, and the model
        sees ``reason`` as quoted data. ``agent`` must be the request's own
        ``execution.agent`` (session_id and agent_id): any other cancel is ignored."""
        if not isinstance(agent, AgentIdentity):
            agent = AgentIdentity.model_validate(agent)
        message = CancelRequest(request_id=request_id, agent=agent, reason=reason)
        payload = orjson.dumps(message.model_dump(mode="json", exclude_none=True))
        await self._nc.publish(self.subjects.cancel, payload)
        await self._nc.flush()

    async def manifest(self, *, timeout: float = 5.0) -> dict[str, Any]:  # noqa: ASYNC109
        """Tool definitions (names, descriptions, schemas, execution modes) and the prompt."""
        try:
            msg = await self._request(self.subjects.manifest, b"", timeout)
        except NoRespondersError:
            raise NoWorkerError(
                f"no session query worker answers {self.subjects.manifest}"
            ) from None
        except NatsTimeoutError:
            raise ReplyTimeoutError(f"no manifest within {timeout:.1f} s") from None
        try:
            value = orjson.loads(msg.data)
        except orjson.JSONDecodeError:
            raise SessionQueryClientError("the manifest reply is not JSON") from None
        if not isinstance(value, dict):
            raise SessionQueryClientError("the manifest reply is not a JSON object")
        count = _partition_count_in(value)
        if count is not None:
            self._partition_count = count
        return value

    async def fetch_spilled(
        self,
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
        store = ObjectStore(
            name=locator.bucket, stream=f"OBJ_{locator.bucket}", js=self._nc.jetstream()
        )
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
            self._nc,
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

    async def _cancel_quietly(self, request_id: str, reason: str, agent: AgentIdentity) -> None:
        # The connection may already be gone; the worker's deadline still bounds the work.
        with contextlib.suppress(Exception):
            await asyncio.shield(self.cancel(request_id, reason, agent=agent))


def _timeout_for(execution: Execution) -> float:
    if execution.deadline_ms is None:
        return DEFAULT_TIMEOUT_S
    remaining = execution.deadline_ms / 1000 - time.time()
    return max(0.1, remaining) + DEADLINE_MARGIN_S


def _parse_reply(msg: Msg) -> ToolReply:
    try:
        return ToolReply.model_validate_json(msg.data)
    except ValidationError:
        headers = msg.headers or {}
        detail = headers.get("Nats-Service-Error") or "not a tool reply"
        raise SessionQueryClientError(f"malformed reply: {detail}") from None


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
