"""The one error table: every class of the store's and the signal's trees has its own row
(so a new error class without a mapping fails here), and no row lets internal text out."""

from __future__ import annotations

import pytest

import worker.store.errors
from contracts.errors import TOOL_FAILED_MESSAGE, ErrorCode
from worker.signals import DeadlineExceeded, ExecutionAborted, ExecutionCancelled
from worker.store.errors import GenerationChanged, InvalidQuery, StoreError
from worker.tools import ToolError, model_error
from worker.tools.errors import ERROR_TABLE, TIMEOUT_MESSAGE
from worker.tools.titles import CHANGED_RESULT_MESSAGE, TitleMismatch

SECRET = "database /var/lib/secret/index.db is locked"


def _tree(root: type[BaseException]) -> list[type[BaseException]]:
    """``root`` and its subclasses defined in the worker (not test doubles)."""
    found, stack = [], [root]
    while stack:
        cls = stack.pop()
        if cls.__module__.startswith("worker."):
            found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


def test_the_walk_finds_the_trees() -> None:
    assert len(_tree(StoreError)) >= 12
    assert set(_tree(ExecutionAborted)) == {ExecutionAborted, ExecutionCancelled, DeadlineExceeded}


@pytest.mark.parametrize("root", [StoreError, ExecutionAborted])
def test_every_class_of_the_tree_has_its_own_row(root: type[BaseException]) -> None:
    import worker.store.sqlite  # noqa: F401  # its private sentinel joins the walk

    missing = [
        cls.__qualname__
        for cls in _tree(root)
        if cls not in ERROR_TABLE and not cls.__qualname__.startswith("_")
    ]
    assert missing == []


def test_only_a_model_safe_class_shows_its_own_text() -> None:
    assert [cls for cls, row in ERROR_TABLE.items() if row.own_text] == [InvalidQuery]


# InvalidQuery's text is written for the model by design: test_model_error_rows.
@pytest.mark.parametrize("cls", [c for c in _tree(StoreError) if c is not InvalidQuery])
def test_no_store_error_text_reaches_the_model(cls: type[StoreError]) -> None:
    error = model_error(cls(SECRET))
    assert SECRET not in error.message
    if cls is GenerationChanged:
        assert error.code is ErrorCode.GENERATION_CHANGED
    else:
        assert (error.code, error.message) == (ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)


def test_model_error_rows() -> None:
    own = model_error(InvalidQuery("The query has no searchable words."))
    assert (own.code, own.message) == (
        ErrorCode.INVALID_ARGUMENTS,
        "The query has no searchable words.",
    )
    odd = model_error(InvalidQuery(42))
    assert (odd.code, odd.message) == (
        ErrorCode.INVALID_ARGUMENTS,
        "The query has nothing searchable.",
    )
    timeout = model_error(DeadlineExceeded())
    assert (timeout.code, timeout.message) == (ErrorCode.TIMEOUT, TIMEOUT_MESSAGE)
    foreign = model_error(ExecutionCancelled(SECRET))
    assert (foreign.code, foreign.message) == (ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)
    bug = model_error(RuntimeError(SECRET))
    assert (bug.code, bug.message) == (ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)


def test_a_tool_error_is_its_own_answer() -> None:
    error = ToolError(ErrorCode.NOT_FOUND, "Session s-1 was not found in this workspace.")
    assert model_error(error) is error
    mismatch = TitleMismatch("s-2")
    assert model_error(mismatch) is mismatch
    assert (mismatch.code, mismatch.message) == (ErrorCode.NOT_FOUND, CHANGED_RESULT_MESSAGE)


def test_the_store_tree_lives_in_one_module() -> None:
    homes = {cls.__module__ for cls in _tree(StoreError) if not cls.__name__.startswith("_")}
    assert homes == {worker.store.errors.__name__}
