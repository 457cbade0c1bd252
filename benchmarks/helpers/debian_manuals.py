"""Real text in other languages from Debian's manual packages (GPL-2+): the Debian New
Maintainers' Guide (`maint-guide-LANG`) and the Debian Reference (`debian-reference-LANG`) in each
translation Debian ships, fetched with `apt-get download` and unpacked with `dpkg-deb -x` into a
cache once, read as the paragraphs (<p> elements) of their HTML pages. Never copied into the
project."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchmarks.helpers.udhr_texts import UDHR_CACHE

# ISO 639-1 code -> the package and the language tag of its HTML files
DEBIAN_REFERENCE = {
    "ja": ("debian-reference-ja", "ja"),
    "de": ("debian-reference-de", "de"),
    "fr": ("debian-reference-fr", "fr"),
    "zh": ("debian-reference-zh-cn", "zh-cn"),
    "es": ("debian-reference-es", "es"),
    "it": ("debian-reference-it", "it"),
    "pt": ("debian-reference-pt", "pt"),
}
MAINT_GUIDE = {
    "ja": ("maint-guide-ja", "ja"),
    "de": ("maint-guide-de", "de"),
    "fr": ("maint-guide-fr", "fr"),
    "vi": ("maint-guide-vi", "vi"),
    "zh": ("maint-guide-zh-cn", "zh-cn"),
    "ru": ("maint-guide-ru", "ru"),
    "es": ("maint-guide-es", "es"),
    "it": ("maint-guide-it", "it"),
}


def manual_folder(package: str) -> Path | None:
    """The unpacked `package` ($ALBERT_DEBIAN_DOCS/PACKAGE, else a cache filled once by
    apt-get); None where apt-get cannot fetch it."""
    root = Path(os.environ.get("ALBERT_DEBIAN_DOCS", UDHR_CACHE / "debian"))
    folder = root / package
    if (folder / "usr").is_dir():
        return folder
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        return None
    with tempfile.TemporaryDirectory() as temp:
        fetched = subprocess.run(
            ["apt-get", "download", package], cwd=temp, capture_output=True, check=False
        )
        debs = list(Path(temp).glob(f"{package}_*.deb"))
        if fetched.returncode or not debs:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(folder)], check=True)
    return folder


def manual_paragraphs(language: str, manual: dict[str, tuple[str, str]] = MAINT_GUIDE) -> list[str]:
    """The <p> paragraphs of `language`'s translation of `manual` (MAINT_GUIDE or
    DEBIAN_REFERENCE), page by page in file order; none where Debian has no such translation."""
    if language not in manual:
        return []
    package, tag = manual[language]
    folder = manual_folder(package)
    if folder is None:
        return []
    paragraphs = []
    for page in sorted(folder.glob(f"usr/share/**/*.{tag}.html")):
        text = page.read_text(encoding="utf-8")
        for raw in re.findall(r"<p>(.*?)</p>", text, re.DOTALL):
            paragraph = " ".join(html.unescape(re.sub(r"<[^>]+>", "", raw)).split())
            if paragraph:
                paragraphs.append(paragraph)
    return paragraphs
