"""The one maximum event size, shared by publishers, ``import`` and the worker.

A session event is one NATS message, and the server counts its headers against
``max_payload`` too. A publisher that sets ``Nats-Msg-Id`` (as ``import`` does and
docs/protocol.md §7.3 recommends) needs room for that header, so the largest event is the
server's ``max_payload`` minus ``HEADER_ALLOWANCE_BYTES``: 1,047,552 bytes on a default
server (``max_payload`` 1 MiB). A larger line is refused by ``import`` and dead-lettered by
the worker, both naming the two numbers.
"""

from __future__ import annotations

from typing import Final

# nats-server's default max_payload.
DEFAULT_MAX_PAYLOAD: Final = 1024 * 1024
# Room for the headers a publisher sends (``Nats-Msg-Id: <session_id>:<seq>`` takes at most
# ~170 bytes with the NATS/1.0 status line; the rest is for a few more).
HEADER_ALLOWANCE_BYTES: Final = 1024
MAX_EVENT_BYTES: Final = DEFAULT_MAX_PAYLOAD - HEADER_ALLOWANCE_BYTES  # 1,047,552


def event_size_limit(max_payload: int, configured: int = MAX_EVENT_BYTES) -> int:
    """The largest event a publisher with headers can send on a server with this
    ``max_payload``, and that the worker accepts (never above ``configured``)."""
    return min(configured, max_payload - HEADER_ALLOWANCE_BYTES)
