"""Every kind an importer skips in the shapes its agent writes has a reason: what the
summary, ``watch`` and ``status`` call unknown is only ever drift.

Each format's generated history (the shapes read from the agent's writer) is converted as
``import`` converts it; the only unknown kinds allowed are the ones a generator writes on
purpose to stand for a future version's records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.importers import (
    gen_amazon_q,
    gen_amp,
    gen_auggie,
    gen_cline,
    gen_code_puppy,
    gen_codebuff,
    gen_continue,
    gen_copilot_cli,
    gen_crush,
    gen_cursor,
    gen_droid,
    gen_gemini_cli,
    gen_goose,
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
    gen_openhands,
    gen_pi,
    gen_qoder,
    gen_qwen_code,
    gen_swe_agent,
    gen_trae_agent,
    gen_vibe,
    gen_vscode_copilot,
    gen_zed,
)
from worker.importers import registry
from worker.importers.base import SpawnLinks, Tally
from worker.importers.detect import expand
from worker.importers.pipeline import convert_file


def _goose(home: Path) -> Path:
    gen_goose.write_database(home / "sessions.db")
    return home / "sessions.db"


WRITERS: dict[str, Callable[[Path], Path]] = {
    "auggie": gen_auggie.write,
    "hermes": gen_hermes.write_home,
    "openclaw": gen_openclaw.write,
    "cline": gen_cline.write_cline,
    "roo-code": gen_cline.write_roo,
    "copilot-cli": gen_copilot_cli.write_home,
    "cursor": gen_cursor.write,
    "droid": gen_droid.write,
    "gemini-cli": gen_gemini_cli.write,
    "goose": _goose,
    "openhands": gen_openhands.write_sdk,
    "pi": gen_pi.write,
    "qwen-code": gen_qwen_code.write,
    "vscode-copilot": gen_vscode_copilot.write_log,
    "amp": gen_amp.write,
    "amazon-q": lambda home: gen_amazon_q.write(home)["amazon-q"],
    "kiro-cli": lambda home: gen_amazon_q.write(home)["kiro-cli"],
    "zed": gen_zed.write_home,
    "crush": gen_crush.write,
    "continue": gen_continue.write,
    "vibe": gen_vibe.write,
    "kimi": gen_kimi.write,
    "gptme": gen_gptme.write,
    "qoder": gen_qoder.write,
    "codebuff": gen_codebuff.write,
    "letta-code": gen_letta_code.write,
    "llm": gen_llm.write,
    "mini-swe-agent": gen_mini_swe_agent.write,
    "open-interpreter": gen_open_interpreter.write,
    "nanocoder": gen_nanocoder.write,
    "code-puppy": gen_code_puppy.write,
    "swe-agent": gen_swe_agent.write,
    "trae-agent": gen_trae_agent.write,
    "nanobot": gen_nanobot.write,
}
# Records the generators write to stand for an agent's next version.
DELIBERATE: dict[str, set[str]] = {
    "gemini-cli": {"record:unknown"},
    "pi": {"record:future_entry:new"},
    "gptme": {"message:developer"},
    "qoder": {"record:hologram"},
}


def converted_tally(fmt: str, root: Path) -> Tally:
    importer, links, tally = registry.get(fmt), SpawnLinks(), Tally()
    for path in expand([root], fmt):
        _, file_tally = convert_file(fmt, path, links=links)
        file_tally.explain(importer.skip_reason)
        tally.merge(file_tally)
    return tally


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_generated_history_skips_only_explained_kinds(fmt: str, tmp_path: Path) -> None:
    tally = converted_tally(fmt, WRITERS[fmt](tmp_path))
    assert tally.events > 0
    assert set(tally.unknown) <= DELIBERATE.get(fmt, set()), tally.unknown


def test_an_unexplained_kind_is_unknown(tmp_path: Path) -> None:
    tally = Tally()
    tally.skip("record:session.resume")
    tally.skip("record:never-heard-of")
    tally.explain(registry.get("copilot-cli").skip_reason)
    assert tally.unknown == Counter({"record:never-heard-of": 1})
