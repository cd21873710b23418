"""SWE-agent (``SWE-agent/SWE-agent``, package ``sweagent`` 1.1.0; the registry's
``sweagent`` is a placeholder, so the venv at ``/tmp/sq-agents/swe-agent-1.1.0`` is installed
from a checkout of that version, its dependencies from the registry): ``sweagent run``
with its default config (function calling: ``bash``, ``str_replace_editor``; ``submit``
instead of the reviewing submit, which asks to submit twice) and a LiteLLM model
``openai/scripted-model`` whose ``api_base`` is the scripted server, cost limits off (the
scripted model has no price).

Its environment is SWE-ReX's local deployment (no Docker): commands run in a bash session
on this machine, in the task folder (no repository is copied: a local repository goes to
``/<name>``). The tools install into ``/root/tools`` and the run writes ``/root/state.json``
and ``/root/model.patch``: each step runs in a mount namespace whose ``/root`` is a tmpfs
(the pyenv the venv's Python lives in bound back), so nothing is written outside the
recording's folder. ``SWE_AGENT_CONFIG_DIR`` and ``SWE_AGENT_TOOLS_DIR`` name the checkout's
``config`` and ``tools``; ``SWE_AGENT_TRAJECTORY_DIR`` puts ``trajectories/<user>/<run>/``
in HOME.

Steps: the fix (a failing test run, a view of ledger.py and of a missing file, the edit, a
long test run, the submission); the refund test (another run: SWE-agent has no sessions to
continue, each instance run is one trajectory); a slow command SWE-agent cancels at its
``execution_timeout``; the refund prompt again with the retry agent (one attempt and a
chooser: ``attempt_0/<id>.traj`` and the file listing it). No sub-agents, compaction or
titles: SWE-agent has none.
"""

from __future__ import annotations

import json
import re

import yaml

from tests.recording.agents import (
    AGENTS_CACHE,
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import SLOW_PROMPT, NamedTools, PlanScript, summary_asked
from tests.recording.script import Conversation, Reply, ToolCall
from tests.recording.scrub import OwnText

VERSION = "1.1.0"
TASK = RECORD_ROOT / "swe-agent" / "shop"
CHECKOUT = AGENTS_CACHE / "swe-agent-src"  # the checkout the venv was installed from
CONFIG = "swe-agent.yaml"  # in HOME: the default config with the plain submit
RETRY_CONFIG = "swe-agent-retry.yaml"  # the same agent as the retry agent's one config
# The chooser's instructions (ours): the scripted model answers them with an index.
CHOOSER_ASKS = "Answer with the index of the patch to keep"
SESSIONS = "trajectories"
# The instance template wraps the task: <pr_description>TASK</pr_description>.
_TASK = re.compile(r"<pr_description>\s*(.*?)\s*</pr_description>", re.S)
# Each step in a mount namespace whose /root is a tmpfs, the pyenv bound back into it.
_PRIVATE_ROOT = (
    'set -e; keep="$HOME/../pyenv-keep"; mkdir -p "$keep"; '
    'mount --bind /root/.pyenv "$keep"; mount -t tmpfs tmpfs /root; '
    'mkdir /root/.pyenv; mount --bind "$keep" /root/.pyenv; exec "$@"'
)


class SweTools(NamedTools):
    """``bash`` for commands; ``str_replace_editor`` (``view``, ``create``,
    ``str_replace``) for files."""

    def read(self, step: str, name: str) -> ToolCall:
        return self.tool_call("str_replace_editor", step, command="view", path=self.path(name))

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        return self.tool_call("str_replace_editor", step, command="str_replace",
                              path=self.path(name), old_str=old, new_str=new)  # fmt: skip

    def write(self, step: str, name: str, content: str) -> ToolCall:
        return self.tool_call("str_replace_editor", step, command="create",
                              path=self.path(name), file_text=content)  # fmt: skip


def _task(text: str) -> tuple[str, ...]:
    found = _TASK.search(text)
    return (found.group(1),) if found else (text,)


class SweScript:
    """The plan; where it ends a turn with text alone, the text comes with ``submit`` (a
    reply without a call is a format error to SWE-agent's function calling)."""

    def __init__(self) -> None:
        self.tools = SweTools(
            TASK,
            "call_",
            ("bash", "command"),
            ("str_replace_editor", "path"),
            ("str_replace_editor", "path", "file_text"),
        )
        self.plan = PlanScript(self.tools, summary_asked, unfold=_task)

    def reply(self, conversation: Conversation) -> Reply:
        if not conversation.tools and conversation.mentions(CHOOSER_ASKS):
            return Reply(text="1")  # the retry run's chooser: the second attempt
        reply = self.plan.reply(conversation)
        if reply.tool_calls or not conversation.tools:
            return reply
        submit = self.tools.tool_call("submit", "submit")
        return Reply(text=reply.text, reasoning=reply.reasoning, tool_calls=(submit,))


def _model(ctx: RunContext) -> dict[str, object]:
    return {"name": "openai/scripted-model", "api_base": f"{ctx.base_url}/v1",
            "api_key": "$SCRIPTED_KEY", "per_instance_cost_limit": 0, "total_cost_limit": 0,
            "max_input_tokens": 0}  # fmt: skip


def _prepare(ctx: RunContext) -> None:
    """The default config with the plain ``submit`` bundle; the same agent as the one
    config of a retry agent with a chooser (one attempt: on the local deployment a second
    one fails, its reset installing the tools again over ``/root/tools``: FileExistsError);
    the trajectories' folder."""
    default = (CHECKOUT / "config" / "default.yaml").read_text()
    config = default.replace("- path: tools/review_on_submit_m", "- path: tools/submit")
    # A bundle's path is taken from the package's parent folder, not SWE_AGENT_TOOLS_DIR.
    config = config.replace("- path: tools/", f"- path: {CHECKOUT}/tools/")
    (ctx.home / CONFIG).write_text(config)
    agent = yaml.safe_load(config)["agent"] | {"type": "default", "model": _model(ctx)}
    chooser = {
        "model": _model(ctx),
        "system_template": "Choose one of the patches.",
        "instance_template": "{{problem_statement}}\n{% for s in submissions %}{{s}}\n"
        "{% endfor %}" + CHOOSER_ASKS + ".",
        "submission_template": "{{submission}}",
    }
    retry = {"agent": {"type": "retry", "agent_configs": [agent], "retry_loop": {
        "type": "chooser", "cost_limit": 0, "max_attempts": 1, "chooser": chooser}}}  # fmt: skip
    (ctx.home / RETRY_CONFIG).write_text(json.dumps(retry, indent=2))  # JSON is YAML
    (ctx.home / SESSIONS).mkdir(parents=True, exist_ok=True)


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "SWE_AGENT_CONFIG_DIR": str(CHECKOUT / "config"),
        "SWE_AGENT_TOOLS_DIR": str(CHECKOUT / "tools"),
        "SWE_AGENT_TRAJECTORY_DIR": str(ctx.home / SESSIONS),
        "SCRIPTED_KEY": ctx.key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "USER": "user",
    }


def _run(name: str, task: str, *, retry: bool = False) -> tuple[str, ...]:
    model = () if retry else (
        "--agent.model.name=openai/scripted-model", "--agent.model.api_base={base_url}/v1",
        "--agent.model.api_key=$SCRIPTED_KEY", "--agent.model.per_instance_cost_limit=0",
        "--agent.model.total_cost_limit=0", "--agent.model.max_input_tokens=0",
        # The slow command's own timeout (the default is 30 s).
        "--agent.tools.execution_timeout=10",
    )  # fmt: skip
    return ("unshare", "--mount", "--propagation", "private", "sh", "-c", _PRIVATE_ROOT, "sh",
            "{bin}", "run", "--config", f"{{home}}/{RETRY_CONFIG if retry else CONFIG}",
            *model,
            "--env.deployment.type=local",
            # The bash session starts in /: the task folder is where the commands run.
            '--env.post_startup_commands=["cd {task}"]',
            f"--problem_statement.text={task}", f"--problem_statement.id={name}",
            f"--output_dir={{home}}/{SESSIONS}/user/{name}")  # fmt: skip


RECIPE = Recipe(
    agent="swe-agent",
    package="sweagent",
    version=VERSION,
    ecosystem="pypi",
    bin="bin/sweagent",
    format="swe-agent",
    session_dir=SESSIONS,
    python="3.12",
    steps=(
        Step("fix", _run("fix", FIX_PROMPT)),
        Step("refunds", _run("refunds", REFUND_PROMPT)),
        Step("slow", _run("slow", SLOW_PROMPT)),
        Step("retry", _run("retry", REFUND_PROMPT, retry=True)),
    ),
    script=SweScript,
    env=_env,
    prepare=_prepare,
    # Beside each trajectory: the run's config (.config.yaml), its prediction (.pred), its
    # logs (*.log), the batch's predictions: not sessions.
    exclude=("*.log", "*.pred", "config.yaml", "*.config.yaml", "preds.json", "run_batch*"),
    expect={
        # The retry run's attempt: once, from the file listing it (its own file, in
        # attempt_0/, is not read beside it).
        "sessions": 4,
        "events": {
            "message/user": 4,
            "message/assistant": 8,
            "tool/call": 11,
            "tool/result": 11,
            # Each run's exit: submitted.
            "message/context": 4,
        },
        "skipped": {"message:system": 4, "attempt:chosen-copy": 1},
        "cwd": "/tmp/sq-record/swe-agent/shop",
        "whole": True,
    },
    note="SWE-agent keeps no exit status of a command: the failing test, the missing file and"
    " the command it cancelled after 10 s are results as the model saw them, not errors. The"
    " task folder is no repository, so each submission is empty (exit status submitted). The"
    " retry run has one attempt: on the local deployment a second one fails (its reset installs"
    " the tools again over /root/tools: FileExistsError).",
    # The default config's templates: the instance message wraps the task in its own
    # instructions; each step's ``query`` copies the messages sent; the run's config
    # (``replay_config``, JSON text) holds every template and tool description.
    own_text=OwnText(
        prefixes=("<uploaded_files>",), fields=("query", "replay_config"), keep_prefix=True
    ),
)
