"""A workspace named by a ``file://`` URI on Windows (``file:///c%3A/Users/...``, as VS Code
writes it in ``workspace.json``; seen in real homes) gives the path Windows programs report
as their cwd (``C:\\Users\\...``), not the URI's path (``/c:/Users/...``)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.importers import gen_amp, gen_continue
from tests.importers._corpus import bodies
from worker.importers.base import file_uri_path
from worker.importers.pipeline import convert_file


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        (
            "file:///c%3A/Users/dev/My%20Project",
            "C:\\Users\\dev\\My Project",
        ),
        ("file:///C:/work", "C:\\work"),
        ("file:///d%3A/", "D:\\"),
        ("file://server/share/project", "\\\\server\\share\\project"),
        ("file:///home/me/src/app", "/home/me/src/app"),
        ("file:///Users/me/My%20App", "/Users/me/My App"),
        ("vscode-remote://ssh-remote%2Bbox/home/me", None),
        ("file://", None),
    ],
)
def test_a_file_uri_is_the_path_its_platform_names(uri: str, path: str | None) -> None:
    assert file_uri_path(uri) == path


def test_a_vscode_chat_in_a_windows_workspace_has_its_windows_cwd(tmp_path: Path) -> None:
    storage = tmp_path / "workspaceStorage" / "5f0c0de5f0c0de5f0c0de5f0c0de5f0c"
    (storage / "chatSessions").mkdir(parents=True)
    (storage / "workspace.json").write_bytes(
        orjson.dumps({"folder": "file:///c%3A/Users/dev/project"})
    )
    chat = storage / "chatSessions" / "00000000-0000-4000-8000-00000000c0de.json"
    chat.write_bytes(orjson.dumps({
        "version": 3, "sessionId": "00000000-0000-4000-8000-00000000c0de",
        "creationDate": 1765000000000, "lastMessageDate": 1765000000000,
        "requesterUsername": "me", "responderUsername": "GitHub Copilot",
        "initialLocation": "panel", "isImported": False, "requests": []}))  # fmt: skip
    start = bodies(convert_file("vscode-copilot", chat)[0])[0]
    assert start["payload"]["cwd"] == "C:\\Users\\dev\\project"


def test_an_amp_thread_in_a_windows_tree_has_its_windows_cwd(tmp_path: Path) -> None:
    thread = gen_amp.main_thread()
    thread["env"]["initial"]["trees"][0]["uri"] = "file:///c%3A/Users/dev/tides"
    path = gen_amp.write_thread(tmp_path / ".local" / "share" / "amp" / "threads", thread)
    start = bodies(convert_file("amp", path)[0])[0]
    assert start["payload"]["cwd"] == "C:\\Users\\dev\\tides"


def test_a_continue_session_in_a_windows_workspace_has_its_windows_cwd(tmp_path: Path) -> None:
    folder = tmp_path / ".continue" / "sessions"
    uri = "file:///c%3A/Users/dev/app"
    path = gen_continue.write_session(folder, "s-1", "t", uri, gen_continue.main_history())
    start = bodies(convert_file("continue", path)[0])[0]
    assert start["payload"]["cwd"] == "C:\\Users\\dev\\app"
