"""The answer page's scripts: its own and the vendored renderer and sanitiser, no CDN."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp

from proxy.desk_page import SCRIPTS
from tests.helpers.desk_page import desk_url
from tests.helpers.stack import Stack

VENDOR = Path(__file__).resolve().parents[2] / "proxy" / "static" / "vendor"


async def test_page_loads_every_script_from_its_own_server(desk_stack: Stack) -> None:
    """Each script the page names is one of SCRIPTS, served here; none comes from a CDN."""
    async with aiohttp.ClientSession() as session:
        async with session.get(desk_url(desk_stack)) as response:
            page = await response.text()
        named = re.findall(r'<script src="([^"]*)"', page)
        served = {}
        for source in named:
            async with session.get(desk_url(desk_stack).removesuffix("/desk/") + source) as reply:
                served[source] = (reply.status, reply.content_type, len(await reply.read()))
    assert sorted(source.removeprefix("/desk/") for source in named) == sorted(SCRIPTS)
    for status, content_type, size in served.values():
        assert (status, content_type) == (200, "application/javascript")
        assert size > 0
    assert re.search(r"<script>|https?://", page.split("<body>", 1)[1]) is None


async def test_page_scripts_reach_only_the_versioned_desk_api(desk_stack: Stack) -> None:
    """The page's own scripts call ``/desk/api/v1`` and nothing of GitHub's."""
    own = [name for name in SCRIPTS if not name.startswith("vendor/")]
    async with aiohttp.ClientSession() as session:
        texts = []
        for name in own:
            async with session.get(desk_url(desk_stack, name)) as response:
                texts.append(await response.text())
    script = "\n".join(texts)
    assert "/desk/api/v1/events" in script
    assert re.search(r"/desk/api/(?!v1/)", script) is None
    assert "/repos/" not in script


async def test_unlisted_or_traversing_script_names_are_not_served(desk_stack: Stack) -> None:
    """Only the listed scripts are served: another name, or a climb out of static/, is 404."""
    async with aiohttp.ClientSession() as session:
        statuses = []
        for name in ("nope.js", "vendor/nope.js", "vendor/..%2fdesk.js", "..%2f..%2fapp.js"):
            async with session.get(desk_url(desk_stack, name)) as response:
                statuses.append(response.status)
    assert statuses == [404, 404, 404, 404]


def test_vendored_libraries_carry_their_licences_and_versions() -> None:
    """Each vendored file names its version, and the licence files sit beside it."""
    assert "markdown-it 15.0.3" in (VENDOR / "markdown-it.min.js").read_text()[:200]
    assert "DOMPurify 3.4.18" in (VENDOR / "purify.min.js").read_text()[:200]
    licences = {path.name for path in VENDOR.glob("LICENSE*")}
    assert {"LICENSE.markdown-it", "LICENSE.dompurify", "LICENSE-MPL.dompurify"} <= licences
    readme = (VENDOR / "README.md").read_text()
    assert "15.0.3" in readme
    assert "3.4.18" in readme
