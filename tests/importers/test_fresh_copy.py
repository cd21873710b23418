"""A freshly copied history imports whole (issue 39): every format's fixtures and recordings
copied the way a user does (``git clone``, ``cp -r``: every file's modification time is
now) and imported at once with ``import``'s own path (``import_jobs``, converting in process
as ``--dry-run --output`` does), must give what the same files give when they are old: the
same sessions, the same events by type and seq, the same titles and the same citations. An
importer that reads a file's age as the session's age would publish less of a fresh copy."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

import orjson
import pytest

from contracts.subjects import Subjects
from tests.importers import (
    fixture_gen,
    gen_amazon_q,
    gen_claude_code,
    gen_cline,
    gen_code_puppy,
    gen_goose,
    gen_hermes,
    gen_mini_swe_agent,
    gen_open_interpreter,
    gen_opencode,
    gen_openhands,
    gen_swe_agent,
    gen_vscode_copilot,
    gen_zed,
)
from tests.importers.test_import_tools import sessionquery
from tests.importers.test_known_skips import WRITERS
from worker.importers.run import DEFAULT_IDLE_S, ImportReport, Job, import_jobs
from worker.importers.summary import print_summary
from worker.transport.connection import NatsOptions

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
RECORDED = HERE / "recorded"
DAY_S = 86_400.0


@dataclass(frozen=True)
class Case:
    """One format's history: ``build`` writes it under a home folder and returns the path
    ``import`` is given."""

    fmt: str
    build: Callable[[Path], Path]
    # The source times its sessions' activity, though its format (NO_TIMES) may not.
    timed: bool = False
    # The source records no times, though its format's other versions do (NO_TIMES).
    untimed: bool = False


def _copy(source: Path) -> Callable[[Path], Path]:
    def build(home: Path) -> Path:
        return Path(shutil.copytree(source, home / source.name))

    return build


def _db(write: Callable[[Path], object], name: str) -> Callable[[Path], Path]:
    def build(home: Path) -> Path:
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
        return path

    return build


def _aider_with_inputs(home: Path) -> Path:
    """Aider's chat history with the input history it keeps beside it (prompt_toolkit's
    ``FileHistory``: a ``# <local time>`` line before each prompt)."""
    shop = _copy(FIXTURES / "aider" / "shop")(home)
    (shop / ".aider.input.history").write_text(
        "\n# 2026-11-29 09:15:40.123456\n+add a discount code field\n"
        "\n# 2026-11-29 14:02:10.654321\n+/run pytest\n"
    )
    return shop


def _openhands(home: Path) -> Path:
    root = home / ".openhands"
    gen_openhands.write_sdk(root)
    gen_openhands.write_server(root)
    return root


def _opencode(home: Path) -> Path:
    db = home / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    gen_opencode.write_database(db, gen_opencode.corpus())
    return db.parent


def _vscode(home: Path) -> Path:
    user = home / "Code" / "User"
    gen_vscode_copilot.write_document(user)
    gen_vscode_copilot.write_log(user)
    gen_vscode_copilot.write_writer_log(user)
    # Its last request has no result yet: made long ago, it is all there is.
    gen_vscode_copilot.write_writer_document(user / "other")
    return user


def _cline_cut(home: Path) -> Path:
    """A Cline task with only its UI log, which ends in a command's output: whole once
    its last message is a minute old."""
    tasks = home / "saoudrizwan.claude-dev" / "tasks"
    return gen_cline.write_ui_task(
        tasks, gen_cline.CLINE_UI_TASK, gen_cline.ui_log(gen_cline.T0)[:11]
    ).parent


def _hermes(home: Path) -> Path:
    return gen_hermes.write(home / "hermes" / "state.db").parent


# The formats whose generated home is the known-skips test's (written under ``home``).
_HOMES: Final = (
    "amp", "auggie", "codebuff", "continue", "copilot-cli", "crush", "cursor", "droid",
    "gemini-cli", "gptme", "kimi", "letta-code", "llm", "openclaw", "pi", "qoder", "qwen-code",
    "vibe",
)  # fmt: skip


def _home(write: Callable[[Path], Path]) -> Callable[[Path], Path]:
    return lambda home: write(home / "home")


GENERATED: dict[str, Case] = {
    **{fmt: Case(fmt, _home(WRITERS[fmt])) for fmt in _HOMES},
    "aider": Case("aider", _copy(FIXTURES / "aider" / "shop")),
    "aider-inputs": Case("aider", _aider_with_inputs, timed=True),
    "amazon-q": Case("amazon-q", lambda h: gen_amazon_q.write_q(h / "q" / "data.sqlite3")),
    "claude-code": Case("claude-code", _copy(fixture_gen.ROOT / "claude-code")),
    "claude-code-plan": Case(
        "claude-code", lambda h: gen_claude_code.write_plan_then_implement(h / "projects")
    ),
    "cline": Case("cline", lambda h: gen_cline.write_cline(h / "globalStorage")),
    "cline-ui-cut": Case("cline", _cline_cut),
    "roo-code": Case("roo-code", lambda h: gen_cline.write_roo(h / "globalStorage")),
    "codex": Case("codex", _copy(fixture_gen.ROOT / "codex")),
    "continue-cn": Case("continue", _copy(FIXTURES / "continue" / "cn-1.5.47")),
    "goose": Case("goose", _db(gen_goose.write_database, "goose/sessions.db")),
    "goose-file": Case(
        "goose", lambda h: gen_goose.write_session_file(h / "goose" / "sessions").parent
    ),
    "hermes": Case("hermes", _hermes),
    "kimi-cli": Case("kimi", _copy(FIXTURES / "kimi" / "kimi-cli-1.52.0")),
    "opencode": Case("opencode", _opencode),
    "openhands": Case("openhands", _openhands),
    "vibe-fixture": Case("vibe", _copy(FIXTURES / "vibe")),
    "vscode-copilot": Case("vscode-copilot", _vscode),
    "zed": Case("zed", lambda h: gen_zed.write(h / "threads")),
    "mini-swe-agent": Case("mini-swe-agent", lambda h: gen_mini_swe_agent.write(h, v1=False)),
    # 1.x trajectories record no times (2.x's steps do).
    "mini-swe-agent-1x": Case(
        "mini-swe-agent", lambda h: gen_mini_swe_agent.write(h, v2=False), untimed=True
    ),
    "open-interpreter": Case("open-interpreter", gen_open_interpreter.write),
    "nanocoder": Case("nanocoder", _home(WRITERS["nanocoder"])),
    "code-puppy": Case("code-puppy", gen_code_puppy.write),
    "swe-agent": Case("swe-agent", gen_swe_agent.write),
    "trae-agent": Case("trae-agent", _home(WRITERS["trae-agent"])),
    "nanobot": Case("nanobot", _home(WRITERS["nanobot"])),
}


def _recordings() -> dict[str, Case]:
    cases = {}
    for path in sorted(RECORDED.glob("*/RECORDED.json")):
        fmt = json.loads(path.read_text())["format"]
        cases[f"recorded-{path.parent.name}"] = Case(fmt, _copy(path.parent / "sessions"))
    return cases


CASES: dict[str, Case] = {**GENERATED, **_recordings()}


def _age(root: Path, seconds_ago: float) -> None:
    """Every file's and folder's modification time set to ``seconds_ago`` before now."""
    when = time.time() - seconds_ago
    for path in [root, *root.rglob("*")]:
        os.utime(path, (when, when), follow_symlinks=False)


Signature = dict[str, list[tuple[Any, ...]]]

# Formats whose sources record no time of a session's last activity: only the file's
# modification time tells whether a session goes on, and a fresh copy's is now. Their
# sessions look active, so a fresh copy's import publishes every event but each open
# session's title and end, and says so in the summary; ``--idle-seconds 0`` (or a later
# run) publishes those, with the seqs an old copy gives them. Ending them on a guess
# would break a session that is really going on: its next turn would follow its end.
NO_TIMES: dict[str, str] = {
    "aider": "times only where a session starts (the chat history's header)",
    "continue": "no per-message times; sessions.json has only dateCreated",
    "cursor": "agent transcripts record no times at all",
    "open-interpreter": "conversations record no times (the file's name: a local start time)",
    "swe-agent": "trajectories record no times (each event has the file's modification time)",
}
_AT_END = frozenset({"session/title", "session/end"})


def _imported(
    fmt: str, path: Path, *, idle_s: float = DEFAULT_IDLE_S
) -> tuple[Signature, ImportReport, str]:
    """What ``import`` publishes of ``path``: per session, each event's (seq, type, title,
    cites); the report; the summary ``import`` prints."""
    out = io.BytesIO()
    report: ImportReport = asyncio.run(
        import_jobs(
            [Job(fmt, [path])],
            options=NatsOptions(),
            subjects=Subjects(),
            errors=io.StringIO(),
            idle_s=idle_s,
            dry_run=True,
            output=out,
            imports_bucket=None,
        )
    )
    sessions: Signature = {}
    for line in out.getvalue().splitlines():
        event = orjson.loads(line)
        cites = tuple((c["session_id"], c["seq"]) for c in event.get("cites", []))
        title = event["payload"].get("title") if event["type"] == "session/title" else None
        sessions.setdefault(event["session_id"], []).append(
            (event["seq"], event["type"], title, cites)
        )
    summary = io.StringIO()
    print_summary(report, summary)
    return sessions, report, summary.getvalue()


def _without_ends(sessions: Signature) -> Signature:
    """Each session without its trailing title and end."""
    cut = {}
    for session, events in sessions.items():
        n = len(events)
        while n and events[n - 1][1] in _AT_END:
            n -= 1
        cut[session] = events[:n]
    return cut


def _copy_of(case: Case, tmp_path: Path) -> tuple[Path, Path]:
    """The history written, then copied as ``cp -r`` does (every mtime now): (the copy's
    folder, the path to import). Session ids may hash the path, so both ages are read at
    the same path: :func:`_age` makes the copy old."""
    source = tmp_path / "source"
    source.mkdir()
    target = case.build(source).relative_to(source)
    copy = tmp_path / "copy"
    shutil.copytree(source, copy, symlinks=True, copy_function=shutil.copy)
    _age(copy, 0)
    return copy, copy / target


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fresh_copy_imports_what_an_old_one_does(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    copy, path = _copy_of(case, tmp_path)
    new, fresh_report, said = _imported(case.fmt, path)
    _age(copy, DAY_S)
    old, old_report, _ = _imported(case.fmt, path)
    assert old, f"{name}: the aged copy publishes nothing"
    assert fresh_report.tally.skipped == old_report.tally.skipped
    if (case.fmt not in NO_TIMES and not case.untimed) or case.timed:
        assert new == old, f"{name}: a fresh copy imports differently from the same files aged"
        assert fresh_report.left_open == old_report.left_open
        return
    # Unavoidable (NO_TIMES): the same events in the same seqs, but the ends and titles
    # of the sessions that look active wait, and the summary says how many and why.
    assert _without_ends(new) == _without_ends(old), name
    waiting = [sid for sid in old if new[sid] != old[sid]]
    assert waiting, f"{name}: the fresh copy's sessions should look active"
    assert fresh_report.left_open == len(waiting) + old_report.left_open
    assert f"{fresh_report.left_open} sessions look active" in said
    assert "run again later, or with --idle-seconds 0" in said


@pytest.mark.parametrize("name", sorted(CASES))
def test_idle_seconds_zero_ends_every_session_of_a_fresh_copy(name: str, tmp_path: Path) -> None:
    """``--idle-seconds 0``: every session gets its end (and its title, where the source
    names it) at once, whatever the files' age."""
    case = CASES[name]
    copy, path = _copy_of(case, tmp_path)
    now, report, said = _imported(case.fmt, path, idle_s=0)
    assert now
    for session, events in now.items():
        assert events[-1][1] == "session/end", f"{name}: {session} is left open"
    _age(copy, DAY_S)
    old, _, _ = _imported(case.fmt, path, idle_s=0)
    assert now == old
    assert report.left_open == 0 and "look active" not in said


def test_an_aider_session_with_a_recent_prompt_stays_open(tmp_path: Path) -> None:
    """Aider's input history times its prompts: one a minute ago keeps the last session
    open though the chat history's file is a day old (and, above, an old one ends it
    though the file was copied just now)."""
    shop = _copy(FIXTURES / "aider" / "shop")(tmp_path)
    recent = datetime.now() - timedelta(minutes=1)  # local, as prompt_toolkit writes it
    (shop / ".aider.input.history").write_text(f"\n# {recent:%Y-%m-%d %H:%M:%S.%f}\n+/run pytest\n")
    _age(shop, DAY_S)
    sessions, report, said = _imported("aider", shop)
    last = max(sessions)
    assert [e[1] for e in sessions[last]][-1] != "session/end"
    assert report.left_open == 1 and "1 sessions look active" in said


def test_the_command_says_what_waits_in_a_fresh_copy(tmp_path: Path) -> None:
    """The real ``sessionquery import`` on a freshly copied Continue folder: it says how
    many sessions wait for their titles and ends, and ``--idle-seconds 0`` ends them."""
    _, path = _copy_of(CASES["continue"], tmp_path)
    args = ["import", "--format", "continue", str(path), "--dry-run"]
    waited = sessionquery(*args)
    assert waited.returncode == 0, waited.stderr
    assert "2 sessions look active" in waited.stderr, waited.stderr
    assert "run again later, or with --idle-seconds 0 to end them now" in waited.stderr
    at_once = sessionquery(*args, "--idle-seconds", "0")
    assert at_once.returncode == 0, at_once.stderr
    assert "look active" not in at_once.stderr
    assert "session/end 2" in at_once.stdout, at_once.stdout  # --dry-run's table
    assert "session/end" not in waited.stdout, waited.stdout
