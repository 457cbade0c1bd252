"""The layers: `albert/` <- `pipelines/` <- `model/` <- `flows/`; the trainer never imports Beam."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("albert", "pipelines", "model", "flows")


def _modules(package: str) -> list[str]:
    return sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in (ROOT / package).rglob("*.py")
    )


def _imported_packages(path: Path) -> set[str]:
    """Top-level names of every import in the file, lazy imports inside functions included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("layer", LAYERS)
def test_no_layer_imports_a_layer_above_it(layer: str) -> None:
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & above)
        for path in (ROOT / layer).rglob("*.py")
        if _imported_packages(path) & above
    }
    assert not offenders, f"{layer} imports layers above it: {offenders}"


def test_importing_any_model_module_never_imports_beam() -> None:
    """Shared logic (hashing, masking, the example schema, TFRecord framing) lives in `albert/`."""
    modules = _modules("model")
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "    assert 'apache_beam' not in sys.modules, name + ' imports apache_beam'\n"
        "print(len(sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
