"""Create the events stream with N replicas before anything else creates it as R1.

``sessionquery import`` and the workers create the SESSIONS stream when it is missing, with
one replica; on a cluster it must be R3, so deployments run this first (compose's
``streams`` service, ``deploy.local_cluster``). The search queue and the spill bucket are
created by the workers themselves with ``SESSIONQUERY_STREAM_REPLICAS``.

    python -m deploy.streams --nats-url nats://nats1:4222 --replicas 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any, Final

from contracts.subjects import Subjects

# How long a create may keep failing for a JetStream not ready before deploy gives up.
CREATE_WITHIN_S: Final = 120.0


async def ensure_replicated_events_stream(
    urls: Sequence[str], *, replicas: int, subjects: Subjects | None = None, **connect: Any
) -> bool:
    """Create the events stream with ``replicas`` when missing; True when it was created.

    The one configuration (``contracts.streams``, which leaves an existing stream as it
    is), with the replicas. An existing stream stored without the configuration's
    compression is updated to it (nats-server 2.10+ takes the change on a live stream; the
    blocks already written stay as they are until the server rewrites them).
    """
    import nats
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeoutError
    from nats.js.errors import ServiceUnavailableError

    from contracts.streams import STREAM_COMPRESSION, ensure_events_stream
    from worker.retry import STARTUP, retry

    subjects = subjects or Subjects()
    nc = await nats.connect(list(urls), connect_timeout=5, max_reconnect_attempts=10, **connect)
    try:
        js = nc.jetstream(timeout=20)

        def not_ready(exc: Exception, failures: int, wait: float) -> None:
            print(
                f"deploy.streams: JetStream not ready ({type(exc).__name__}); retrying",
                file=sys.stderr,
            )

        # A fresh cluster's first R3 create can outlast the API timeout while its peers
        # elect the stream's leader (seen in CI): the create is idempotent, the next
        # attempt finds the stream.
        if await retry(
            STARTUP.within(CREATE_WITHIN_S),
            lambda: ensure_events_stream(js, subjects, replicas=replicas),
            on=lambda exc: isinstance(
                exc, (NatsTimeoutError, NoRespondersError, ServiceUnavailableError)
            ),
            log=not_ready,
        ):
            return True
        info = await js.stream_info(subjects.events_stream)
        if info.config.compression != STREAM_COMPRESSION:
            info.config.compression = STREAM_COMPRESSION
            await js.update_stream(info.config)
            print(
                f"deploy.streams: {subjects.events_stream} now stores new blocks with"
                f" {STREAM_COMPRESSION.value} compression",
                file=sys.stderr,
            )
        if (info.config.num_replicas or 1) != replicas:
            print(
                f"deploy.streams: {subjects.events_stream} exists with "
                f"{info.config.num_replicas} replicas (wanted {replicas}); left as is",
                file=sys.stderr,
            )
        return False
    finally:
        await nc.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.streams", description=__doc__)
    parser.add_argument("--nats-url", default=os.environ.get("NATS_URL"), help="env NATS_URL")
    parser.add_argument("--replicas", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.nats_url:
        parser.error("--nats-url (or NATS_URL) is required")
    urls = [u.strip() for u in args.nats_url.split(",")]
    # With NATS users (compose.yaml): the worker user, from the environment.
    connect: dict[str, Any] = {
        "user": os.environ.get("NATS_USER"),
        "password": os.environ.get("NATS_PASSWORD"),
    }
    created = asyncio.run(ensure_replicated_events_stream(urls, replicas=args.replicas, **connect))
    print(f"events stream {'created' if created else 'already present'} (R{args.replicas})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
