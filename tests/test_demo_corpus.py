"""The demo corpus ships with the package: present, licensed, named in the package data (so a
non-editable install has it too), and gensim/scipy are no longer runtime dependencies."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

from flows.pipeline.default_corpus import DEMO_CORPUS_DIR, default_corpus

pytestmark = pytest.mark.backend_free

REPO = Path(__file__).resolve().parents[1]


def test_demo_corpus_is_package_data_with_its_licence():
    files = [Path(path) for path in default_corpus()]
    assert files and all(path.is_file() and path.stat().st_size > 1_000_000 for path in files)
    readme = (DEMO_CORPUS_DIR / "README.md").read_text(encoding="utf-8")
    assert "CC BY-SA 3.0" in readme and "Wikipedia" in readme
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["flows"]
    for path in [*files, DEMO_CORPUS_DIR / "README.md"]:
        relative = path.relative_to(REPO / "flows").as_posix()
        assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), relative
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(d.startswith("gensim") for d in dependencies)  # scipy stays: GLUE correlations
