"""Screenshots of ``sessionquery ui``'s main pages over the sample corpus, for docs/images.

    python -m bench.ui_screenshots [--out docs/images]

Starts a nats-server, the worker and the UI (bench.ui_stack), logs in with the token and
saves one PNG per page with the distribution's headless Chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final
from urllib.parse import quote

from bench.ui_stack import chromium, ui_stack
from worker.commands.sample_corpus import PAY_CHILD, PAY_ROOT, PAYMENTS

WS: Final = "ws=" + quote(PAYMENTS, safe="")
PAGES: Final = (
    ("ui-workspaces", "/"),
    ("ui-sessions", f"/sessions?{WS}"),
    ("ui-search", f"/search?{WS}&q=refund+idempotency"),
    ("ui-timeline", f"/session?{WS}&id={PAY_ROOT}"),
    ("ui-event", f"/event?{WS}&id={PAY_ROOT}&seq=10"),
    ("ui-lineage", f"/lineage?{WS}&id={PAY_CHILD}"),
    ("ui-operations", "/ops"),
)
HIT_SEARCH: Final = f"/search?{WS}&q=flaky+refund+test"


async def shoot(out: Path) -> list[Path]:
    saved = []
    async with ui_stack(None) as stack, chromium(stack.tmp / "profile") as ctx:
        page = await ctx.new_page()
        await page.goto(stack.server.login_url)
        for name, path in PAGES:
            await page.goto(stack.server.base_url + path)
            target = out / f"{name}.png"
            await page.screenshot(path=str(target), full_page=False)
            saved.append(target)
        # A search hit followed: its event in view, outlined, the match highlighted.
        await page.goto(stack.server.base_url + HIT_SEARCH)
        await page.locator("ol.hits li.hit a").first.click()
        saved.append(out / "ui-hit.png")
        await page.screenshot(path=str(saved[-1]), full_page=False)
        # A phone's width: the sessions list fits, its table scrolls inside itself.
        await page.set_viewport_size({"width": 390, "height": 844})
        await page.goto(stack.server.base_url + f"/sessions?{WS}")
        saved.append(out / "ui-phone-sessions.png")
        await page.screenshot(path=str(saved[-1]), full_page=False)
    return saved


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ui_screenshots", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(shoot(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
