"""Simon Willison's LLM (PyPI ``llm``): ``llm prompt`` with tools given as Python functions
(``--functions``: a shell, file read, edit and write, our own code in ``$LLM_USER_PATH``),
run to the end of the tool chain, on a model of ``extra-openai-models.yaml`` whose
``api_base`` is the scripted server (the OpenAI Responses dialect, so that the model's
reasoning is kept).

Steps: the fix (the shell, a read, a read of a missing file: the function raises, an
exception LLM records with the result; the edit, a long output), then ``-c`` (continue the
latest conversation): the refund test (write), a turn interrupted (SIGINT) while its command
runs in ``llm chat -c`` (which logs each response as it comes, where ``llm prompt`` logs a
chain only at its end), a question after it, and a prompt with an image attached (``-a``).
LLM has no sub-agents, no compaction and no rename: a conversation's name is its first
prompt, cut. LLM 0.36 writes every response into ``$LLM_USER_PATH/logs.db`` (SQLite), in its
content-addressed tables (``threads``, ``turns``, ``messages``, ``parts``); no telemetry.
"""

from __future__ import annotations

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    IMAGE_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import (
    IMAGE_FILE,
    SLOW_PROMPT,
    WRITE_IMAGE,
    NamedTools,
    PlanScript,
    summary_asked,
)

TASK = RECORD_ROOT / "llm" / "shop"
HOME = RECORD_ROOT / "llm" / "home"
USER_PATH = HOME / ".config" / "io.datasette.llm"  # LLM's own folder on Linux
MODEL = "scripted-model"
TOOLS_FILE = HOME / "tools.py"

# The tools LLM is given: plain Python functions, their docstrings the tools' descriptions.
TOOLS = f'''import pathlib
import subprocess

TASK = {str(TASK)!r}


def shell(command: str) -> str:
    """Run a shell command in the project folder; its output and exit status."""
    done = subprocess.run(command, shell=True, cwd=TASK, capture_output=True, text=True)
    return f"{{done.stdout}}{{done.stderr}}exit status {{done.returncode}}"


def read_file(path: str) -> str:
    """The text of a file."""
    return pathlib.Path(path).read_text()


def edit_file(path: str, old: str, new: str) -> str:
    """Replace old text by new text in a file."""
    file = pathlib.Path(path)
    file.write_text(file.read_text().replace(old, new, 1))
    return f"edited {{path}}"


def write_file(path: str, content: str) -> str:
    """Write a file."""
    pathlib.Path(path).write_text(content)
    return f"wrote {{path}}"
'''


def _script() -> PlanScript:
    return PlanScript(
        NamedTools(
            TASK,
            "call_",
            ("shell", "command"),
            ("read_file", "path"),
            ("write_file", "path", "content"),
            ("edit_file", "path", "old", "new"),
        ),
        summary_asked,
    )


def _prepare(ctx: RunContext) -> None:
    USER_PATH.mkdir(parents=True, exist_ok=True)
    (USER_PATH / "extra-openai-models.yaml").write_text(
        f"- model_id: {MODEL}\n"
        f"  model_name: {MODEL}\n"
        f"  api_base: {ctx.base_url}/v1\n"
        "  api_key_name: scripted\n"
        "  responses: true\n"
        "  supports_tools: true\n"
        "  vision: true\n"
    )
    # The fake key, as `llm keys set scripted` stores it (left out of the recording).
    (USER_PATH / "keys.json").write_text(f'{{"scripted": "{ctx.key}"}}\n')
    TOOLS_FILE.write_text(TOOLS)


def _env(ctx: RunContext) -> dict[str, str]:
    return {"LLM_USER_PATH": str(USER_PATH)}


_PROMPT = ("{bin}", "prompt", "-m", MODEL, "--functions", str(TOOLS_FILE), "--cl", "20")

RECIPE = Recipe(
    agent="llm",
    package="llm",
    version="0.36",
    ecosystem="pypi",
    bin="bin/llm",
    format="llm",
    session_dir=".config/io.datasette.llm",
    python="3.12",
    steps=(
        Step("fix", (*_PROMPT, FIX_PROMPT)),
        Step("refunds", (*_PROMPT, "-c", REFUND_PROMPT)),
        Step(
            "interrupt",
            ("{bin}", "chat", "-m", MODEL, "--functions", str(TOOLS_FILE), "--cl", "20", "-c"),
            stdin=SLOW_PROMPT + "\n",
            interrupt_after=20.0,
        ),
        Step("after", (*_PROMPT, "-c", AFTER_COMPACT_PROMPT)),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_PROMPT, "-c", IMAGE_PROMPT, "-a", f"{{task}}/{IMAGE_FILE}")),
    ),
    script=_script,
    env=_env,
    prepare=_prepare,
    # LLM's settings (the fake key, the model's endpoint); logs.db is the history.
    exclude=("keys.json", "extra-openai-models.yaml"),
    expect={
        "sessions": 1,
        "events": {"message/user": 4, "message/assistant": 11, "tool/call": 6, "tool/result": 6},
        # The read of the missing file: the function raised, LLM kept the exception.
        "tool_errors": 1,
        "skipped": {"part:attachment": 1},
        # LLM names a conversation after its first prompt, cut (``_conversation_name``).
        "titles": ["The test in test_ledger.py fail…"],
        "whole": True,
    },
    note="The interrupted turn left nothing: LLM logs a chain when it is done (`llm prompt`)"
    " or each response after its tools ran (`llm chat`); SIGINT stopped it before either.",
)
