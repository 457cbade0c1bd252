"""The layers: `albert/` <- `pipelines/` <- `model/` <- `flows/`; the trainer never imports Beam.

The rule: a module imports only modules of its own layer and the layers below it, whether by an
import statement (inside a function too) or by naming the module in a string: a string that is a
module's name (what importlib.import_module, runpy or a table of modules would load) or holds
`-m MODULE` (a `python -m` command), docstrings aside. One exception, named here: the stage registry
and its dispatcher (`ENTRY_TABLES`) name modules above `albert/` by design, the registry only the
stages' own modules (pipelines/, model/: the flows wrap stages), the dispatcher the commands' (the
flows' among them); they import one only when called, and importing them loads nothing of the
layers above `albert/` (checked below). Nothing else in `albert/` names a module above it, in any
string that holds a dotted name (`flows.finetune`, `model.finetune.run`, `-m model.pretrain`).
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
ENTRY_TABLES = {"albert.stages": {"pipelines", "model"}, "albert.cli": {"model", "flows"}}
"""The stage registry and the `albert` CLI dispatching over it, and the layers above `albert/`
whose modules each names: the registry the stages' own modules, the CLI the commands'."""
_PYTHON_M = re.compile(r"-m\s+([A-Za-z_][\w.]*)")
_DOTTED = re.compile(r"\b(?:pipelines|model|flows)(?:\.[A-Za-z_]\w*)+")


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _modules(package: str) -> list[str]:
    return sorted(_module_name(path) for path in (ROOT / package).rglob("*.py"))


OUR_MODULES = frozenset(name for layer in LAYERS for name in _modules(layer))


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring nodes: every string that stands as a statement of its own (the
    module's, a class's or a function's docstring, an attribute's after its assignment)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
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


def _modules_above_albert_named_in(text: str) -> set[str]:
    """The modules of pipelines/, model/ and flows/ a string names anywhere in it: each dotted name
    there (a module, `-m MODULE`, an attribute path such as `model.finetune.run`) by its longest
    prefix that is one of our modules below a layer's own package (`model.keras`, a file name,
    names none)."""
    named = set()
    for dotted in _DOTTED.findall(text):
        parts = dotted.split(".")
        prefixes = [".".join(parts[:end]) for end in range(len(parts), 1, -1)]
        named.update([prefix for prefix in prefixes if prefix in OUR_MODULES][:1])
    return named


def _strings(path: Path) -> list[str]:
    """The file's string constants, docstrings aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_albert_names_no_module_above_it_but_in_the_entry_tables() -> None:
    """Nothing in `albert/` names a module of pipelines/, model/ or flows/, by import or by a
    dotted name in a string; the registry names only the stages' own modules (pipelines/,
    model/), the CLI the commands' (ENTRY_TABLES)."""
    offenders = {}
    for path in (ROOT / "albert").rglob("*.py"):
        allowed = ENTRY_TABLES.get(_module_name(path), set())
        named = set().union(*map(_modules_above_albert_named_in, _strings(path)))
        named |= {name for name in _imported_modules(path) if name.split(".")[0] != "albert"}
        bad = sorted(name for name in named if name.split(".")[0] not in allowed)
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert not offenders, f"albert/ names modules above it: {offenders}"
    assert _modules_above_albert_named_in("flows.finetune:run, model.finetune.stage.run") == {
        "flows.finetune",
        "model.finetune.stage",
    }
    assert _modules_above_albert_named_in("python -m flows.pipeline.flow") == {
        "flows.pipeline.flow"
    }
    assert not _modules_above_albert_named_in("export/model.keras")


def test_imports_by_string_are_seen() -> None:
    """The check reads module names in strings: the registry names the stages of pipelines/ and
    model/, the CLI the flows' commands."""
    registry = _imported_packages(ROOT / "albert" / "stages.py")
    assert {"pipelines", "model"} <= registry and "flows" not in registry
    assert "flows" in _imported_packages(ROOT / "albert" / "cli.py")
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
        "from flows.line.inputs import input_digests\n"
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


ROOMS: dict[str, dict[str, set[str]]] = {
    "pipelines": {
        "common": set(),
        "quality": {"common"},
        "dedup": {"common"},
        "segment": {"common", "quality", "dedup"},
        "vocab": {"common"},
        "tfrecords": {"common"},
        "decontaminate": {"common"},
        "select": {"common"},
        "predict": {"common"},
    },
    "model": {
        "runtime": set(),
        "network": set(),
        "input": set(),
        "optimization": set(),
        "checkpoints": {"runtime", "network"},
        "conversion": {"checkpoints", "network"},
        "tasks": {"network"},
        "finetune": {
            "predict",
            "tasks",
            "network",
            "input",
            "checkpoints",
            "conversion",
            "runtime",
            "optimization",
        },
        "evaluation": {"finetune", "tasks", "network", "input", "conversion"},
        "distill": {"finetune", "tasks", "network", "checkpoints", "runtime"},
        "predict": {"tasks", "network"},
        "pretrain": {
            "evaluation",
            "network",
            "input",
            "checkpoints",
            "conversion",
            "runtime",
            "optimization",
        },
    },
}
"""Each layer's packages by role, and the packages each may import: the arrows run down only."""
MENTIONS = {
    ("model/conversion/exports.py", "model.pretrain"),
    ("flows/line/flow.py", "flows.domain.flow"),
}
"""Strings that name a module as text, not to run it: the model card's `python -m` line, the
model line's advice to start a line with `python -m flows.domain.flow --base`."""


def _room(module: str) -> tuple[str, str | None]:
    """(layer, package by role) of one of our modules; None: a module at the layer's top."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (ROOT / Path(*parts)).is_dir()):
        return parts[0], parts[1]
    return parts[0], None


def _imported_modules(path: Path, strings: bool = True) -> set[str]:
    """Our modules the file imports, by statement (lazy and TYPE_CHECKING ones too) or, with
    `strings`, by naming them in a string."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            strings
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            names.update(_modules_named_in(node.value))
    return {name for name in names if name in OUR_MODULES}


@pytest.mark.parametrize("layer", list(ROOMS))
def test_the_layer_is_in_packages_by_role_with_the_arrows_running_down(layer: str) -> None:
    """Every module of pipelines/ and model/ is in a package by role; a package imports only
    itself and the packages below it (ROOMS), and the packages' import graph has no cycle."""
    rooms = ROOMS[layer]
    top = {path.stem for path in (ROOT / layer).glob("*.py")} - {"__init__"}
    assert not top, sorted(top)
    packages = {path.name for path in (ROOT / layer).iterdir() if (path / "__init__.py").exists()}
    assert packages == set(rooms)
    offenders = {}
    for path in (ROOT / layer).rglob("*.py"):
        module = _module_name(path)
        _, room = _room(module)
        if room is None:
            continue
        bad = set()
        for name in _imported_modules(path):
            other_layer, other_room = _room(name)
            if (str(path.relative_to(ROOT)), name) in MENTIONS:
                continue
            across = other_layer == layer and other_room not in {room, None} | rooms[room]
            if across:
                bad.add(name)
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert not offenders, f"imports that run back up or across: {offenders}"
    # the allowed arrows themselves have no cycle: a topological order exists
    done: list[str] = []
    while len(done) < len(rooms):
        ready = [r for r in rooms if r not in done and rooms[r] <= set(done)]
        assert ready, f"a cycle among {sorted(set(rooms) - set(done))}"
        done += ready


def test_our_modules_import_each_other_without_a_cycle() -> None:
    """Module by module over every layer (imports by statement, lazy and TYPE_CHECKING ones too,
    and modules named in strings; each module's package included): no module reaches itself
    again. The entry tables' names (dispatch, imported when a command runs) and the MENTIONS are
    not imports."""
    graph = {}
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            module = _module_name(path)
            mentioned = {name for file, name in MENTIONS if file == str(path.relative_to(ROOT))}
            imported = _imported_modules(path, strings=module not in ENTRY_TABLES) - mentioned
            graph[module] = {
                name
                for name in imported
                if name != module
                and not name.startswith(module + ".")
                and not module.startswith(name + ".")
            }
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of `graph` (module -> the modules it imports) as its modules in order, the first
    repeated at the end; None: there is none."""
    state: dict[str, int] = {}  # 1: on the current trail, 2: done, no cycle through it

    def visit(module: str, trail: list[str]) -> list[str] | None:
        if state.get(module) == 2:
            return None
        if state.get(module) == 1:
            return [*trail[trail.index(module) :], module]
        state[module] = 1
        for name in sorted(graph.get(module, ())):
            found = visit(name, [*trail, module])
            if found:
                return found
        state[module] = 2
        return None

    for module in sorted(graph):
        found = visit(module, [])
        if found:
            return found
    return None


def test_a_cycle_through_a_type_checking_import_is_found(tmp_path) -> None:
    """The check reads the imports a TYPE_CHECKING block holds as imports: a circle through one
    is a circle."""
    (tmp_path / "second.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from model.tasks import x\n"
    )
    assert "model.tasks" in _imported_modules(tmp_path / "second.py")
    graph = {"model.tasks": {"model.network"}, "model.network": {"model.tasks"}, "albert": set()}
    assert _cycle(graph) == ["model.network", "model.tasks", "model.network"]
    assert _cycle({"model.tasks": {"model.network"}, "model.network": set()}) is None
