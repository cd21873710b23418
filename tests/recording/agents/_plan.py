"""The synthetic task's plan, shared by the agents whose tools differ only in name and
arguments (every recipe but Aider's, which has no tool calls): an agent's :class:`Tools` says how
to run a command, read, edit and write a file and spawn a sub-agent with its own tools, and
:class:`PlanScript` replays the plan from the conversation alone.

The fix: reasoning, text and a test run, a read of ledger.py, a read of a missing file (a
tool error), a sub-agent where the agent has one, the edit, a long test run, the final text.
Then the refund test (resumed), a turn interrupted while a slow command runs, a compaction
where the agent has one, a question after it, and a prompt with an image attached."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    IMAGE_PROMPT,
    LEDGER_BUG,
    LEDGER_FIX,
    MISSING_FILE,
    RED_PNG,
    REFUND_PROMPT,
    SUBAGENT_PROMPT,
    SUMMARY,
    TEST_REFUNDS,
)
from tests.recording.script import Conversation, Reply, ToolCall, Turn, call

TITLE = "Fix the ledger balance"
SUBAGENT_ANSWER = "refund() appends -amount, so it subtracts the amount from the balance."
FINAL_FIX = "Fixed: Ledger.balance now sums every entry, and test_ledger passes."
FINAL_REFUND = "Added test_refunds.py: a refund of 4 from 10 leaves 6."
FINAL_AFTER_COMPACT = "We fixed Ledger.balance and added a refund test."
# Interrupted (SIGINT, as Ctrl-C) while its command runs: an aborted turn.
SLOW_PROMPT = "Run the slow checks too, please."
SLOW_COMMAND = "python3 -c 'import time; time.sleep(60)'"
IMAGE_ANSWER = "A small red square."
IMAGE_FILE = "red.png"
# The step that puts the image in the task folder, for the agent to attach.
WRITE_IMAGE = (
    "python3",
    "-c",
    "import base64, sys; open(sys.argv[1], 'wb').write(base64.b64decode(sys.argv[2]))",
    "{task}/" + IMAGE_FILE,
    RED_PNG,
)


def prompt(text: str) -> str:
    """A prompt as the plan knows it: ``opencode run`` quotes an argument with spaces."""
    return text.strip().strip('"')


def _describes_image(conversation: Conversation) -> bool:
    """A tool-less request to describe an image (Hermes's, before the prompt it came with)."""
    asked = conversation.last_user_text
    return not conversation.tools and asked.startswith("Describe") and "image" in asked


def summary_asked(conversation: Conversation) -> bool:
    """Whether a request asks for a summary the way most agents' compaction (or title)
    side requests do: offering no tools, mentioning a summary."""
    return not conversation.tools and conversation.mentions("summar")


class Tools(Protocol):
    """An agent's own tools, as calls with the arguments its schemas ask for. ``step`` names
    the call, so ids stay stable across re-recordings."""

    def shell(self, step: str, command: str, description: str) -> ToolCall: ...
    def read(self, step: str, name: str) -> ToolCall: ...
    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall: ...
    def write(self, step: str, name: str, content: str) -> ToolCall: ...
    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        """The calls that run a sub-agent to its answer, one a turn (a spawn, then a wait
        where the agent's sub-agents run in the background); none without sub-agents."""
        ...


@dataclass(frozen=True)
class NamedTools:
    """The :class:`Tools` of an agent whose shell takes a command, and whose file tools a
    path, old and new text or the content, under names and keys of its own: the agent's
    tools as data. A recipe subclasses it where a tool takes more (and for ``spawn``: no
    sub-agent by default)."""

    task: Path  # the files' folder
    prefix: str  # the call ids' prefix
    shell_as: tuple[str, ...]  # the tool, its command's key, its description's if it has one
    read_as: tuple[str, str]  # the tool, its path's key
    write_as: tuple[str, str, str]  # the tool, its path's and its content's keys
    edit_as: tuple[str, str, str, str] | None = None  # the tool, path, old and new keys

    def tool_call(self, name: str, step: str, **arguments: object) -> ToolCall:
        return call(self.prefix, name, step, dict(arguments))

    def path(self, name: str) -> str:
        return str(self.task / name)

    def shell(self, step: str, command: str, description: str) -> ToolCall:
        name, key, *described = self.shell_as
        return self.tool_call(name, step, **{key: command}, **dict.fromkeys(described, description))

    def read(self, step: str, name: str) -> ToolCall:
        tool, key = self.read_as
        return self.tool_call(tool, step, **{key: self.path(name)})

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        if self.edit_as is None:
            raise NotImplementedError(f"{type(self).__name__} names no edit tool")
        tool, key, old_key, new_key = self.edit_as
        return self.tool_call(tool, step, **{key: self.path(name), old_key: old, new_key: new})

    def write(self, step: str, name: str, content: str) -> ToolCall:
        tool, key, content_key = self.write_as
        return self.tool_call(tool, step, **{key: self.path(name), content_key: content})

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return ()


@dataclass
class PlanScript:
    """The plan, told from the conversation: which prompt is being answered (the last user
    text the agent's harness did not add) and how many tool results it already has."""

    tools: Tools
    # Whether a request asks for the compaction summary (each agent words it its own way).
    is_summary: Callable[[Conversation], bool]
    # User texts the harness adds (environment, instructions): not prompts.
    harness: tuple[str, ...] = ()
    # A side request (title, routing, next-speaker check) answers this in JSON when it asks
    # for JSON.
    side_json: Callable[[Conversation], dict[str, object]] = lambda _: {"title": TITLE}
    # The user texts a user message stands for, where the agent folds prompts into one of
    # its own (a compaction's context quoting them, a command's record before a prompt).
    unfold: Callable[[str], tuple[str, ...]] | None = None

    def as_told(self, conversation: Conversation) -> Conversation:
        """The conversation with each user message unfolded into the texts it stands for."""
        if self.unfold is None:
            return conversation
        unfold = self.unfold
        turns = tuple(
            told
            for turn in conversation.turns
            for told in (
                [replace(turn, text=text) for text in unfold(turn.text)]
                if turn.role == "user"
                else [turn]
            )
        )
        return replace(conversation, turns=turns)

    def prompts(self, conversation: Conversation) -> list[str]:
        return [
            prompt(text)
            for text in conversation.user_texts()
            if not text.lstrip().startswith(self.harness or ("\0",))
        ]

    def reply(self, conversation: Conversation) -> Reply:
        conversation = self.as_told(conversation)
        if self.is_summary(conversation):
            return Reply(text=SUMMARY)
        prompts = self.prompts(conversation)
        prompt = prompts[-1] if prompts else ""
        if (
            conversation.tools
            and any(SUBAGENT_PROMPT[:40] in p for p in prompts)
            and not any(p.startswith(FIX_PROMPT[:30]) for p in prompts)
        ):
            return self._subagent(conversation)
        if not conversation.tools or not (
            IMAGE_PROMPT in prompt
            or any(
                prompt.startswith(p[:20])
                for p in (FIX_PROMPT, REFUND_PROMPT, AFTER_COMPACT_PROMPT, SLOW_PROMPT)
            )
        ):
            # A side request (a title, a "who speaks next" check): a short answer.
            if _describes_image(conversation):
                return Reply(text=IMAGE_ANSWER)  # a vision pre-pass over the attached image
            if conversation.mentions("json"):
                return Reply(text=json.dumps(self.side_json(conversation)))
            return Reply(text=TITLE)
        done = len(conversation.tool_results(self.since(conversation, prompt)))
        if IMAGE_PROMPT in prompt:
            return Reply(text=IMAGE_ANSWER)
        if prompt.startswith(SLOW_PROMPT):
            if done == 0:
                slow = self.tools.shell("slow", SLOW_COMMAND, "Run the slow checks")
                return Reply(text="Running the slow checks.", tool_calls=(slow,))
            return Reply(text="The slow checks were stopped.")
        if prompt.startswith(FIX_PROMPT[:30]):
            return self._fix(done)
        if prompt.startswith(REFUND_PROMPT[:20]):
            if done == 0:
                write = self.tools.write("refunds", "test_refunds.py", TEST_REFUNDS)
                return Reply(text="I'll add a refund test.", tool_calls=(write,))
            return Reply(text=FINAL_REFUND)
        return Reply(text=FINAL_AFTER_COMPACT)

    @staticmethod
    def since(conversation: Conversation, text: str) -> tuple[Turn, ...]:
        turns = conversation.turns
        for i in range(len(turns) - 1, -1, -1):
            if turns[i].role == "user" and prompt(turns[i].text) == text:
                return turns[i + 1 :]
        return turns

    def _subagent(self, conversation: Conversation) -> Reply:
        if not conversation.tool_results():
            look = self.tools.shell(
                "sub-grep", "grep -n -A2 'def refund' ledger.py", "Find the refund method"
            )
            if look.name not in conversation.tools:
                # A read-only sub-agent (an "explore" agent) has no shell: it reads instead.
                look = self.tools.read("sub-read", "ledger.py")
            return Reply(reasoning="Look at refund().", tool_calls=(look,))
        return Reply(text=SUBAGENT_ANSWER)

    def _fix(self, done: int) -> Reply:
        tools = self.tools
        steps: list[Reply] = [
            Reply(
                reasoning="First run the failing test to see the error.",
                text="Let me run the tests first.",
                tool_calls=(
                    tools.shell(
                        "run-tests", "python3 -m unittest -v test_ledger", "Run the ledger tests"
                    ),
                ),
            ),
            Reply(
                reasoning="The balance is 7, not 12: the first entry is lost. Read ledger.py.",
                tool_calls=(tools.read("read-ledger", "ledger.py"),),
            ),
            Reply(
                text="Let me check the project notes too.",
                tool_calls=(tools.read("read-notes", MISSING_FILE),),
            ),
        ]
        spawn = tools.spawn("spawn", "Check refund handling", SUBAGENT_PROMPT)
        if spawn:
            steps.append(
                Reply(
                    text="There are no notes. I'll ask a helper to check the refunds meanwhile.",
                    tool_calls=(spawn[0],),
                )
            )
            steps += [Reply(tool_calls=(then,)) for then in spawn[1:]]
        steps += [
            Reply(
                reasoning="balance() sums entries[1:]; it must sum them all.",
                text="balance() skips the first entry. Fixing it.",
                tool_calls=(tools.edit("fix", "ledger.py", LEDGER_BUG, LEDGER_FIX),),
            ),
            Reply(
                tool_calls=(
                    tools.shell(
                        "rerun",
                        # A long output, on purpose: the transcript keeps it whole or cut.
                        "python3 -m unittest -v test_ledger && seq 1 1500",
                        "Run the tests again and print a long listing",
                    ),
                ),
            ),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text=FINAL_FIX)
