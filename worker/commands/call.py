"""``sessionquery call`` and ``sessionquery manifest``: the requester side from a shell.

``call`` prints a tool's rendered text (a spilled result is fetched and printed whole); an
error reply prints ``CODE: message`` on stderr and exits 1. Both need a NATS URL.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.client import UNROUTED, SessionQueryClient, SessionQueryClientError, Unrouted
from contracts.envelope import AgentIdentity, Execution
from contracts.subjects import TOOL_NAMES, Subjects
from worker.config_flags import add_flags, config_from_args
from worker.transport.flags import add_nats_arguments, options_from_args

EXIT_ERROR_REPLY = 1
EXIT_USAGE = 2

NO_URL_MESSAGE = (
    "sessionquery: no NATS URL: pass --nats-url or set NATS_URL "
    "(`sessionquery serve` prints the URL of the server it starts)"
)


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_nats_arguments(parser)
    add_flags(parser, ("subject_prefix",))


def route_of(args: argparse.Namespace) -> str | Unrouted | None:
    """The caller's cwd as the client routes it: ``--cwd`` verbatim (an empty one is a cwd
    too), ``--no-cwd`` the no-cwd key, neither the unpartitioned subject."""
    if args.no_cwd:
        return None
    return UNROUTED if args.cwd is None else str(args.cwd)


def add_call_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", choices=TOOL_NAMES, help="the tool to call")
    parser.add_argument(
        "arguments",
        help="the tool arguments as one JSON object, as a model would write them ('{}')",
    )
    parser.add_argument(
        "--session", required=True, help="the calling agent's session id (execution identity)"
    )
    parser.add_argument("--agent", default=None, help="the calling agent's id")
    parser.add_argument(
        "--step-start-seq",
        type=int,
        default=None,
        help="seq of the caller's current step/start (excluded from its own-session search)",
    )
    deadline = parser.add_mutually_exclusive_group()
    deadline.add_argument(
        "--deadline-ms", type=int, default=None, help="absolute deadline, epoch milliseconds"
    )
    deadline.add_argument(
        "--timeout-ms", type=int, default=None, help="deadline as milliseconds from now"
    )
    parser.add_argument("--request-id", default=None, help="default: a fresh random id")
    route = parser.add_mutually_exclusive_group()
    route.add_argument(
        "--cwd",
        default=None,
        help="the calling session's working directory, exactly as its session/start has it"
        " (not resolved): the request goes to its workspace's partition (needed with sharded"
        " workers); default, when the caller's cwd is unknown: the unpartitioned subject,"
        " which only workers holding every partition answer",
    )
    route.add_argument("--no-cwd", action="store_true", help="route as a session that has no cwd")
    _add_common(parser)


def add_manifest_arguments(parser: argparse.ArgumentParser) -> None:
    _add_common(parser)


def run_call(args: argparse.Namespace) -> int:
    if not options_from_args(args).url:
        print(NO_URL_MESSAGE, file=sys.stderr)
        return EXIT_USAGE
    try:
        arguments = orjson.loads(args.arguments)
    except orjson.JSONDecodeError as exc:
        print(f"sessionquery: the arguments are not valid JSON: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not isinstance(arguments, dict):
        print("sessionquery: the arguments must be one JSON object", file=sys.stderr)
        return EXIT_USAGE
    deadline_ms = args.deadline_ms
    if args.timeout_ms is not None:
        deadline_ms = int(time.time() * 1000) + args.timeout_ms
    try:
        execution = Execution(
            agent=AgentIdentity(session_id=args.session, agent_id=args.agent),
            step_start_seq=args.step_start_seq,
            deadline_ms=deadline_ms,
        )
    except ValueError as exc:
        print(f"sessionquery: invalid execution: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return asyncio.run(_call(args, config_from_args(args).subjects, execution, arguments))


def run_manifest(args: argparse.Namespace) -> int:
    if not options_from_args(args).url:
        print(NO_URL_MESSAGE, file=sys.stderr)
        return EXIT_USAGE
    return asyncio.run(_manifest(args, config_from_args(args).subjects))


async def _connect(args: argparse.Namespace) -> NATS | None:
    from worker.transport.connection import ConnectFailed, connect_reporting

    try:
        # One attempt: a shell command should fail fast, not retry forever. The message
        # names the URL (credentials redacted) and the server's reason.
        return await connect_reporting(options_from_args(args), attempts=1)
    except ConnectFailed as exc:
        print(f"sessionquery: {exc}", file=sys.stderr)
        return None


async def _call(
    args: argparse.Namespace, subjects: Subjects, execution: Execution, arguments: dict[str, Any]
) -> int:
    nc = await _connect(args)
    if nc is None:
        return EXIT_ERROR_REPLY
    try:
        client = SessionQueryClient(nc, subjects)
        reply = await client.call(
            args.tool, arguments, execution, request_id=args.request_id, cwd=route_of(args)
        )
        if reply.status == "error" or reply.error is not None:
            code = reply.error.code.value if reply.error else "SESSION_QUERY_TOOL_FAILED"
            message = reply.error.message if reply.error else ""
            print(f"{code}: {message}", file=sys.stderr)
            return EXIT_ERROR_REPLY
        text = reply.content or ""
        if reply.spill is not None:
            text = (await client.fetch_spilled(reply.spill)).decode("utf-8", "replace")
        _print_text(text)
        return 0
    except SessionQueryClientError as exc:
        print(f"sessionquery: {exc}", file=sys.stderr)
        return EXIT_ERROR_REPLY
    finally:
        await nc.close()


async def _manifest(args: argparse.Namespace, subjects: Subjects) -> int:
    nc = await _connect(args)
    if nc is None:
        return EXIT_ERROR_REPLY
    try:
        manifest = await SessionQueryClient(nc, subjects).manifest()
    except SessionQueryClientError as exc:
        print(f"sessionquery: {exc}", file=sys.stderr)
        return EXIT_ERROR_REPLY
    finally:
        await nc.close()
    _print_text(orjson.dumps(manifest, option=orjson.OPT_INDENT_2).decode())
    return 0


def _print_text(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
