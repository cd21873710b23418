"""What of a recording is the agent's own text, left out of the fixture.

Agents copy their own prompt text into their session files: system prompts, tool
descriptions, skill listings, reminders (Claude Code's request snapshots, Cline's
``system_prompt``, gptme's system messages). That text is the agent vendor's, not ours, and
it is not what a fixture tests: the importers skip it or keep it as context. Each string of
it is replaced by a marker saying how long it was, so the records keep their kinds, keys and
order and the importers read the same shapes. ``python -m tests.recording.record --scrub
AGENT`` applies a recipe's rule to its committed recording again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _never(record: dict[str, Any]) -> bool:
    return False


@dataclass(frozen=True)
class OwnText:
    """How to tell an agent's own text: strings (of at least ``min_chars``) that start
    with one of ``prefixes``, and every such string of a JSON Lines record ``records``
    accepts (records that only copy what the agent sent the model)."""

    prefixes: tuple[str, ...] = ()
    records: Callable[[dict[str, Any]], bool] = field(default=_never)
    min_chars: int = 200
    # Keys whose whole value is the agent's own text wherever they are met (e.g. Vibe's
    # ``tools_available``, its tool definitions): every long string under them.
    fields: tuple[str, ...] = ()
    # In an SQLite database (``*.db``): (table, column) pairs that hold only the agent's
    # own text (e.g. Hermes's ``sessions.system_prompt``), every such value of them.
    columns: tuple[tuple[str, str], ...] = ()
    # The marker of a prefixed string keeps the prefix, where the importer types a text by
    # it (Letta Code's ``<system-reminder>`` blocks, typed as context, not the user's).
    keep_prefix: bool = False


def marker(agent: str, text: str) -> str:
    return f"[{agent}'s own prompt text, {len(text)} characters, left out of the fixture]"


def _scrub(value: Any, agent: str, rule: OwnText, whole: bool) -> tuple[Any, int]:
    if isinstance(value, str):
        prefixed = bool(rule.prefixes) and value.lstrip().startswith(rule.prefixes)
        own = len(value) >= rule.min_chars and (whole or prefixed)
        if not own:
            return value, 0
        kept = next((p for p in rule.prefixes if value.lstrip().startswith(p)), "")
        return (kept if rule.keep_prefix else "") + marker(agent, value), 1
    if isinstance(value, dict):
        count = 0
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[key], n = _scrub(item, agent, rule, whole or key in rule.fields)
            count += n
        return out, count
    if isinstance(value, list):
        items = [_scrub(item, agent, rule, whole) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    return value, 0


def _lines(text: str, agent: str, rule: OwnText) -> tuple[str, int]:
    out, count = [], 0
    for line in text.split("\n"):
        try:
            record = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            out.append(line)
            continue
        scrubbed, n = _scrub(record, agent, rule, rule.records(record))
        out.append(json.dumps(scrubbed, ensure_ascii=False, separators=(",", ":")) if n else line)
        count += n
    return "\n".join(out), count


def scrub_file(path: Path, agent: str, rule: OwnText) -> int:
    """The agent's own text in one JSON or JSON Lines file replaced; how many strings.
    A file rewritten keeps its layout (one record per line, or indented as it was)."""
    text = path.read_text(encoding="utf-8")
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        scrubbed, count = _lines(text, agent, rule)
    else:
        whole = isinstance(document, dict) and rule.records(document)
        value, count = _scrub(document, agent, rule, whole)
        indent = 2 if "\n" in text.strip() else None
        scrubbed = json.dumps(value, ensure_ascii=False, indent=indent)
        scrubbed += "\n" if text.endswith("\n") else ""
    if count:
        path.write_text(scrubbed, encoding="utf-8")
    return count


def scrub_db(path: Path, agent: str, rule: OwnText) -> int:
    """The agent's own text in the rule's columns of one SQLite database replaced; how many
    values. The database is vacuumed after, so the replaced text leaves its free pages, and
    taken out of WAL mode (its -wal file folded in)."""
    count = 0
    db = sqlite3.connect(path)
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        for table, column in rule.columns:
            if table not in tables:
                continue
            rows = db.execute(
                f'SELECT rowid, "{column}" FROM "{table}" WHERE length("{column}") >= ?',
                (rule.min_chars,),
            ).fetchall()
            for rowid, value in rows:
                if isinstance(value, str):
                    db.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?',
                               (marker(agent, value), rowid))  # fmt: skip
                    count += 1
        if count:
            db.commit()
            db.execute("VACUUM")
        # Out of WAL mode: what the agent left in its -wal file is folded into the database,
        # and reading the fixture leaves no -wal/-shm files beside it.
        db.execute("PRAGMA journal_mode=DELETE")
    finally:
        db.close()
    return count


def scrub_tree(root: Path, agent: str, rule: OwnText) -> int:
    """Every JSON and JSON Lines file under ``root`` (SWE-agent's ``.traj`` is JSON), and
    every SQLite database when the rule names columns; how many strings were replaced."""
    paths = [path for path in sorted(root.rglob("*")) if path.is_file()]
    count = sum(scrub_file(path, agent, rule) for path in paths
                if path.suffix in (".json", ".jsonl", ".traj"))  # fmt: skip
    if rule.columns:
        count += sum(scrub_db(path, agent, rule) for path in paths if path.suffix == ".db")
    return count
