"""A real headless browser (Debian's `chromium`) for report tests: load a page, read what it loaded.

`image_widths(page)` opens the HTML file in headless chromium (file://, images resolved relative to
it) and returns (src, naturalWidth) of every <img> once the page has loaded: 0 means it did not
load. Tests skip with a reason where chromium is absent (`make test` installs it when run as root).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

PROBE = """<script>window.addEventListener("load", () => document.body.setAttribute("data-images",
  JSON.stringify([...document.images].map(i => [i.getAttribute("src"), i.naturalWidth]))));</script>"""  # noqa: E501


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip(
        "no headless browser: install Debian's `chromium` (make test does it when run as root)"
    )


def image_widths(page: Path) -> list[tuple[str, int]]:
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8"
    )
    try:
        dom = subprocess.run(
            [
                chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--allow-file-access-from-files",
                "--virtual-time-budget=10000",
                "--dump-dom",
                probe.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    finally:
        probe.unlink()
    found = re.search(r'data-images="([^"]*)"', dom)
    assert found, f"the page's load event never fired: {dom[:500]}"
    return [tuple(item) for item in json.loads(html.unescape(found.group(1)))]
