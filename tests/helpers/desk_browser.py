"""The desk page in real headless Chromium (Debian's, driven by Playwright): launch, sign in.

Playwright never downloads a browser of its own here. :func:`require_chromium` skips a test
module when Chromium is missing, except in CI (``CI=true``), where that fails the run.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auth.keys import write_signing_key
from tests.helpers.desk_page import desk_url
from tests.helpers.stack import REPO, Stack

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> ModuleType:
    """Return ``playwright.async_api``, or skip the calling test module (fail it in CI)."""
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"{CHROMIUM} is missing in CI: .ci/run must install Debian's chromium",
                pytrace=False,
            )
        pytest.skip(
            f"{CHROMIUM} is missing: `apt-get install chromium` to run the desk browser test",
            allow_module_level=True,
        )
    if os.environ.get("CI") == "true":
        import playwright.async_api as playwright_api

        return playwright_api
    return pytest.importorskip("playwright.async_api")


@asynccontextmanager
async def browser_page(**options: Any) -> AsyncIterator[Any]:
    """Yield a fresh page of a headless Chromium, closed afterwards."""
    playwright_api = require_chromium()
    async with playwright_api.async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield await browser.new_page(**options)
        finally:
            await browser.close()


@asynccontextmanager
async def desk_page(
    stack: Stack, login: str, tmp_path: Path, *, key_name: str = "{login}.key.json"
) -> AsyncIterator[Any]:
    """Yield the desk page in Chromium with ``login``'s key imported and GitHub token set."""
    key_file = tmp_path / key_name.format(login=login)
    write_signing_key(key_file, stack.keys[login])
    async with browser_page(viewport={"width": 1200, "height": 760}) as page:
        await page.goto(desk_url(stack))
        await page.set_input_files("#key-file", str(key_file))
        await page.locator("#key-info", has_text=login).wait_for()
        await page.fill("#gh-token", stack.token(login))
        yield page


async def open_ticket(page: Any, number: int = 1) -> None:
    """Click ticket ``number`` in the list and wait for it to open."""
    await page.click("#refresh")
    await page.click(f"li[data-number='{number}']")
    await page.locator("#status", has_text=f"Opened {REPO}#{number}").wait_for()


async def sign_and_post(page: Any, button: str) -> None:
    """Click a signing button; "Sign only" is then posted, approve and reject post at once.

    After a one-click post only the status line is read: the post changes the ticket (a
    rejection reopens it), and the page then shows the ticket as it now is, signed box empty.
    """
    playwright_api = require_chromium()
    await page.click(button)
    if button == "#sign":
        await playwright_api.expect(page.locator("#signed")).to_have_value(
            re.compile("ticketproxy-signature")
        )
        await page.click("#post")
    await page.locator("#status", has_text="Posted").wait_for()
