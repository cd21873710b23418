"""``sessionquery mcp [--http 127.0.0.1:PORT]``: serve the bridge over stdio or HTTP.

stdio is the default (the MCP client launches the command). ``--http HOST:PORT`` serves
Streamable HTTP at ``/mcp`` instead, on loopback unless told otherwise; requests whose
Host or Origin header is not loopback (or given with ``--allow-origin``) are refused, so a
web page cannot drive the bridge through the browser (DNS rebinding).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any, Final

from worker.mcp_bridge.bridge import DEFAULT_MAX_RESULT_BYTES, DEFAULT_TIMEOUT_S, BridgeSettings

LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
EXIT_FAILED: Final = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.config_flags import add_flags, add_subject_arguments
    from worker.transport.flags import add_nats_arguments

    parser.add_argument(
        "--session-id", default=os.environ.get("SESSIONQUERY_SESSION_ID"),
        help="the agent session the tools act for (env SESSIONQUERY_SESSION_ID); default:"
        " a bridge session of its own in --cwd's workspace",
    )  # fmt: skip
    parser.add_argument("--agent-id", default=None, help="the calling agent's id")
    parser.add_argument(
        "--cwd",
        default=os.getcwd(),
        help="the agent's working directory: the bridge session's workspace and the"
        " partition every call goes to (default: here)",
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S,
        help=f"deadline of each tool call in seconds (default {DEFAULT_TIMEOUT_S:.0f}); a"
        " request's _meta['sessionquery/timeout_ms'] overrides it",
    )  # fmt: skip
    parser.add_argument(
        "--max-result-bytes", type=int, default=DEFAULT_MAX_RESULT_BYTES,
        help="longer results (spilled ones fetched whole) are cut at a line, with a note",
    )  # fmt: skip
    parser.add_argument(
        "--http", metavar="HOST:PORT", default=None,
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )  # fmt: skip
    parser.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="an extra allowed Origin for --http (loopback origins always are)",
    )  # fmt: skip
    add_flags(parser, ("subject_prefix",))
    add_subject_arguments(parser)
    add_nats_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("mcp: the MCP SDK is missing; install the extra: pip install"
              " 'session-query-worker[mcp]'", file=sys.stderr)  # fmt: skip
        return EXIT_FAILED
    from worker.config_flags import config_from_args
    from worker.logs import configure_logging
    from worker.transport.flags import options_from_args

    configure_logging(stream=sys.stderr)  # stdout is the protocol channel under stdio
    subjects = config_from_args(args).subjects
    settings = BridgeSettings(
        subjects=subjects, cwd=args.cwd, session_id=args.session_id, agent_id=args.agent_id,
        timeout_s=args.timeout, max_result_bytes=args.max_result_bytes,
    )  # fmt: skip
    address = None
    if args.http:
        host, _, port = args.http.rpartition(":")
        if not host or not port.isdigit():
            print("mcp: --http takes HOST:PORT, e.g. 127.0.0.1:8765", file=sys.stderr)
            return EXIT_FAILED
        address = (host.strip("[]"), int(port))
    try:
        return asyncio.run(_serve(settings, options_from_args(args), address, args.allow_origin))
    except KeyboardInterrupt:
        return 0


async def _serve(
    settings: BridgeSettings, options: Any, address: tuple[str, int] | None, origins: list[str]
) -> int:
    from contracts.client import SessionQueryClientError
    from worker.mcp_bridge.bridge import Bridge
    from worker.transport.connection import connect

    try:
        nc = await connect(options, name="sessionquery-mcp")
    except Exception as exc:
        print(f"mcp: cannot connect to NATS: {exc}", file=sys.stderr)
        return EXIT_FAILED
    bridge = Bridge(nc, settings)
    try:
        await bridge.start()
    except SessionQueryClientError as exc:
        print(f"mcp: cannot read the worker's manifest: {exc}", file=sys.stderr)
        await nc.close()
        return EXIT_FAILED
    try:
        server = build_server(bridge)
        if address is None:
            await _stdio(server)
        else:
            await _http(server, address, origins)
    finally:
        await bridge.close()
        await nc.close()
    return 0


def build_server(bridge: Any) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=bridge.tools())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        from worker.mcp_bridge.bridge import timeout_from_meta

        result: types.CallToolResult = await bridge.call(
            params.name, params.arguments or {}, timeout_s=timeout_from_meta(params.meta)
        )
        return result

    return Server(
        "session-query", version="2.0.0", instructions=bridge.instructions,
        on_list_tools=list_tools, on_call_tool=call_tool,
    )  # fmt: skip


async def _stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def _http(server: Any, address: tuple[str, int], origins: list[str]) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    host, port = address
    hosts = {host, *LOOPBACK}
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"[{h}]:*" if ":" in h else f"{h}:*" for h in hosts],
        allowed_origins=[
            *(f"http://[{h}]:*" if ":" in h else f"http://{h}:*" for h in hosts), *origins
        ],
    )  # fmt: skip
    app = server.streamable_http_app(host=host, transport_security=security)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    print(f"mcp: serving Streamable HTTP at http://{address[0]}:{port}/mcp", file=sys.stderr)
    await uvicorn.Server(config).serve()
