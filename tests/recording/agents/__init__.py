"""One :class:`Recipe` per agent, in ``agents/<agent>.py`` as ``RECIPE`` (collected by
:func:`recipes`, so adding an agent is adding a file), and the synthetic task they all work on."""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tests.recording.script import Script
from tests.recording.scrub import OwnText

# Where agents are installed (outside the repository, reused between recordings).
AGENTS_CACHE = Path("/tmp/sq-agents")
# Fixed synthetic paths, so a re-recording writes the same absolute paths into the files.
RECORD_ROOT = Path("/tmp/sq-record")


@dataclass(frozen=True)
class RunContext:
    """What a recipe's env and steps are built from, for one run."""

    home: Path
    task: Path
    base_url: str  # the scripted server, e.g. http://127.0.0.1:PORT
    key: str  # the fake key the server accepts
    bin: Path  # the agent's executable
    outputs: Mapping[str, str] = field(default_factory=dict)  # earlier steps' stdout by name


@dataclass(frozen=True)
class Step:
    """One invocation of the agent. ``argv`` entries are formatted with ``bin``, ``task``,
    ``home``, ``base_url`` (the scripted server), ``key`` (its fake key) and with what
    ``Recipe.captures`` took from earlier steps (e.g. ``session_id``)."""

    name: str
    argv: tuple[str, ...]
    timeout: float = 240.0
    stdin: str | None = None  # what the step reads on stdin (e.g. a stream-json message)
    # Seconds after which the agent gets SIGINT (an aborted turn, as Ctrl-C makes it); its
    # exit status is then not a failure.
    interrupt_after: float | None = None


@dataclass(frozen=True)
class Recipe:
    agent: str  # the folder name under tests/importers/recorded/
    package: str
    version: str
    ecosystem: Literal["npm", "pypi"]
    bin: str  # the executable, relative to the install dir
    format: str  # the importer format that reads the session files
    session_dir: str  # where the agent writes its sessions, relative to HOME
    steps: tuple[Step, ...]
    script: Callable[[], Script]
    env: Callable[[RunContext], dict[str, str]]
    # Values later steps' argv use, read from a finished step's stdout: name -> reader.
    captures: Mapping[str, Callable[[str], str | None]] = field(default_factory=dict)
    node: str | None = None  # a Node major version the agent needs (installed from npm)
    # The Python version (e.g. "3.13") a PyPI agent's venv is made with, when it needs
    # another than the one running the recorder (Vibe needs 3.12, Kimi CLI 3.13 here).
    python: str | None = None
    # Packages a PyPI agent needs in its venv beside what it declares (e.g. a setuptools
    # that still has pkg_resources, which Open Interpreter imports without declaring it).
    extra_packages: tuple[str, ...] = ()
    expect: Mapping[str, Any] = field(default_factory=dict)  # RECORDED.json's expect
    # Files the agent writes under session_dir that are not sessions (settings, caches).
    exclude: tuple[str, ...] = ()
    # Run inside, before the first step: e.g. the agent's settings file in HOME.
    prepare: Callable[[RunContext], None] | None = None
    note: str = ""  # what RECORDED.json should say about this recording
    # A PyPI agent whose pinned requirements the registry no longer offers: pin -> the one
    # installed instead (its requirements are then installed, with these, apart from it).
    requirement_swaps: Mapping[str, str] = field(default_factory=dict)
    # A PyPI-ecosystem agent no registry publishes: the folder holding its source (a checkout
    # made beforehand), which pip installs in place of ``package==version``.
    source: Path | None = None
    # The agent's own prompt text its files copy: left out of the fixture (scrub.py).
    own_text: OwnText = field(default_factory=OwnText)

    @property
    def install_dir(self) -> Path:
        return AGENTS_CACHE / f"{self.agent}-{self.version}"

    @property
    def executable(self) -> Path:
        return self.install_dir / self.bin

    @property
    def record_dir(self) -> Path:
        return RECORD_ROOT / self.agent

    @property
    def home(self) -> Path:
        return self.record_dir / "home"

    @property
    def task(self) -> Path:
        return self.record_dir / "shop"


def session_id_of(stdout: str) -> str | None:
    """The ``session_id`` of the last JSON line that names one (an agent's JSON output,
    e.g. ``claude -p --output-format stream-json``, ``droid exec -o json``)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line).get("session_id")
        except (ValueError, AttributeError):
            continue
        if isinstance(value, str):
            return value
    return None


def recipes() -> dict[str, Recipe]:
    found: dict[str, Recipe] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        recipe = getattr(module, "RECIPE", None)
        if isinstance(recipe, Recipe):
            found[recipe.agent] = recipe
    return found


# The synthetic task: a ledger whose balance skips the first entry, and its failing test.
LEDGER = '''"""A tiny ledger of amounts."""


class Ledger:
    def __init__(self) -> None:
        self.entries: list[int] = []

    def add(self, amount: int) -> None:
        self.entries.append(amount)

    def refund(self, amount: int) -> None:
        self.entries.append(-amount)

    def balance(self) -> int:
        return sum(self.entries[1:])
'''
LEDGER_BUG = "return sum(self.entries[1:])"
LEDGER_FIX = "return sum(self.entries)"
TEST_LEDGER = """import unittest

from ledger import Ledger


class LedgerTest(unittest.TestCase):
    def test_balance(self) -> None:
        ledger = Ledger()
        ledger.add(5)
        ledger.add(7)
        self.assertEqual(ledger.balance(), 12)


if __name__ == "__main__":
    unittest.main()
"""
TEST_REFUNDS = """import unittest

from ledger import Ledger


class RefundTest(unittest.TestCase):
    def test_refund(self) -> None:
        ledger = Ledger()
        ledger.add(10)
        ledger.refund(4)
        self.assertEqual(ledger.balance(), 6)


if __name__ == "__main__":
    unittest.main()
"""
TASK_FILES = {"ledger.py": LEDGER, "test_ledger.py": TEST_LEDGER}

# The prompts, in order: the scripts recognise each by these words.
FIX_PROMPT = "The test in test_ledger.py fails. Please find the bug in ledger.py and fix it."
REFUND_PROMPT = "Thanks. Also add a test for refunds, in test_refunds.py."
AFTER_COMPACT_PROMPT = "What did we change in this session? One line, please."
IMAGE_PROMPT = "What does this image show?"
# A 2x2 red PNG: the smallest image an agent accepts as an attachment.
RED_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5E"
    "rkJggg=="
)
SUBAGENT_PROMPT = (
    "Check how ledger.py handles refunds: find the refund method and report in one sentence "
    "whether it subtracts the amount."
)
MISSING_FILE = "NOTES.md"  # read by the script, absent from the task: a tool error
SUMMARY = (
    "<analysis>The user asked to fix a failing ledger test and then to add a refund test."
    "</analysis>\n<summary>1. Fixed Ledger.balance in ledger.py, which skipped the first "
    "entry (sum(self.entries[1:]) became sum(self.entries)); test_ledger.py passes.\n"
    "2. Added test_refunds.py with a refund test.\n3. A helper agent confirmed refund() "
    "subtracts the amount.</summary>"
)


def write_task(task: Path) -> None:
    task.mkdir(parents=True, exist_ok=True)
    for name, text in TASK_FILES.items():
        (task / name).write_text(text)
