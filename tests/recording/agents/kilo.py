"""Kilo CLI (``@kilocode/cli``), OpenCode's fork: ``kilo run`` against the OpenAI Chat
Completions dialect, recorded as OpenCode is (its recipe's plan, tools, config and steps),
with the provider in ``~/.config/kilo/kilo.json`` and Kilo's own switches for telemetry,
update checks, sharing, session ingest and the model catalogue fetch.

The wrapper ``@kilocode/cli`` 7.8.1 names platform packages of its own version that the
registry does not offer; the platform package ``@kilocode/cli-linux-x64`` 7.7.9, the newest
there, carries the executable the wrapper runs, so that is what is installed and recorded.
"""

from __future__ import annotations

from tests.recording.agents import RECORD_ROOT, Recipe, RunContext
from tests.recording.agents._plan import TITLE
from tests.recording.agents.opencode import checkpoint, script_for, steps, write_config

TASK = RECORD_ROOT / "kilo" / "shop"
DB = ".local/share/kilo/kilo.db"


def _env(ctx: RunContext) -> dict[str, str]:
    """The environment, after writing ``kilo.json``."""
    write_config(ctx, ctx.home / ".config" / "kilo" / "kilo.json")
    return {
        "SCRIPTED_API_KEY": ctx.key,
        # Anything but "all" turns Kilo's telemetry off.
        "KILO_TELEMETRY_LEVEL": "off",
        "KILO_DISABLE_AUTOUPDATE": "1",
        "KILO_DISABLE_MODELS_FETCH": "1",
        "KILO_DISABLE_SHARE": "1",
        "KILO_DISABLE_SESSION_INGEST": "1",
        "KILO_DISABLE_PRESENCE": "1",
        "KILO_DISABLE_LSP_DOWNLOAD": "1",
        "KILO_DISABLE_DEFAULT_PLUGINS": "1",
        "KILO_DISABLE_CODEBASE_INDEXING": "1",
        "KILO_NO_DAEMON": "1",
    }


RECIPE = Recipe(
    agent="kilo",
    package="@kilocode/cli-linux-x64",
    version="7.7.9",
    ecosystem="npm",
    bin="node_modules/@kilocode/cli-linux-x64/bin/kilo",
    format="kilo",
    session_dir=".local/share/kilo",
    # Kilo takes up to 20 s to start here (two cores, shared). It generates a title in a
    # fiber that `run` does not wait for (the process exits first), so the session is
    # titled with `run --title`, as a user names one.
    steps=(*steps(interrupt_after=45.0, title=TITLE), checkpoint(DB)),
    # Kilo sends each prompt with an <environment_details> part (time, folder), and after
    # an agent switch (compaction, then code) a <system-reminder> part.
    script=script_for(TASK, harness=("<environment_details>", "<system-reminder>")),
    env=_env,
    # Logs, snapshots, the telemetry id and the per-session diffs are not sessions.
    exclude=("log", "repos", "snapshot", "storage", "telemetry-id", "*.db-shm", "*.db-wal"),
    note=(
        "The platform package @kilocode/cli-linux-x64 7.7.9 (the wrapper @kilocode/cli 7.8.1 "
        "names a 7.8.1 the registry does not offer). Titled with run --title: Kilo's own "
        "title generation runs after run exits. It compacts before the refund prompt."
    ),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 6,
            "message/assistant": 15,
            "tool/call": 9,
            "tool/result": 9,
            "compaction": 1,
            # The prompt Kilo replays after compacting, its agent-switch reminder, and the
            # read of the attached image it adds.
            "message/context": 4,
        },
        "tool_errors": 2,
        "titles": [TITLE, "Check refund handling (@general subagent)"],
        # Skipped and counted (minimums): the image attached to a prompt.
        "skipped": {"part:file": 1},
        "cwd": str(TASK),
        # A database read whole: titles come with the sessions' ends.
        "whole": True,
    },
)
