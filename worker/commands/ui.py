"""``sessionquery ui``: serve the operator's web page on 127.0.0.1 and print its address.

It connects to NATS like the other commands (``--nats-url`` / ``NATS_URL`` and the
``--nats-*`` credentials); with no URL it tries the embedded server's usual address
(``nats://127.0.0.1:4222``, where ``sessionquery serve`` starts one). The workers answer
its requests on ``<prefix>.operator.<verb>`` (docs/ui.md).
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading
from typing import Final

EMBEDDED_DEFAULT_URL: Final = "nats://127.0.0.1:4222"
DEFAULT_PORT: Final = 8765
EXIT_FAILED: Final = 2
LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
OPERATOR_INBOX_PREFIX: Final = "_INBOX_operator"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.config_flags import add_flags
    from worker.transport.flags import add_nats_arguments

    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any)"
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("SESSIONQUERY_UI_TOKEN"),
        help="the access token (env SESSIONQUERY_UI_TOKEN; default: a fresh random one)",
    )
    parser.add_argument(
        "--inbox-prefix",
        default=OPERATOR_INBOX_PREFIX,
        help=f"where replies arrive (default {OPERATOR_INBOX_PREFIX}: what the operator user of"
        " deploy/nats-accounts.conf may subscribe to)",
    )
    add_flags(parser, ("subject_prefix",))
    add_nats_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from worker.config_flags import config_from_args
    from worker.transport.connection import ConnectFailed, connect_reporting
    from worker.transport.flags import options_from_args
    from worker.ui.server import UiServer

    options = options_from_args(args)
    if not options.url:
        note = "(`sessionquery serve` without a URL starts a server there)"
        print(
            f"sessionquery ui: no NATS URL; trying {EMBEDDED_DEFAULT_URL} {note}", file=sys.stderr
        )
        options = options.with_url(EMBEDDED_DEFAULT_URL)
    if args.host not in LOOPBACK:
        print(f"sessionquery ui: serving on {args.host}, not loopback: anyone who can reach"
              " it and has the token sees every workspace", file=sys.stderr)  # fmt: skip
    subjects = config_from_args(args).subjects

    async def connect() -> object:
        # ``--connect-attempts`` (or its variable) as every command takes it.
        return await connect_reporting(
            options, name="sessionquery-ui", inbox_prefix=args.inbox_prefix
        )

    try:
        server = UiServer.start(connect, subjects, host=args.host, port=args.port, token=args.token)
    except OSError as exc:
        print(f"sessionquery ui: {_bind_failure(exc, args.host, args.port)}", file=sys.stderr)
        return EXIT_FAILED
    except ConnectFailed as exc:
        print(f"sessionquery ui: {exc}", file=sys.stderr)
        return EXIT_FAILED
    stop = _stop_on_signals()  # before the address is printed: a SIGINT right after it counts
    print(f"sessionquery ui: open {server.login_url}", flush=True)
    try:
        while not stop.wait(0.5):  # a timed wait: signals reach the main thread between them
            pass
    finally:
        server.stop()
    return 0


def _bind_failure(exc: OSError, host: str, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (f"{host}:{port} is already in use (another sessionquery ui?): choose another"
                " port with --port, or --port 0 for any free one")  # fmt: skip
    return str(exc)


def _stop_on_signals() -> threading.Event:
    """An event SIGINT or SIGTERM sets. Installed here: a shell script's background job
    starts with SIGINT ignored, where Python's own KeyboardInterrupt never comes."""
    stop = threading.Event()

    def stopping(signum: int, frame: object) -> None:
        stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, stopping)
    return stop
