"""``sessionquery``: the command line of the Session Query Worker.

Each subcommand lives in the module that owns its domain and exposes two callables:
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code). Modules are imported
only when their subcommand runs, so ``sessionquery --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("worker.commands.serve", "run the worker (embedded nats-server when no URL)"),
    "import": ("worker.commands.importing", "publish agent session files to the stream"),
    "watch": ("worker.commands.watching", "import session files and follow them as they grow"),
    "purge": ("worker.commands.purge", "remove sessions from the index (bumps the epoch)"),
    "call": ("worker.commands.call", "call one tool over NATS and print the reply"),
    "manifest": ("worker.commands.call", "print the tool manifest"),
    "mcp": ("worker.commands.mcp", "serve the five tools to MCP clients (stdio or HTTP)"),
    "ui": ("worker.commands.ui", "a local web page to browse and search sessions (operators)"),
    "demo": ("worker.commands.demo", "embedded server, sample corpus, each tool once"),
    "status": ("worker.commands.status", "the index against its stream: seqs, lag, dead letters"),
    "doctor": ("worker.commands.doctor", "full checks of the index; says what is wrong and why"),
    "deadletters": ("worker.commands.deadletters", "events the index refused, with their reasons"),
    "secrets": (
        "worker.commands.secrets",
        "credentials redacted, per workspace and kind: counts and sessions, never a value",
    ),
    "partitions": (
        "worker.commands.partitions",
        "plan: balanced --partitions values for W workers, R replicas per shard",
    ),
}


DESCRIPTION = """\
Session Query Worker: five read-only tools that let language models search, trace and read
the logs of earlier agent sessions, served over NATS. Agent runtimes publish session events
to the JetStream stream SESSIONS; the worker indexes them (SQLite and a tantivy search
index) and answers one request subject per tool (sessionquery.tool.<tool>), plus
sessionquery.manifest (tool schemas and the prompt section) and sessionquery.cancel.

Start here: `sessionquery serve --sample-corpus` (no NATS needed: it starts an embedded
nats-server), then `sessionquery manifest` and `sessionquery call ...` from another
terminal. The wire contract for clients in any language is docs/protocol.md."""

EPILOG = "`sessionquery COMMAND --help` lists each command's options."


def build_parser(requested: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sessionquery",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module_name)
        # Only the requested subcommand's module is imported to add its arguments.
        if name == requested:
            module = importlib.import_module(module_name)
            add = getattr(module, f"add_{name}_arguments", None) or module.add_arguments
            add(sub_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    requested = args_list[0] if args_list and args_list[0] in SUBCOMMANDS else None
    try:
        args = build_parser(requested).parse_args(args_list)
        module = importlib.import_module(args._module)
        run = getattr(module, f"run_{args.command}", None) or module.run
        return int(run(args) or 0)
    except Exception as exc:
        # A bad setting (flag or SESSIONQUERY_* variable) is one line and exit 2, as a
        # usage error; the configuration module is imported only once a command runs.
        from worker.settings import ConfigError

        if not isinstance(exc, ConfigError):
            raise
        print(f"sessionquery {requested or ''}: {exc}".replace(" :", ":"), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
