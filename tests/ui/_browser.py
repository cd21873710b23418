"""Headless Chromium from the distribution's packages, driven by Playwright.

Playwright's own browser download is never used: the system's ``/usr/bin/chromium`` is
launched with a fresh profile (a user-data-dir under the test's tmp_path). When it or the
``playwright`` package is missing, the tests skip saying so (``.ci/run`` installs the
browser when it can).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest

CHROMIUM: Final = "/usr/bin/chromium"
ARGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def skip_without_browser() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no {CHROMIUM}: install the distribution's chromium (.ci/run does as root)")
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is not installed (the test extra has it)")


@asynccontextmanager
async def browser(profile: Path, **context: Any) -> AsyncIterator[Any]:
    """A browser context (one fresh profile), closed on exit."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        ctx = await pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=list(ARGS),
            viewport={"width": 1280, "height": 860},
            **context,
        )
        try:
            yield ctx
        finally:
            await ctx.close()
