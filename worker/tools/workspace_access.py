"""Caller identity, workspace authorization, title access, and lineage projection.

The caller comes only from the trusted ``execution.agent`` identity; its cwd comes from the
index. A target is authorized only when its observed cwd equals the caller's byte for byte;
a caller without cwd may inspect only its own session. Every payload is re-checked against
the header returned with that same observation before it is rendered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog
from pydantic_core import from_json

from contracts.errors import ErrorCode
from contracts.partitions import PartitionScope
from worker.signals import ExecutionSignal
from worker.store import (
    Lineage,
    LineageNode,
    SessionHeader,
    SessionQueryService,
    TitleObservation,
)

# Caller is re-exported: its home is definitions (an admitted request memoises one).
from worker.tools.definitions import Admitted, ToolError
from worker.tools.definitions import Caller as Caller
from worker.tools.service_boundary import ServiceBoundary

STEP_START: Final = "step/start"

log = structlog.get_logger("worker.tools.workspace_access")


def no_identity() -> ToolError:
    return ToolError(
        ErrorCode.NO_IDENTITY,
        "This tool needs the calling session's identity, and the execution carries none.",
    )


def not_found(session_id: str) -> ToolError:
    """The one answer for a session that is missing *or* outside the workspace.

    It depends only on what the model supplied, so the two cases cannot be told apart.
    """
    return ToolError(ErrorCode.NOT_FOUND, f"Session {session_id} was not found in this workspace.")


def event_not_found(session_id: str, seq: int) -> ToolError:
    """An authorized session without that event (only ever said about visible sessions)."""
    return ToolError(ErrorCode.NOT_FOUND, f"Session {session_id} has no event at seq {seq}.")


# One JSON string token: outside strings JSON has no quote, so a left-to-right scan only
# ever starts a match at a string's opening quote.
_JSON_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def redact_session_ids(raw_json: str, hidden: frozenset[str], marker: str) -> str:
    """``raw_json`` with every string whose *decoded* value is a hidden session id replaced
    by ``marker``; every other byte stays exact.

    Comparing decoded values, not text, matters: a publisher may spell an id with JSON
    escapes (``"s-\\u0062"``), and that must not print a hidden id either.
    """
    if not hidden:
        return raw_json
    quoted = '"' + marker + '"'

    def hide(token: re.Match[str]) -> str:
        text = token.group()
        if "\\" not in text:
            return quoted if text[1:-1] in hidden else text
        try:
            value = from_json(text)
        except ValueError:
            return text
        return quoted if value in hidden else text

    return _JSON_STRING.sub(hide, raw_json)


def is_authorized(caller: Caller, header: SessionHeader) -> bool:
    if caller.cwd is None:
        return header.session_id == caller.session_id and header.cwd is None
    return header.cwd is not None and header.cwd == caller.cwd


def check_observation(caller: Caller, requested_id: str, header: SessionHeader | None) -> None:
    """Fail closed, exactly as not found, unless this observation is of an authorized
    session with the requested id."""
    if header is None or header.session_id != requested_id or not is_authorized(caller, header):
        raise not_found(requested_id)


async def resolve_caller(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    admitted: Admitted[Any],
    signal: ExecutionSignal,
    *,
    catch_up_timeout_ms: int | None = None,
    partition: PartitionScope | None = None,
) -> Caller:
    """The caller, read and interpreted; its step's wait is skipped when the request's
    prepare step already ran it (``CallerMemo.caught_up``)."""
    session_id = await _identity(
        service, boundary, admitted, signal, catch_up_timeout_ms, partition
    )
    observed = await boundary.call(
        "read_titles", signal, lambda: service.read_titles([session_id], signal=signal)
    )
    return caller_of(session_id, observed, partition)


async def resolve_caller_and_target(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    admitted: Admitted[Any],
    signal: ExecutionSignal,
    requested_id: str | None,
    *,
    catch_up_timeout_ms: int | None = None,
    partition: PartitionScope | None = None,
) -> tuple[Caller, str, SessionHeader]:
    """The caller, the direct target (``requested_id``, else the caller's own session) and
    its authorized header, from ONE observation of both headers: the preflight of a
    direct tool costs no provider call of its own. The payload read after it is still
    re-checked against its own header."""
    session_id = await _identity(
        service, boundary, admitted, signal, catch_up_timeout_ms, partition
    )
    target = requested_id or session_id
    ids = [session_id] if target == session_id else [session_id, target]
    observed = await boundary.call(
        "read_titles", signal, lambda: service.read_titles(ids, signal=signal)
    )
    # An unknown caller fails before the target.
    caller = caller_of(session_id, observed, partition)
    observation = observed.get(target)
    header = observation.header if observation is not None else None
    check_observation(caller, target, header)
    assert header is not None
    return caller, target, header


async def _identity(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    admitted: Admitted[Any],
    signal: ExecutionSignal,
    catch_up_timeout_ms: int | None,
    partition: PartitionScope | None,
) -> str:
    session_id = admitted.session_id
    if session_id is None:
        raise no_identity()
    seq = admitted.prior_seq
    if seq is not None and not admitted.memo.caught_up:
        # Read-your-writes: a session that just started can search itself.
        await wait_for_step(
            service, boundary, session_id, seq, signal, catch_up_timeout_ms, partition
        )
    return session_id


async def catch_up_caller(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    admitted: Admitted[Any],
    signal: ExecutionSignal,
    *,
    catch_up_timeout_ms: int | None = None,
    partition: PartitionScope | None = None,
) -> None:
    """The read-your-writes wait alone, so a runtime can run it before taking a lane;
    nothing to wait for without identity or step (the run itself then answers)."""
    session_id, seq = admitted.session_id, admitted.prior_seq
    if session_id is None or seq is None:
        return
    await wait_for_step(service, boundary, session_id, seq, signal, catch_up_timeout_ms, partition)


def caller_of(
    session_id: str,
    observed: Mapping[str, TitleObservation],
    partition: PartitionScope | None = None,
) -> Caller:
    """The caller as the index knows it. A request addressed to a partition (its subject's)
    that is not the caller's workspace's is answered as if the caller were unknown: a
    worker that holds only that partition cannot know the caller, and every layout of
    workers must answer with the same bytes (docs/protocol.md §10.4)."""
    observation = observed.get(session_id)
    if (
        observation is None
        or observation.header.session_id != session_id
        or (partition is not None and not partition.holds_cwd(observation.header.cwd))
    ):
        # Unknown caller: its workspace is unknown, so nothing can be authorized.
        raise unknown_caller(session_id)
    return Caller(session_id=session_id, cwd=observation.header.cwd)


def unknown_caller(session_id: str) -> ToolError:
    return ToolError(
        ErrorCode.NO_IDENTITY,
        f"The calling session {session_id} is not in the session index yet, so its "
        "workspace is unknown. Try again after its first events are recorded.",
    )


def _index_lags(seq: int) -> ToolError:
    return ToolError(
        ErrorCode.TIMEOUT,
        f"The session index has not yet recorded this session up to seq {seq} "
        "(the event before the current step); retry shortly.",
    )


async def wait_for_step(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    session_id: str,
    seq: int,
    signal: ExecutionSignal,
    timeout_ms: int | None,
    partition: PartitionScope | None,
) -> None:
    """The read-your-writes wait: until the index holds ``session_id`` through ``seq``,
    within ``timeout_ms``; TIMEOUT naming the seq when the bound is reached."""
    # Scoped to the addressed partition: a caller of another one is never "held", so it
    # waits out the bound in this same loop, exactly as a caller the index lacks (which is
    # all a worker holding only that partition could see). Checking the partition after
    # the wait instead answered a known caller at once: the timing told the route.
    waiting = signal.child(timeout=None if timeout_ms is None else timeout_ms / 1000)
    try:
        await boundary.call(
            "wait_for_seq",
            waiting,
            lambda: service.wait_for_seq(session_id, seq, signal=waiting, scope=partition),
        )
    except ToolError as exc:
        if exc.code is ErrorCode.TIMEOUT and not signal.aborted:
            log.info("catch-up bound reached", seq=seq, bound_ms=timeout_ms)
            raise _index_lags(seq) from None
        raise
    finally:
        waiting.close()


async def preflight(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    caller: Caller,
    session_id: str,
    signal: ExecutionSignal,
) -> SessionHeader:
    """Authorize a direct target before reading it (the read's own header is checked too)."""
    observed = await boundary.call(
        "read_titles", signal, lambda: service.read_titles([session_id], signal=signal)
    )
    observation = observed.get(session_id)
    header = observation.header if observation is not None else None
    check_observation(caller, session_id, header)
    assert header is not None
    return header


async def authorized_subset(
    service: SessionQueryService,
    boundary: ServiceBoundary,
    caller: Caller,
    session_ids: Iterable[str],
    signal: ExecutionSignal,
) -> tuple[str, ...]:
    """The given ids (deduplicated, in order) whose headers are in the caller's workspace.

    Missing and foreign ids are dropped alike.
    """
    wanted = tuple(dict.fromkeys(session_ids))
    if not wanted:
        return ()
    observed = await boundary.call(
        "read_titles", signal, lambda: service.read_titles(list(wanted), signal=signal)
    )
    kept: list[str] = []
    for session_id in wanted:
        observation = observed.get(session_id)
        if (
            observation is not None
            and observation.header.session_id == session_id
            and is_authorized(caller, observation.header)
        ):
            kept.append(session_id)
    return tuple(kept)


# --- lineage projection ---


@dataclass(frozen=True, slots=True)
class VisibleLineage:
    """The part of a lineage the caller may see. Hidden sessions leave no id behind."""

    target: SessionHeader
    ancestors: tuple[SessionHeader, ...]  # nearest parent first, all authorized
    # True when the chain goes on beyond the last shown ancestor (missing or foreign alike).
    continues_hidden: bool
    descendants: tuple[LineageNode, ...]  # authorized subtrees only


def project_lineage(caller: Caller, requested_id: str, lineage: Lineage) -> VisibleLineage:
    check_observation(caller, requested_id, lineage.target)
    shown: list[SessionHeader] = []
    continues_hidden = False
    for ancestor in lineage.ancestors:
        if not is_authorized(caller, ancestor):
            continues_hidden = True
            break
        shown.append(ancestor)
    else:
        continues_hidden = lineage.missing_ancestor_id is not None
    return VisibleLineage(
        target=lineage.target,
        ancestors=tuple(shown),
        continues_hidden=continues_hidden,
        descendants=_prune(caller, lineage.descendants),
    )


def _prune(caller: Caller, nodes: tuple[LineageNode, ...]) -> tuple[LineageNode, ...]:
    """The authorized subtrees of ``nodes``: an unauthorized node is dropped with its whole
    subtree. Iterative (an explicit stack, children built before their parent), so a
    lineage of any depth prunes without recursion."""
    kept_roots: list[LineageNode] = []
    # (node, its children still to visit, its kept children); node None: the roots' frame.
    stack: list[tuple[LineageNode | None, Iterator[LineageNode], list[LineageNode]]] = [
        (None, iter(nodes), kept_roots)
    ]
    while stack:
        node, children, kept = stack[-1]
        child = next(children, None)
        if child is not None:
            if is_authorized(caller, child.header):
                stack.append((child, iter(child.children), []))
            continue
        stack.pop()
        if node is not None:
            stack[-1][2].append(LineageNode(header=node.header, children=tuple(kept)))
    return tuple(kept_roots)


def lineage_ids(lineage: VisibleLineage) -> list[str]:
    ids = [lineage.target.session_id, *(a.session_id for a in lineage.ancestors)]
    stack = list(lineage.descendants)
    while stack:
        node = stack.pop()
        ids.append(node.header.session_id)
        stack.extend(node.children)
    return ids
