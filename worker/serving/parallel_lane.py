"""The parallel lane: traces and reads run side by side in a bounded pool.

A micro endpoint (one nats-py subscription) calls its handler serially, so the handler only
admits the request into the pool's mailbox and returns; ``pool_size`` runner actors
execute. The mailbox holds running plus waiting requests; when it is full the request is
answered OVERLOADED at once rather than left to time out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from nats.aio.msg import Msg

from worker.actors import Mailbox, Supervisor
from worker.serving import replies
from worker.serving.cancellation import CancellationRegistry
from worker.serving.deadlines import effective_deadline_ms, signal_until
from worker.serving.execution import Executor, admit
from worker.signals import ExecutionSignal
from worker.tools import Admitted, ToolDefinition

log = structlog.get_logger("worker.serving.parallel_lane")


@dataclass(frozen=True, slots=True)
class AdmittedCall:
    tool: ToolDefinition
    admitted: Admitted[Any]
    signal: ExecutionSignal
    reply_to: str
    detach: Callable[[], None]


class ParallelLane:
    def __init__(
        self,
        *,
        executor: Executor,
        registry: CancellationRegistry,
        supervisor: Supervisor,
        pool_size: int,
        queue_size: int,
        default_timeout_ms: int | None,
    ) -> None:
        if pool_size < 1 or queue_size < 0:
            raise ValueError("parallel_pool_size must be >= 1 and parallel_queue_size >= 0")
        self._executor = executor
        self._registry = registry
        self._supervisor = supervisor
        self.pool_size = pool_size
        self._default_timeout_ms = default_timeout_ms
        self._mailbox: Mailbox[AdmittedCall] = Mailbox(pool_size + queue_size)
        self._running = 0
        self.overloaded = 0  # requests answered OVERLOADED, for tests and stats

    def start(self) -> None:
        for index in range(self.pool_size):
            self._supervisor.start(f"parallel-{index}", self._runner)

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return self._mailbox.waiting

    @property
    def in_flight(self) -> int:
        return self._mailbox.held

    async def handle(self, tool: ToolDefinition, msg: Msg) -> None:
        """The endpoint handler: admit or answer at once. Must stay quick."""
        admitted = await admit(self._executor, self._registry, tool, msg)
        if admitted is None or not msg.reply:
            return
        rid = admitted.request_id
        # The deadline starts now: time spent waiting for a slot counts against it.
        deadline_ms = effective_deadline_ms(
            admitted.execution, default_timeout_ms=self._default_timeout_ms
        )
        signal = signal_until(deadline_ms)
        detach = self._registry.attach(admitted.owner, rid, signal)
        job = AdmittedCall(
            tool=tool, admitted=admitted, signal=signal, reply_to=msg.reply, detach=detach
        )
        if not self._mailbox.offer(job):
            detach()
            signal.close()
            self.overloaded += 1
            log.warning("parallel pool full", request_id=rid, tool=tool.name)
            await self._executor.answer_tool(tool, msg.reply, replies.overloaded(rid), rid)

    async def _runner(self) -> None:
        while True:
            job = await self._mailbox.take()
            self._running += 1
            try:
                reply = await self._executor.execute(job.tool, job.admitted, job.signal)
                await self._executor.answer_tool(
                    job.tool, job.reply_to, reply, job.admitted.request_id
                )
            finally:
                self._running -= 1
                job.detach()
                self._mailbox.done()

    async def drain(self) -> None:
        """Wait until every admitted request is answered."""
        await self._mailbox.idle()

    async def stop(self) -> None:
        for index in range(self.pool_size):
            await self._supervisor.stop(f"parallel-{index}")
