"""Aider (PyPI ``aider-chat``): ``aider --message`` with an OpenAI-compatible model
(``--openai-api-base``, ``--model openai/<name>``) on the OpenAI chat dialect, in the ``diff``
edit format (SEARCH/REPLACE blocks in the reply's text; Aider has no tool calls).

Two runs in the same folder, each a session of its own appended to the folder's
``.aider.chat.history.md``: the fix (an edit to ``ledger.py`` and a suggested shell command,
which ``--yes-always`` does not run: Aider wants an explicit yes for commands), then a refund
test (a new file). ``--no-git`` keeps Aider from making the folder a repository (it would ask
to, and ``--yes-always`` says yes). Aider writes the history where it runs: the recording is
the task folder's history file (``session_dir`` reaches it from HOME), without the task's
own files.
"""

from __future__ import annotations

from tests.recording.agents import (
    FIX_PROMPT,
    LEDGER_BUG,
    LEDGER_FIX,
    REFUND_PROMPT,
    SUMMARY,
    TEST_REFUNDS,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.script import Conversation, Reply
from tests.recording.scrub import OwnText

MODEL = "openai/scripted-model"

FIX_REPLY = (
    ("balance() skips the first entry: it sums `self.entries[1:]`. It should sum every entry.")
    + f"""

ledger.py
```python
<<<<<<< SEARCH
        {LEDGER_BUG}
=======
        {LEDGER_FIX}
>>>>>>> REPLACE
```

Run the test again:

```bash
python3 -m unittest -v test_ledger
```
"""
)

REFUND_REPLY = (
    "I'll add a refund test: a refund of 4 from 10 leaves 6.\n\ntest_refunds.py\n```python\n"
    f"<<<<<<< SEARCH\n=======\n{TEST_REFUNDS}>>>>>>> REPLACE\n```\n"
)


class AiderScript:
    def reply(self, conversation: Conversation) -> Reply:
        # Aider's summarizer (a long chat history) asks with no prompt of ours.
        if conversation.mentions("summarize") and FIX_PROMPT not in conversation.last_user_text:
            return Reply(text=SUMMARY)
        prompt = conversation.last_user_text
        if REFUND_PROMPT in prompt:
            return Reply(text=REFUND_REPLY)
        if FIX_PROMPT in prompt:
            return Reply(text=FIX_REPLY)
        return Reply(text="Done.")


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "OPENAI_API_BASE": f"{ctx.base_url}/v1",
        "OPENAI_API_KEY": ctx.key,
        # LiteLLM's model list and prices from its package, not fetched.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


# The key comes from the environment: Aider writes its command line into the history.
_RUN = ("{bin}", "--model", MODEL, "--openai-api-base", "{base_url}/v1", "--edit-format",
        "diff", "--yes-always", "--no-auto-commits", "--no-git",
        "--no-check-update", "--analytics-disable", "--no-show-model-warnings",
        "--no-show-release-notes", "--no-pretty", "--no-fancy-input")  # fmt: skip

RECIPE = Recipe(
    agent="aider",
    package="aider-chat",
    version="0.86.2",
    ecosystem="pypi",
    bin="bin/aider",
    format="aider",
    session_dir="../shop",  # the task folder: Aider writes its history where it runs
    steps=(
        Step("fix", (*_RUN, "--message", FIX_PROMPT, "ledger.py", "test_ledger.py")),
        Step("refunds", (*_RUN, "--message", REFUND_PROMPT, "ledger.py")),
    ),
    script=AiderScript,
    env=_env,
    # The task's own files, and Aider's input history (the prompts again) and caches.
    exclude=("*.py", "__pycache__", ".aider.input.history", ".aider.tags.cache*"),
    expect={
        "sessions": 2,
        "events": {"message/user": 2, "message/assistant": 2},
        # The converter gathers a run of lines into one event and knows a run is over only
        # when the next begins: watch publishes the file's last run at idle, with the
        # session's end, while ``convert`` publishes it at the end of the file.
        "no_watch": "Aider's last run of lines is published at idle, not at the end of file",
    },
    # Aider writes no prompt text of its own into the history: nothing to leave out.
    own_text=OwnText(),
)
