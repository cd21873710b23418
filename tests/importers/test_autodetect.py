"""``import`` and ``watch`` with no path and no ``--format``: every agent's own folders
(moved by the agents' environment variables) read with that agent's importer, and a
line per agent saying what was found, published and skipped."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import until
from tests.importers import (
    fixture_gen,
    gen_amazon_q,
    gen_amp,
    gen_auggie,
    gen_code_puppy,
    gen_codebuff,
    gen_continue,
    gen_copilot_cli,
    gen_crush,
    gen_cursor,
    gen_droid,
    gen_gemini_cli,
    gen_gptme,
    gen_hermes,
    gen_kimi,
    gen_letta_code,
    gen_llm,
    gen_mini_swe_agent,
    gen_nanobot,
    gen_nanocoder,
    gen_open_interpreter,
    gen_openclaw,
    gen_pi,
    gen_qoder,
    gen_qwen_code,
    gen_swe_agent,
    gen_trae_agent,
    gen_vibe,
    gen_zed,
)
from tests.importers._agent_e2e import converted
from tests.importers.test_import_tools import sessionquery
from tests.importers.test_watch import has, start, stop
from worker.importers import registry
from worker.importers.detect import AUTO, detect, expand

# The variables that move an agent's folder: unset, so only this test's HOME counts.
MOVED_BY = {v for imp in registry.importers().values() for v in imp.env_vars}


def _machine(tmp_path: Path) -> tuple[dict[str, str], dict[str, Path]]:
    """A home with four agents' histories, Copilot's moved by COPILOT_HOME."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    roots = {
        "gemini-cli": gen_gemini_cli.write(home),
        "pi": gen_pi.write(home),
        "cursor": gen_cursor.write(home),
        "copilot-cli": gen_copilot_cli.write(elsewhere),
    }
    env = {k: v for k, v in os.environ.items() if k not in MOVED_BY}
    env |= {"HOME": str(home), "COPILOT_HOME": str(elsewhere / ".copilot")}
    return env, roots


def _nats(nats_url: str, subjects: Subjects) -> list[str]:
    return ["--nats-url", nats_url, "--stream", subjects.events_stream,
            "--events-prefix", subjects.events_prefix]  # fmt: skip


async def test_import_with_no_path_reads_every_agent_and_reports_each(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    env, roots = _machine(tmp_path)
    expected = {}
    for fmt, root in roots.items():
        events, open_sessions = converted(fmt, root)
        expected[fmt] = events + len(open_sessions)
    total = sum(expected.values())
    args = ["import", *_nats(nats_url, subjects), "--idle-seconds", "1800"]
    first = await asyncio.to_thread(sessionquery, *args, env=env)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    home = Path(env["HOME"])
    also = {"pi": f", {home / '.omp' / 'agent' / 'sessions'}"}  # Oh My Pi's, empty here
    for fmt, root in roots.items():
        files = len(registry.get(fmt).files(root))
        where = f"{root}{also.get(fmt, '')}"
        line = f"{fmt}: {files} files in {where}: published {expected[fmt]} events"
        assert any(text.startswith(line) for text in lines), (line, first.stderr)
    assert f"claude-code: nothing found in {home / '.claude' / 'projects'}" in lines
    codex = f"{home / '.codex' / 'sessions'}, {home / '.codex' / 'archived_sessions'}"
    assert f"codex: nothing found in {codex}" in lines
    assert f"published {total} events (0 already in the stream)" in first.stderr
    assert "record:hook.start 1" in first.stderr  # each agent's skipped records, said
    second = await asyncio.to_thread(sessionquery, *args, env=env)
    assert f"published {total} events ({total} already in the stream)" in second.stderr
    await nc.jetstream().delete_stream(subjects.events_stream)


async def test_watch_with_no_path_follows_every_agent(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    env, roots = _machine(tmp_path)
    total = sum(converted(fmt, root)[0] for fmt, root in roots.items())
    command = [sys.executable, "-m", "worker.cli", "watch", *_nats(nats_url, subjects),
               "--state-bucket", f"watch-{unique}", "--poll-interval", "0.05", "--quiet",
               "--idle-seconds", "inf"]  # fmt: skip
    process = start(command, env=env)
    try:
        # No session is ended (--idle-seconds inf): the stream holds the files' events.
        await until(lambda: has(nc, subjects, total), within=30)
    finally:
        code, said = stop(process)
    assert code == 0, said
    assert f"copilot-cli: 2 files in {roots['copilot-cli']}" in said
    assert f"published {total} events" in said
    await nc.jetstream().delete_stream(subjects.events_stream)


def test_every_generated_file_is_detected_as_its_own_format(tmp_path: Path) -> None:
    """--format auto over one tree holding every format: no importer claims another's file
    (Qwen Code's records look like Claude Code's, Droid's first line like Pi's header)."""
    _, roots = _machine(tmp_path)
    roots |= {"qwen-code": gen_qwen_code.write(tmp_path / "home"),
              "droid": gen_droid.write(tmp_path / "home"),
              "amp": gen_amp.write(tmp_path / "home"),
              # gptme's branches and views are .jsonl files no format claims: left out.
              "gptme": gen_gptme.write(tmp_path / "home", side_files=False),
              "qoder": gen_qoder.write(tmp_path / "home"),
              "codebuff": gen_codebuff.write(tmp_path / "home"),
              "letta-code": gen_letta_code.write(tmp_path / "home"),
              "llm": gen_llm.write(tmp_path / "home").parent,
              "mini-swe-agent": gen_mini_swe_agent.write(tmp_path / "home"),
              "open-interpreter": gen_open_interpreter.write(tmp_path / "home"),
              "nanocoder": gen_nanocoder.write(tmp_path / "home"),
              "code-puppy": gen_code_puppy.write(tmp_path / "home"),
              "swe-agent": gen_swe_agent.write(tmp_path / "home")}  # fmt: skip
    roots |= {fmt: db.parent for fmt, db in gen_amazon_q.write(tmp_path / "home").items()}
    roots["zed"] = gen_zed.write_home(tmp_path / "home")
    # OpenClaw's transcripts are Pi's format: told apart by where OpenClaw keeps them.
    roots |= {"hermes": gen_hermes.write_home(tmp_path / "home"),
              "openclaw": gen_openclaw.write(tmp_path / "home"),
              "auggie": gen_auggie.write(tmp_path / "home")}  # fmt: skip
    roots["crush"] = gen_crush.write(tmp_path / "home")
    roots["continue"] = gen_continue.write(tmp_path / "home")
    roots["vibe"] = gen_vibe.write(tmp_path / "home")
    roots["kimi"] = gen_kimi.write(tmp_path / "home")
    roots["trae-agent"] = gen_trae_agent.write(tmp_path / "home")
    roots["nanobot"] = gen_nanobot.write(tmp_path / "home")
    roots["claude-code"] = fixture_gen.ROOT / "claude-code"
    roots["codex"] = fixture_gen.ROOT / "codex"
    at_home = set[Path]()
    for fmt, root in roots.items():
        files = registry.get(fmt).files(root)
        assert files, fmt
        assert {path: detect(path) for path in files} == dict.fromkeys(files, fmt)
        at_home |= set(files) if tmp_path in root.parents else set()
    # Auto over the whole home lists every format's sources (Copilot's home is elsewhere),
    # and files a format knows as its own but does not import (Vibe's messages.jsonl, read
    # with its session folder; Kimi's context.jsonl): those are counted, not imported.
    listed = set(expand([tmp_path / "home"], AUTO))
    parts = {p for p in listed if (known := detect(p)) and not registry.get(known).accepts(p)}
    assert {p.name for p in parts} == {"messages.jsonl", "context.jsonl"}
    assert listed - parts == at_home - set(registry.get("copilot-cli").files(roots["copilot-cli"]))
