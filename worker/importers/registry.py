"""The importers on this machine: every class registered under the entry-point group
``sessionquery.importers``, the built-in formats included (``pyproject.toml``).

The built-ins are also listed here (``BUILT_IN``, kept equal to ``pyproject.toml`` by a
test) so a checkout whose package metadata predates an importer still has it; they are
:class:`Importer` classes like any plug-in, and ``import --format``, ``watch`` and
auto-detection see one list. A plug-in that fails to load is left out with one line on
stderr naming it and the exception's class (never its text): one broken package must
not take the others down with it. A plug-in may not take a built-in's name.
"""

from __future__ import annotations

import functools
import importlib
import sys
from importlib.metadata import entry_points
from typing import Final

from worker.importers.plugin import Importer
from worker.importers.publish import ImportFailed

GROUP: Final = "sessionquery.importers"
# name -> "module:class" of the importers shipped with the worker.
BUILT_IN: Final = {
    "events": "worker.importers.builtin:EventsImporter",
    "claude-code": "worker.importers.builtin:ClaudeCodeImporter",
    "codex": "worker.importers.builtin:CodexImporter",
    "aider": "worker.importers.builtin:AiderImporter",
    "gemini-cli": "worker.importers.gemini_cli:GeminiCliImporter",
    "qwen-code": "worker.importers.qwen_code:QwenCodeImporter",
    "copilot-cli": "worker.importers.copilot_cli:CopilotCliImporter",
    "pi": "worker.importers.pi:PiImporter",
    "cursor": "worker.importers.cursor:CursorImporter",
    "droid": "worker.importers.droid:DroidImporter",
    "opencode": "worker.importers.whole_sources:OpenCodeImporter",
    "kilo": "worker.importers.whole_sources:KiloImporter",
    "goose": "worker.importers.whole_sources:GooseImporter",
    "cline": "worker.importers.whole_sources:ClineImporter",
    "cline-cli": "worker.importers.cline_cli:ClineCliImporter",
    "roo-code": "worker.importers.whole_sources:RooCodeImporter",
    "openhands": "worker.importers.whole_sources:OpenHandsImporter",
    "vscode-copilot": "worker.importers.whole_sources:VSCodeCopilotImporter",
    "amp": "worker.importers.amp:AmpImporter",
    "amazon-q": "worker.importers.amazon_q:AmazonQImporter",
    "kiro-cli": "worker.importers.amazon_q:KiroCliImporter",
    "zed": "worker.importers.zed:ZedImporter",
    "hermes": "worker.importers.hermes:HermesImporter",
    "openclaw": "worker.importers.openclaw:OpenClawImporter",
    "auggie": "worker.importers.auggie:AuggieImporter",
    "crush": "worker.importers.crush:CrushImporter",
    "continue": "worker.importers.continue_cli:ContinueImporter",
    "vibe": "worker.importers.vibe:VibeImporter",
    "kimi": "worker.importers.kimi:KimiImporter",
    "gptme": "worker.importers.gptme:GptmeImporter",
    "qoder": "worker.importers.qoder:QoderImporter",
    "codebuff": "worker.importers.codebuff:CodebuffImporter",
    "letta-code": "worker.importers.letta_code:LettaCodeImporter",
    "llm": "worker.importers.llm:LlmImporter",
    "mini-swe-agent": "worker.importers.mini_swe_agent:MiniSweAgentImporter",
    "open-interpreter": "worker.importers.open_interpreter:OpenInterpreterImporter",
    "nanocoder": "worker.importers.nanocoder:NanocoderImporter",
    "code-puppy": "worker.importers.code_puppy:CodePuppyImporter",
    "swe-agent": "worker.importers.swe_agent:SweAgentImporter",
    "trae-agent": "worker.importers.trae_agent:TraeAgentImporter",
    "nanobot": "worker.importers.nanobot:NanobotImporter",
}


class UnknownFormat(ImportFailed, ValueError):
    """A format no importer here has (a converter asked by name, outside ``--format``)."""


def _built_in(target: str) -> Importer:
    module, _, attr = target.partition(":")
    importer: Importer = getattr(importlib.import_module(module), attr)()
    return importer


@functools.cache
def importers() -> dict[str, Importer]:
    """Name -> importer, in auto-detection order (then by name)."""
    found = {name: _built_in(target) for name, target in BUILT_IN.items()}
    for point in entry_points(group=GROUP):
        if BUILT_IN.get(point.name) == point.value:
            continue  # a built-in's own registration
        if point.name in found:
            print(f"importers: plug-in {point.name!r} ignored: the name is taken",
                  file=sys.stderr)  # fmt: skip
            continue
        try:
            loaded = point.load()
            importer = loaded() if isinstance(loaded, type) else loaded
        except Exception as exc:  # any plug-in bug: leave it out, say which
            print(f"importers: plug-in {point.name!r} not loaded ({type(exc).__name__})",
                  file=sys.stderr)  # fmt: skip
            continue
        if not isinstance(importer, Importer) or importer.name != point.name:
            print(f"importers: plug-in {point.name!r} is not an Importer of that name; ignored",
                  file=sys.stderr)  # fmt: skip
            continue
        found[point.name] = importer
    return dict(sorted(found.items(), key=lambda item: (item[1].detect_order, item[0])))


def names() -> list[str]:
    return list(importers())


def get(name: str) -> Importer:
    try:
        return importers()[name]
    except KeyError:
        raise UnknownFormat(f"unknown format {name!r} (known: {', '.join(names())})") from None
