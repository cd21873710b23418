"""The README's quick start, executed as written in a fresh copy of the repository.

The two ``sh`` blocks under "## Quick start" are taken from README.md as text: the first
(``make run``) is started in the background, the second runs in order in one shell once the
worker serves, then the ``try:`` line ``make run`` printed is run as pasted. The copy reuses
this test run's venv (a ``.venv`` symlink, and ``STAMPS`` pointing make's install stamps at
a fresh directory so nothing is reinstalled) and runs against the embedded default: no
``NATS_URL``, state under the copy's own ``./.sessionquery``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
START_LIMIT_S = 120.0
STEP_LIMIT_S = 120.0
README_URL = "nats://127.0.0.1:4222"


def quickstart_blocks(readme: str) -> list[str]:
    """The fenced ``sh`` blocks of the "## Quick start" section, in order."""
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)


def test_the_readme_has_the_two_quickstart_blocks() -> None:
    blocks = quickstart_blocks((ROOT / "README.md").read_text())
    assert len(blocks) == 2
    assert blocks[0].split("#")[0].strip() == "make run"
    assert README_URL in blocks[1]


def test_the_readme_says_what_a_newcomer_needs() -> None:
    readme = (ROOT / "README.md").read_text()
    for needed in ("Python ≥ 3.11", "`purge`", "`--home", "`--embedded-port", "docs/protocol.md"):
        assert needed in readme, needed


def test_no_file_of_the_repository_refers_to_a_design_file_outside_it() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    # Spelled in two pieces so this file does not match itself.
    outside = ("DESIGN" + ".md", "../" + "shared")
    offenders = [
        rel
        for rel in filter(None, listed.split("\0"))
        if (ROOT / rel).is_file()
        and any(word in (ROOT / rel).read_text(errors="replace") for word in outside)
    ]
    assert offenders == []


def test_help_says_what_the_program_does() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout.startswith("usage: sessionquery")
    assert "read-only tools that let language models search" in " ".join(done.stdout.split())
    assert "docs/protocol.md" in done.stdout
    assert "Each subcommand lives" not in done.stdout  # the developer note stays in the code


def _venv() -> Path:
    venv = Path(os.environ.get("SESSIONQUERY_QUICKSTART_VENV", Path(sys.executable).parent.parent))
    if not (venv / "bin" / "sessionquery").exists():
        pytest.skip(
            f"no installed sessionquery in {venv} to reuse (set SESSIONQUERY_QUICKSTART_VENV)"
        )
    return venv


def _fresh_copy(dest: Path) -> None:
    """The repository's tracked and untracked-but-not-ignored files, as a clone would have
    them plus uncommitted work; no venv, no state."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if source.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _env(stamps: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NATS_", "SESSIONQUERY_", "VIRTUAL_ENV"))
    }
    env["STAMPS"] = str(stamps)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Running:
    url: str
    try_line: str
    output: list[str]


@pytest.fixture
def repo_copy(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = _venv()
    repo = tmp_path / "repo"
    _fresh_copy(repo)
    (repo / ".venv").symlink_to(venv, target_is_directory=True)
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    # Newer than the copied pyproject.toml: make treats the reused venv as installed.
    for name in (".installed-run", ".installed-test"):
        (stamps / name).touch()
    yield repo, _env(stamps)


def _start(block: str, repo: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], Running]:
    process = subprocess.Popen(
        ["bash", "-c", block],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    running = Running(url="", try_line="", output=[])
    assert process.stdout is not None
    deadline = time.monotonic() + START_LIMIT_S
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        running.output.append(line)
        if match := re.search(r"export NATS_URL=(\S+)", line):
            running.url = match.group(1)
        if "sessionquery call" in line and not running.try_line:
            running.try_line = line.strip()
        if line.startswith("serving the five"):
            return process, running
    _stop(process)
    raise AssertionError("make run did not start serving:\n" + "".join(running.output))


def _stop(process: subprocess.Popen[str]) -> bool:
    """Ctrl-C as a terminal sends it (SIGINT to the process group); False if it had to be
    killed."""
    if process.poll() is not None:
        return True
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return False
    return True


def _shell(script: str, repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_LIMIT_S,
    )


def test_the_readme_quickstart_works_as_written(repo_copy: tuple[Path, dict[str, str]]) -> None:
    repo, env = repo_copy
    first, second = quickstart_blocks((repo / "README.md").read_text())
    process, running = _start(first, repo, env)
    try:
        assert running.url.startswith("nats://127.0.0.1:"), running.output
        # Port 4222 may be taken on a shared machine: then make run printed another URL,
        # which the README tells the reader to use.
        script = second.replace(README_URL, running.url)
        done = _shell(script, repo, env)
        assert done.returncode == 0, done.stdout + done.stderr
        out = done.stdout
        assert '"name":"session_search"' in out.replace(" ", "")  # the manifest
        assert "Fix flaky refund idempotency test" in out  # the sample search
        assert "Fix the greeting's timezone bug" in out  # the imported session, found
        # The line make run printed, pasted into a shell with nothing on PATH or in env.
        assert running.try_line, running.output
        pasted = _shell(running.try_line, repo, env)
        assert pasted.returncode == 0, pasted.stderr
        assert "Fix flaky refund idempotency test" in pasted.stdout
    finally:
        stopped = _stop(process)
    assert stopped, "make run did not stop on Ctrl-C"
