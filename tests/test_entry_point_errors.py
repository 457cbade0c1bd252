"""Every entry point reports a bad configuration in one line on stderr, exit code 2, no traceback.

The entry points are found in the code: each module of albert/, pipelines/, model/ and flows/ whose
`if __name__ == "__main__":` block calls its `main` (`python -m MODULE`), and each subcommand in
`albert.cli.COMMANDS` (`albert NAME`). The flags an entry point is tried with are read from its own
`--help`. The entry points are called in-process (`main(argv)`); a few subprocesses prove that the
real commands print the same one line."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from albert import cli

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("albert", "pipelines", "model", "flows")
DISPATCHER = "albert.cli"  # its subcommands are entry points below; its own error has a test

BAD_FILES = {  # case: (file text or None for no file, the reason after `PATH: `)
    "missing file": (None, "No such file or directory"),
    "YAML syntax error": ("input: [a, b\n", "line 2, column 1: expected ',' or ']'"),
    "!!python/ tag": (
        "input: !!python/object/apply:os.system ['touch {marker}']\n",
        "line 1, column 8: the tag !!python/object/apply:os.system would build",
    ),
}
BAD_VALUES = {"--batch-size": "0", "--steps": "-1", "--vocab-size": "0"}


def _calls_main(block: ast.If) -> bool:
    """Whether the block calls `main` (or `main` imported as another name, `importable_main`)."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id.endswith("main")
        for node in ast.walk(block)
    )


def _is_main_guard(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
        and any(
            isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators
        )
    )


def python_m_modules() -> list[str]:
    """The modules `python -m` runs whose `__main__` block calls `main()` (a package's __main__.py
    counts for the package)."""
    modules = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(_is_main_guard(node) and _calls_main(node) for node in tree.body):
                parts = path.relative_to(REPO).with_suffix("").parts
                modules.append(".".join(parts[:-1] if parts[-1] == "__main__" else parts))
    return [module for module in modules if module != DISPATCHER]


ENTRY_POINTS = [f"python -m {module}" for module in python_m_modules()] + [
    f"albert {name}" for name in cli.COMMANDS
]


def call(entry_point: str, argv: list[str]) -> int:
    """`entry_point argv` in this process; its exit code (argparse's --help exits)."""
    if entry_point.startswith("albert "):
        return cli.main([entry_point.split()[1], *argv])
    module = importlib.import_module(entry_point.split()[-1])
    return module.main(argv)


def flags_of(entry_point: str, capsys) -> set[str]:
    """The flags the entry point's `--help` lists."""
    with pytest.raises(SystemExit) as exit_info:
        call(entry_point, ["--help"])
    assert exit_info.value.code == 0
    return {word.rstrip(",") for word in capsys.readouterr().out.split() if word.startswith("--")}


def one_error_line(capsys) -> str:
    """The single line on stderr (the message without the logger's time and level)."""
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0].split(": ", 1)[1]


def test_the_entry_points_are_found():
    modules = python_m_modules()
    assert {
        "pipelines.segment",
        "model.pretrain",
        "model.evaluation.evaluate",
        "flows.deploy",
    } <= set(modules)
    assert "albert.reaper" not in modules  # a __main__ block without main(): an internal helper


@pytest.mark.parametrize("case", BAD_FILES)
@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_a_bad_config_file_is_one_line_and_exit_2(entry_point, case, tmp_path, capsys):
    """An entry point without a configuration file (`albert runs`) refuses the flag in one line."""
    config_flags = flags_of(entry_point, capsys) & {"--config", "--file"}  # deploy: --file
    text, reason = BAD_FILES[case]
    marker = tmp_path / "marker"
    path = tmp_path / "config.yaml"
    if text is not None:
        path.write_text(text.format(marker=marker))
    config_flag = min(config_flags, default="--config")
    assert call(entry_point, [config_flag, str(path)]) == 2
    expected = (
        f"{entry_point} failed: {path}: {reason}" if config_flags else f"{entry_point} failed: "
    )
    assert one_error_line(capsys).startswith(expected)
    assert not marker.exists()


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_a_bad_setting_is_one_line_naming_the_field(entry_point, capsys):
    """Each of --batch-size 0, --steps -1, --vocab-size 0 the entry point has gives
    `PROG failed: Config.FIELD: REASON` (with any other bad or missing field, on the same line)."""
    for flag in flags_of(entry_point, capsys) & set(BAD_VALUES):
        assert call(entry_point, [flag, BAD_VALUES[flag]]) == 2
        message = one_error_line(capsys)
        field = flag[2:].replace("-", "_")
        assert message.startswith(f"{entry_point} failed: ")
        assert f"Config.{field}: Input should be greater" in message


SUBCOMMANDS = {
    "albert runs": ["gc", "run"],
    "python -m albert.runs": ["gc", "run"],
    "albert line": ["show", "line"],
    "python -m flows.line.cli": ["show", "line"],
}


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_an_unknown_flag_is_one_line(entry_point, capsys):
    """Every entry point, Beam's stages and the flows included (their other flags go to Beam);
    after its command where it has commands (`albert runs gc RUN_DIR --no-such-flag`)."""
    assert call(entry_point, [*SUBCOMMANDS.get(entry_point, []), "--no-such-flag"]) == 2
    message = one_error_line(capsys)
    assert message.startswith(f"{entry_point} failed: unknown flag --no-such-flag")
    assert message.endswith(f"({entry_point} --help lists the flags)")


MISSPELLED = {  # entry point, its flags, the misspelled flag and its value, the suggestion
    "a Beam stage": ("albert segment", ["--input", "in.txt"], ["--languge", "de"], "--language"),
    "a model command": (
        "albert finetune",
        ["--task", "sst2", "--data-dir", "d", "--init", "m.keras", "--spm-model", "s.model"],
        ["--max-seq-lenght", "512"],
        "--max-seq-length",
    ),
    "a flow": ("albert run", ["--input", "in.txt"], ["--max-seq-lenght=512"], "--max-seq-length"),
    "no close flag": ("albert segment", ["--input", "in.txt"], ["--bogus-flag", "3"], None),
}


@pytest.mark.parametrize("case", MISSPELLED)
def test_a_misspelled_flag_is_one_line_naming_the_closest(case, tmp_path, capsys):
    """Before any work: nothing is written, the output (run directory) is not made."""
    entry_point, argv, bad, suggestion = MISSPELLED[case]
    out = tmp_path / "out"
    out_flag = "--run-dir" if entry_point == "albert run" else "--output"
    assert call(entry_point, [*argv, out_flag, str(out), *bad]) == 2
    flag = bad[0].split("=")[0]
    named = f"{flag} (did you mean {suggestion}?)" if suggestion else flag
    assert one_error_line(capsys) == (
        f"{entry_point} failed: unknown flag {named} ({entry_point} --help lists the flags)"
    )
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_beam_flags_pass_through_unchanged(tmp_path, capsys):
    """Beam's own options, `--name=value` and `--name value`, reach the pipeline; one misspelled
    is named with Beam's flag."""
    book = REPO / "tests" / "fixtures" / "segment" / "book.txt"
    argv = ["--input", str(book), "--output", str(tmp_path / "out")]
    beam = ["--direct_num_workers=2", "--runner", "FnApiRunner"]
    assert call("albert segment", [*argv, *beam]) == 0
    assert (tmp_path / "out" / "stats.json").is_file()
    capsys.readouterr()
    assert call("albert segment", [*argv, "--direct_num_worker=2"]) == 2
    assert "unknown flag --direct_num_worker (did you mean --direct_num_workers?)" in (
        one_error_line(capsys)
    )


def test_an_unknown_albert_command_is_one_line(capsys):
    assert cli.main(["--config", "x.yaml"]) == 2
    assert one_error_line(capsys).startswith(
        "albert failed: unknown command '--config'; the commands are segment, vocab"
    )


@pytest.mark.parametrize(
    "command, config_text, expected",
    [
        (
            [sys.executable, "-m", "pipelines.segment", "--config"],
            "input: !!python/name:os.system\n",
            (
                "python -m pipelines.segment failed: {path}: line 1, column 8: "
                "the tag !!python/name:os"
            ),
        ),
        (
            ["albert", "finetune", "--config"],  # its config is checked before Keras loads
            "input: [a, b\n",
            (
                "albert finetune failed: {path}: line 2, column 1: expected ',' or ']', but got "
                "'<stream "
                "end>'"
            ),
        ),
        (
            [sys.executable, "-m", "model.pretrain", "--batch-size", "0", "--config"],
            "data: d\noutput: o\n",
            (
                "python -m model.pretrain failed: PretrainConfig.batch_size: Input should be "
                "greater "
                "than 0"
            ),
        ),
        (
            ["albert", "segment", "--output", "out", "--bogus-flag", "3", "--config"],
            "input: [in.txt]\n",
            "albert segment failed: unknown flag --bogus-flag (albert segment --help lists",
        ),
    ],
    ids=[
        "python -m pipelines.segment",
        "albert finetune",
        "python -m model.pretrain",
        "albert segment --bogus-flag",
    ],
)
def test_the_real_command_prints_one_line_and_exits_2(command, config_text, expected, tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(config_text)
    if command[0] == "albert":
        command = [str(Path(sys.executable).parent / "albert"), *command[1:]]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [*command, str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = done.stderr.splitlines()
    assert (done.returncode, len(lines), done.stdout) == (2, 1, ""), done.stderr
    assert lines[0].split(": ", 1)[1].startswith(expected.format(path=path))
    assert sorted(tmp_path.iterdir()) == [path]  # nothing written
