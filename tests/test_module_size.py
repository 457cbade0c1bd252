"""The size cap of the developers' guide: no module outside tests/ over 350 lines (one job per
module), benchmarks included."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[1]
CAP = 350


def project_modules() -> list[Path]:
    """Every .py file of the checkout outside tests/ and hidden or generated folders."""
    skipped = {"tests", "runs", "build", "dist", "node_modules"}
    return [
        path
        for path in ROOT.rglob("*.py")
        if not any(part in skipped or part.startswith(".") for part in path.relative_to(ROOT).parts)
    ]


def test_no_module_outside_tests_is_over_the_cap():
    modules = project_modules()
    assert any(path.parts[-2:] == ("benchmarks", "pretrain.py") for path in modules)
    over = {
        str(path.relative_to(ROOT)): lines
        for path in modules
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > CAP
    }
    assert not over, f"over {CAP} lines: {over}"
