"""Headless Chromium from the distribution's packages, driven by Playwright (launched as
``bench.ui_stack.chromium`` does: the system's /usr/bin/chromium, a fresh profile; never
Playwright's own browser download). Without it, or without the ``playwright`` package,
the tests skip saying so (``.ci/run`` installs the browser when it can)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.ui_stack import CHROMIUM
from bench.ui_stack import chromium as browser

__all__ = ["browser", "in_view", "skip_without_browser"]


def skip_without_browser() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no {CHROMIUM}: install the distribution's chromium (.ci/run does as root)")
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is not installed (the test extra has it)")


async def in_view(locator: Any) -> bool:
    """The element's box lies inside the viewport (scrolled to, not merely present)."""
    inside: bool = await locator.evaluate(
        "e => { const r = e.getBoundingClientRect();"
        " return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }"
    )
    return inside
