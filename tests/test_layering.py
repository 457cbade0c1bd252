"""The layers: `albert/` <- `pipelines/` <- `model/` <- `flows/`; the trainer never imports Beam.

The rule: a module imports only modules of its own layer and the layers below it, whether by an
import statement (inside a function too) or by naming the module in a string: a string that is a
module's name (what importlib.import_module, runpy or a table of modules would load) or holds
`-m MODULE` (a `python -m` command), docstrings aside. One exception, named here: the stage registry
and its dispatcher (`ENTRY_TABLES`) name the stage modules of every layer by design; they import one
only when called, and importing them loads nothing of the layers above `albert/` (checked below).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("albert", "pipelines", "model", "flows")
ENTRY_TABLES = ("albert.stages", "albert.cli")
"""The stage registry and the `albert` CLI dispatching over it: they name every layer's stages."""
_PYTHON_M = re.compile(r"-m\s+([A-Za-z_][\w.]*)")


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _modules(package: str) -> list[str]:
    return sorted(_module_name(path) for path in (ROOT / package).rglob("*.py"))


OUR_MODULES = frozenset(name for layer in LAYERS for name in _modules(layer))


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring nodes of the module and of its classes and functions."""
    owners = [tree] + [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    return {
        id(owner.body[0].value)
        for owner in owners
        if owner.body
        and isinstance(owner.body[0], ast.Expr)
        and isinstance(owner.body[0].value, ast.Constant)
    }


def _modules_named_in(text: str) -> set[str]:
    """Our modules a string names: the string is a module's name, or holds `-m MODULE`."""
    named = {text} | set(_PYTHON_M.findall(text))
    return {name for name in named if name in OUR_MODULES}


def _imported_packages(path: Path) -> set[str]:
    """Top-level names of every import in the file, lazy imports inside functions and imports by
    string (module names, `-m MODULE`) included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            names.update(name.split(".")[0] for name in _modules_named_in(node.value))
    return names


@pytest.mark.parametrize("layer", LAYERS)
def test_no_layer_imports_a_layer_above_it(layer: str) -> None:
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & above)
        for path in (ROOT / layer).rglob("*.py")
        if _imported_packages(path) & above and _module_name(path) not in ENTRY_TABLES
    }
    assert not offenders, f"{layer} imports layers above it: {offenders}"


def test_imports_by_string_are_seen() -> None:
    """The check reads module names in strings: the registry names every layer's stages."""
    registry = _imported_packages(ROOT / "albert" / "stages.py")
    assert {"pipelines", "model", "flows"} <= registry
    assert _modules_named_in("python -m flows.pipeline.flow --steps 1") == {"flows.pipeline.flow"}
    assert not _modules_named_in("model.keras")  # a file name, not a module


def test_the_entry_tables_import_no_upper_layer_when_imported() -> None:
    """The registry and the CLI load a stage's module only when it is run."""
    code = (
        "import importlib, sys\n"
        f"for name in {list(ENTRY_TABLES)!r}:\n"
        "    importlib.import_module(name)\n"
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {list(LAYERS[1:])!r})\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_no_model_module_and_no_flow_before_its_stages_imports_beam(tmp_path) -> None:
    """Shared logic (hashing, masking, the example schema, TFRecord framing) lives in `albert/`.
    The flows validate every stage's config and match a line's input files before their
    environment checks (PREFECT_HOME, the run directory): the configs live in modules that load
    no Beam (`pipelines/*/config.py`), so a command that fails there does so in seconds."""
    (tmp_path / "corpus.txt").write_text("One sentence.\n")
    code = (
        "import importlib, sys\n"
        f"for name in {_modules('model')!r}:\n"
        "    importlib.import_module(name)\n"
        "    assert 'apache_beam' not in sys.modules, name + ' imports apache_beam'\n"
        "from flows.line.night import input_digests\n"
        "from flows.pipeline.flow import PretrainPipelineConfig, stage_configs\n"
        f"config = PretrainPipelineConfig(input=[{str(tmp_path / 'corpus.txt')!r}],\n"
        f"                                run_dir={str(tmp_path / 'run')!r})\n"
        "assert list(stage_configs(config))[:3] == ['segment', 'vocab', 'tfrecords']\n"
        "assert len(input_digests(config.input)) == 1\n"
        "assert 'apache_beam' not in sys.modules, 'a flow imports apache_beam before its stages'\n"
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


def test_the_commands_that_need_no_prefect_never_import_it() -> None:
    """`python -m model.pretrain`, `albert finetune` and the Beam stages work where Prefect cannot
    (a PREFECT_HOME that cannot be made: tests/test_environment_sweep.py): nothing of `albert/`,
    `pipelines/` or `model/` imports Prefect, nor any module `flows.finetune` runs (its import
    closure, as a stage's cache key reads it: lazy imports included)."""
    from flows.engine.caching import module_closure

    paths = [path for layer in LAYERS[:3] for path in (ROOT / layer).rglob("*.py")]
    paths += module_closure(["flows.finetune"]).values()
    offenders = sorted(
        {str(p.relative_to(ROOT)) for p in paths if "prefect" in _imported_packages(p)}
    )
    assert not offenders, f"import Prefect: {offenders}"
