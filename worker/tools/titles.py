"""Titles of sessions already authorized: read in bounded chunks (or taken from the
observation the payload was read with), projected per id.

A title is shown only for a session in the caller's workspace; a failed or malformed
read is isolated to its id (the rest of the result stands), and a session expected to be
visible that no longer is fails the whole result closed (``TitleMismatch``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from contracts.errors import ErrorCode
from contracts.harness import first_prompt
from worker.signals import ExecutionSignal
from worker.store import SessionHeader, SessionQueryService, TitleObservation
from worker.tools.definitions import ToolError
from worker.tools.service_boundary import ServiceBoundary, raise_if_aborted
from worker.tools.workspace_access import Caller, is_authorized

CHANGED_RESULT_MESSAGE: Final = (
    "A session in the result is no longer available in this workspace; retry the search."
)


@dataclass(frozen=True, slots=True)
class TitleInfo:
    """The small value a title worker keeps per id; the full observation is released.

    ``visible``: the observation's header is in the caller's workspace (None: unknown,
    because the title could not be read). ``derived``: the session has no title, and
    ``title`` is its first prompt (``derived_title``), which the rendering marks.
    """

    title: str | None
    visible: bool | None
    derived: bool = False

    @property
    def available(self) -> bool:
        return self.visible is not None


UNAVAILABLE: Final = TitleInfo(title=None, visible=None)


class TitleMismatch(ToolError):
    """A title observation of a session that should be visible is not: fail closed.

    As it stands, the model reads that a search result changed; a direct tool answers
    not found for its target instead (``ToolContext.titles``)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(ErrorCode.NOT_FOUND, CHANGED_RESULT_MESSAGE)
        self.session_id = session_id


async def fetch_titles(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    caller: Caller,
    session_ids: Iterable[str],
    signal: ExecutionSignal,
    *,
    concurrency: int,
    expect_visible: frozenset[str] = frozenset(),
    held: Mapping[str, TitleObservation] | None = None,
) -> dict[str, TitleInfo]:
    """Titles for every unique id, each read once, in at most ``concurrency`` reads at once.

    The unique ids are split into at most ``concurrency`` chunks, each read as one
    observation (a provider call per id cost a thread hop each). A chunk whose read fails
    falls back to one read per id, so a failure stays isolated to the id that causes it.
    Observations are projected to ``TitleInfo`` values as they arrive. A failed or missing
    title becomes ``UNAVAILABLE``; an id in ``expect_visible`` whose observation is outside
    the workspace raises ``TitleMismatch``. Once the signal fires, a read fails or a title
    fails closed, no further read starts, and every started read settles before this
    returns or raises.

    ``held``: observations by id that the request's payload read made with its headers
    (``EventWindow.title``, ``EventRelations.title``, ``Lineage.titles``): those ids are
    projected from them as from a read, not read again.
    """
    unique = list(dict.fromkeys(session_ids))
    reads = _TitleReads(service, boundary, caller, signal, expect_visible)
    if held and not signal.aborted:
        unread = []
        for session_id in unique:
            if session_id in held:
                reads.keep(session_id, _project(boundary, caller, session_id, held[session_id]))
            else:
                unread.append(session_id)
        unique = unread
    chunks = _chunks(unique, max(1, min(concurrency, len(unique)))) if unique else []
    failures = await _settled([reads.read(chunk) for chunk in chunks])
    raise_if_aborted(signal)
    if failures:
        raise failures[0]
    if reads.mismatch is not None:
        raise TitleMismatch(reads.mismatch)
    return reads.results


async def _settled(reads: list[Coroutine[Any, Any, None]]) -> list[BaseException]:
    """Run the reads together and return their failures once every one has settled, even
    when this is cancelled. A single read runs without a task (a direct tool's titles)."""
    if not reads:
        return []
    if len(reads) == 1:
        try:
            await reads[0]
        except Exception as exc:
            return [exc]
        return []
    tasks = [asyncio.ensure_future(read) for read in reads]
    try:
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    except asyncio.CancelledError:
        # Our own task was cancelled (and with it the reads): they still settle first.
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return [outcome for outcome in outcomes if isinstance(outcome, BaseException)]


@dataclass(slots=True)
class _TitleReads:
    """The reads of one ``fetch_titles`` call, and what they found so far."""

    service: SessionQueryService
    boundary: ServiceBoundary
    caller: Caller
    signal: ExecutionSignal
    expect_visible: frozenset[str]
    results: dict[str, TitleInfo] = field(default_factory=dict)
    mismatch: str | None = None  # the first expected-visible id found outside the workspace
    failed: bool = False

    @property
    def stopped(self) -> bool:
        return self.failed or self.mismatch is not None or self.signal.aborted

    async def read(self, chunk: list[str]) -> None:
        try:
            await self._read(chunk)
        except BaseException:
            self.failed = True
            raise

    async def _read(self, chunk: list[str]) -> None:
        if self.stopped:
            return
        args = (self.service, self.boundary, self.caller)
        infos = await _read_chunk(*args, chunk, self.signal)
        if infos is not None:
            for session_id in chunk:
                self.keep(session_id, infos[session_id])
            return
        for session_id in chunk:  # the chunk failed: isolate the failure per id
            if self.stopped:
                return
            self.keep(session_id, await _read_title(*args, session_id, self.signal))

    def keep(self, session_id: str, info: TitleInfo) -> None:
        if session_id in self.expect_visible and info.visible is False:
            self.mismatch = self.mismatch or session_id
        self.results[session_id] = info


def _chunks(ids: list[str], count: int) -> list[list[str]]:
    """``ids`` in ``count`` contiguous chunks of near-equal size (none empty)."""
    size, extra = divmod(len(ids), count)
    chunks: list[list[str]] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        if end > start:
            chunks.append(ids[start:end])
        start = end
    return chunks


async def _read_chunk(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    caller: Caller,
    chunk: list[str],
    signal: ExecutionSignal,
) -> dict[str, TitleInfo] | None:
    """One observation of a chunk, projected per id; None when the read itself failed."""
    if len(chunk) == 1:
        return {chunk[0]: await _read_title(service, boundary, caller, chunk[0], signal)}
    try:
        observed = await boundary.call(
            "read_titles", signal, lambda: service.read_titles(list(chunk), signal=signal)
        )
        return {sid: _project(boundary, caller, sid, observed.get(sid)) for sid in chunk}
    except ToolError as exc:
        if exc.code in (ErrorCode.CANCELLED, ErrorCode.TIMEOUT):
            raise
        return None  # already logged by the boundary; retried per id
    except Exception as exc:
        # A malformed observation (not a mapping): retried per id, where it is contained.
        boundary.log_failure("read_titles", exc)
        return None


def _project(
    boundary: ServiceBoundary,
    caller: Caller,
    session_id: str,
    observation: TitleObservation | None,
) -> TitleInfo:
    if observation is None:
        return UNAVAILABLE
    # A malformed observation stays isolated to its id, like a failed read: the rest of the
    # result stands. The header is checked before the title, so a moved session whose title
    # is also malformed still fails closed.
    header = getattr(observation, "header", None)
    if not isinstance(observation, TitleObservation) or not isinstance(header, SessionHeader):
        boundary.log_failure("read_titles", TypeError("malformed title observation"))
        return UNAVAILABLE
    if header.session_id != session_id:
        return UNAVAILABLE
    visible = is_authorized(caller, header)
    title = observation.title
    if title is not None and not isinstance(title, str):
        boundary.log_failure("read_titles", TypeError("malformed title"))
        return UNAVAILABLE if visible else TitleInfo(title=None, visible=False)
    return title_info(observation, visible=visible)


def title_info(observation: TitleObservation, *, visible: bool) -> TitleInfo:
    """What the rendering shows of an observation already checked: its title, else (in
    the caller's workspace) its first prompt as a derived title."""
    title = observation.title
    if visible and (title is None or not title.strip()):
        derived = derived_title(observation.prompts)
        if derived is not None:
            return TitleInfo(title=derived, visible=visible, derived=True)
    return TitleInfo(title=title, visible=visible)


def derived_title(prompts: object) -> str | None:
    """The title fallback of a session without one, as the agents' resume pickers show it:
    its first prompt the user wrote (harness text skipped: ``contracts.harness``). The
    rendering cuts it to ``formatting.DERIVED_TITLE_CHARS``. A malformed value is no
    prompt: the session stays untitled."""
    if not isinstance(prompts, tuple) or not all(isinstance(p, str) for p in prompts):
        return None
    return first_prompt(prompts)


async def _read_title(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    caller: Caller,
    session_id: str,
    signal: ExecutionSignal,
) -> TitleInfo:
    try:
        observed = await boundary.call(
            "read_titles", signal, lambda: service.read_titles([session_id], signal=signal)
        )
        return _project(boundary, caller, session_id, observed.get(session_id))
    except ToolError as exc:
        if exc.code in (ErrorCode.CANCELLED, ErrorCode.TIMEOUT):
            raise
        # Already logged by the boundary; the rest of the result stands.
        return UNAVAILABLE
