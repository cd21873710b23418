"""The whole-source importers as registered: detection, default folders (and the
environment variables that move them), the folders a path stands for, Kilo's database."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.importers import gen_cline, gen_goose, gen_opencode, gen_openhands, gen_vscode_copilot
from worker.importers import registry
from worker.importers.detect import detect, expand
from worker.importers.plugin import ConvertOptions


def test_each_source_is_detected_as_its_agent(tmp_path: Path) -> None:
    history = gen_opencode.corpus()
    (tmp_path / "opencode").mkdir()
    gen_opencode.write_database(tmp_path / "opencode" / "opencode.db", history)
    gen_opencode.write_tree(tmp_path / "opencode" / "storage", history)
    (tmp_path / "kilo").mkdir()
    gen_opencode.write_database(tmp_path / "kilo" / "kilo.db", history)
    gen_goose.write_database(tmp_path / "sessions.db")
    cline = gen_cline.write_cline(tmp_path)
    roo = gen_cline.write_roo(tmp_path)
    chat = gen_vscode_copilot.write_document(tmp_path)
    assert detect(tmp_path / "opencode" / "opencode.db") == "opencode"
    assert detect(tmp_path / "opencode" / "storage") == "opencode"
    assert detect(tmp_path / "kilo" / "kilo.db") == "kilo"
    assert detect(tmp_path / "sessions.db") == "goose"
    older = gen_goose.write_session_file(tmp_path / "goose" / "sessions")
    assert detect(older) == "goose"
    assert list(expand([tmp_path / "goose"], "goose")) == [older]
    assert detect(cline / gen_cline.CLINE_TASK) == "cline"
    assert detect(roo / gen_cline.ROO_TASK) == "roo-code"
    assert detect(gen_openhands.write_sdk(tmp_path)) == "openhands"
    assert detect(chat) == "vscode-copilot"
    # A folder stands for the sources below it, each found by its own importer.
    assert list(expand([tmp_path], "opencode")) == [
        tmp_path / "opencode" / "opencode.db",
        tmp_path / "opencode" / "storage",
    ]
    assert list(expand([tmp_path], "roo-code")) == sorted(roo.iterdir())
    assert list(expand([cline / gen_cline.CLINE_TASK], "cline")) == [cline / gen_cline.CLINE_TASK]


def test_default_folders_follow_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GOOSE_PATH_ROOT", raising=False)
    assert registry.get("opencode").default_locations() == [tmp_path / "data" / "opencode"]
    assert registry.get("kilo").default_locations() == [tmp_path / "data" / "kilo"]
    assert registry.get("goose").default_locations() == [tmp_path / "data" / "goose" / "sessions"]
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(tmp_path / "goose"))
    assert registry.get("goose").default_locations() == [tmp_path / "goose" / "data" / "sessions"]
    cline = registry.get("cline").default_locations()
    assert tmp_path / "config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks" in cline
    assert tmp_path / "home" / ".cline" / "data" / "tasks" in cline
    roo = registry.get("roo-code").default_locations()
    assert tmp_path / "config/Code/User/globalStorage/kilocode.kilo-code/tasks" in roo
    assert registry.get("openhands").default_locations()[0] == (
        tmp_path / "home" / ".openhands" / "conversations"
    )
    assert tmp_path / "config/Cursor/User/workspaceStorage" in (
        registry.get("vscode-copilot").default_locations()
    )


def test_kilo_reads_opencode_schema_under_its_own_name(tmp_path: Path) -> None:
    db = tmp_path / "kilo.db"
    gen_opencode.write_database(db, gen_opencode.corpus())
    importer = registry.get("kilo")
    converter = importer.converter(db, ConvertOptions())
    records = list(importer.records(db))
    assert len(records) == 1 and list(importer.records(db, after=records[0].position)) == []
    starts = [orjson.loads(o.body) for o in converter.feed(1, records[0].data)]
    assert {e["payload"]["source"] for e in starts if e["type"] == "session/start"} == {"kilo"}
    assert len(starts) == 23


def test_kilo_finds_a_channel_database_and_kilo_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kilo CLI (its binary 7.7.9) keeps ``kilo.db`` for the latest, beta and prod
    channels, ``kilo-<channel>.db`` for the others (or an existing ``opencode-<channel>.db``
    there), and ``$KILO_DB`` (absolute, or a name in its data folder) wins."""
    folder = tmp_path / "data" / "kilo"
    folder.mkdir(parents=True)
    for name in ("kilo.db", "kilo-dev.db", "opencode-nightly.db"):
        gen_opencode.write_database(folder / name, gen_opencode.corpus())
    found = [folder / "kilo-dev.db", folder / "kilo.db", folder / "opencode-nightly.db"]
    assert list(expand([folder], "kilo")) == found
    assert [detect(path) for path in found] == ["kilo"] * 3
    assert list(expand([folder], "opencode")) == []  # OpenCode's own are opencode.db
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("KILO_DB", "mine.db")
    assert registry.get("kilo").default_locations() == [folder / "mine.db"]
    monkeypatch.setenv("KILO_DB", str(tmp_path / "elsewhere.db"))
    assert registry.get("kilo").default_locations() == [tmp_path / "elsewhere.db"]
    monkeypatch.setenv("KILO_DB", ":memory:")
    assert registry.get("kilo").default_locations() == [folder]
