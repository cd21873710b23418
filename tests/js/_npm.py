"""Node for the protocol tests: the packages in tests/js/package.json, installed with npm
into a temporary directory once per test session (never into the repository)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
INSTALL_LIMIT_S = 300
# npm's messages when the registry cannot be reached at all (offline CI): skip, not fail.
_OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH")

_installed: dict[str, Path] = {}


def node_workdir(factory: pytest.TempPathFactory) -> Path:
    """A directory holding package.json, node_modules and the .mjs scripts, or a skip with
    the reason when node or npm is missing or the registry is unreachable."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node/npm not installed (node={node}, npm={npm})")
    if "dir" in _installed:
        return _installed["dir"]
    work = factory.mktemp("node")
    for source in HERE.iterdir():
        if source.suffix in (".json", ".mjs"):
            shutil.copy2(source, work / source.name)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=INSTALL_LIMIT_S,
    )
    if done.returncode != 0:
        if any(code in done.stderr for code in _OFFLINE):
            pytest.skip(f"npm install could not reach the registry: {done.stderr[-300:]}")
        raise AssertionError(f"npm install failed:\n{done.stderr}")
    _installed["dir"] = work
    return work
