"""Whether a worker answers the UI: one log line when it goes away, one when it is back.

The NATS client retries a lost server twice a second and reports every failed try; a
person watching the UI's terminal needs the change, not the retries. The pages learn of
it at once (``OperatorClient`` fails fast while the connection is down, and NATS answers
"no responders" at once when no worker listens); a probe every ``PROBE_S`` notices a
change without waiting for someone to load a page. The probe asks the cheapest operator
verb on the UI's own subject prefix (the latest dead letter: one row by its key), since
``$SRV.PING`` would be answered by workers of any prefix.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Final

import structlog
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

log = structlog.get_logger("worker.ui.watch")

PROBE_S: Final = 2.0
PROBE_TIMEOUT_S: Final = 1.0
PROBE_VERB: Final = "deadletters"
PROBE_BODY: Final = b'{"arguments": {"limit": 1}}'


class WorkerWatch:
    """The last known state (None: not known yet), logged on every change only."""

    def __init__(self) -> None:
        self._up: bool | None = None
        self._lock = threading.Lock()  # HTTP threads and the NATS loop both report

    @property
    def down(self) -> bool:
        return self._up is False

    def went_away(self, reason: str) -> None:
        with self._lock:
            changed, self._up = self._up is not False, False
        if changed:
            log.warning("no worker answers the UI", reason=reason)

    def answered(self) -> None:
        with self._lock:
            changed, self._up = self._up is False, True
        if changed:
            log.info("a worker answers the UI again")

    async def on_error(self, exc: Exception) -> None:
        """The connection's error callback: a failed reconnect is the same change again."""
        self.went_away("the NATS connection failed")

    async def on_disconnected(self) -> None:
        self.went_away("the NATS connection was lost")

    async def probe(self, nc: NATS, subject: str, stop: asyncio.Event) -> None:
        """Ask ``subject`` (an operator verb) every ``PROBE_S`` until ``stop``."""
        while not stop.is_set():
            if not nc.is_connected:
                self.went_away("the NATS connection is down")
            else:
                try:
                    await nc.request(subject, PROBE_BODY, timeout=PROBE_TIMEOUT_S)
                    self.answered()
                except (NoRespondersError, NatsTimeout):
                    self.went_away("nothing answers the operator service")
                except Exception:  # a connection closing under the probe: the next one tells
                    pass
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), PROBE_S)
