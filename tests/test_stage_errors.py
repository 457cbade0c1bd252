"""Every failure reaches the user as one line `PROG failed: PATH: REASON`; tracebacks only with
--verbose."""

from __future__ import annotations

import pytest
from pydantic import Field

from albert import cli
from albert.config import ConfigError, StageConfig
from albert.errors import StageError, describe_error, naming
from albert.stage import stage_main

# What a Beam worker sends back (multi-processing / portable runners): the remote traceback as text.
BEAM_WORKER_ERROR = """Traceback (most recent call last):
  File "apache_beam/runners/common.py", line 1512, in apache_beam.runners.common.DoFnRunner.process
  File "/work/pipelines/segment.py", line 129, in process
    raise StageError(f"{path}: {reason}") from None
albert.errors.StageError: /data/b.jsonl: line 2: bad JSON record (Expecting value: line 1 column 1 (char 0))

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/venv/apache_beam/runners/worker/sdk_worker.py", line 310, in _execute
    response = task()
  File "apache_beam/runners/common.py", line 1623, in apache_beam.runners.common.DoFnRunner._reraise_augmented
albert.errors.StageError: /data/b.jsonl: line 2: bad JSON record (Expecting value: line 1 column 1 (char 0)) \
[while running 'Read/ParDo(ReadFiles)']
"""  # noqa: E501


class ToyConfig(StageConfig):
    output: str = Field("out")


def run_toy(error: BaseException, *flags: str) -> int:
    def fail(config):
        raise error

    return stage_main(ToyConfig, fail, list(flags), prog="albert toy", description="toy")


@pytest.mark.parametrize(
    "error, line, code",
    [
        (
            StageError("/d/x.txt: line 3: bad record [while running 'Map(parse)']"),
            "/d/x.txt: line 3: bad record",
            2,
        ),
        (
            RuntimeError(BEAM_WORKER_ERROR),
            "/data/b.jsonl: line 2: bad JSON record (Expecting value: line 1 column 1 (char 0))",
            2,
        ),
        (
            FileNotFoundError(2, "No such file or directory", "/d/missing.txt"),
            "/d/missing.txt: No such file or directory",
            2,
        ),
        (  # a library's terminal codes (Keras prints names in bold) are not in the line
            RuntimeError("calling T.call(): \x1b[1mlogits\x1b[0m"),
            "internal error: RuntimeError: calling T.call(): logits",
            1,
        ),
        (KeyError("\x1b[1mlogits\x1b[0m"), "internal error: KeyError: 'logits'", 1),
        (
            ValueError("Unsafe `Lambda` layer.\nmore"),
            "internal error: ValueError: Unsafe `Lambda` layer.",
            1,
        ),
        (ConfigError("PretrainConfig.steps: bad"), "PretrainConfig.steps: bad", 2),
        (TypeError("unsupported operand"), "internal error: TypeError: unsupported operand", 1),
    ],
)
def test_describe_error_gives_path_and_reason(error, line, code):
    assert describe_error(error) == (line, code)


def test_chained_stage_error_is_the_root_cause():
    try:
        try:
            raise StageError("/d/shard-3.tfrecord: record 17: corrupted (data CRC mismatch)")
        except StageError as inner:
            raise RuntimeError("pipeline failed") from inner
    except RuntimeError as outer:
        assert describe_error(outer) == (
            "/d/shard-3.tfrecord: record 17: corrupted (data CRC mismatch)",
            2,
        )


def error_lines(capsys) -> list[str]:
    """stderr lines (stage_main's logging writes there), without the time and level prefix."""
    return [
        line.split(": ", 1)[1] if " albert.stage: " in line else line
        for line in capsys.readouterr().err.splitlines()
    ]


def test_foreign_errors_are_one_line_and_traceback_only_with_verbose(capsys):
    assert run_toy(OSError(13, "Permission denied", "/d/out")) == 2
    assert error_lines(capsys) == ["albert toy failed: /d/out: Permission denied"]
    assert run_toy(KeyError("x")) == 1
    assert error_lines(capsys)[0] == "albert toy failed: internal error: KeyError: 'x'"
    assert run_toy(StageError("bad value"), "--verbose") == 2
    lines = error_lines(capsys)
    assert (
        lines[0] == "albert toy failed: bad value" and "Traceback (most recent call last):" in lines
    )


def test_a_bug_is_not_reported_as_the_users_mistake(tmp_path, capsys):
    """A ValueError (or an OSError naming no file) from our own code is a bug: exit 1, marked
    internal; only StageError/ConfigError and an OSError naming its file are the user's (exit 2)."""

    def buggy(config):
        return int(config.output)  # our code's mistake, not a bad setting: a ValueError

    code = stage_main(ToyConfig, buggy, ["--output", "o"], prog="albert toy", description="toy")
    assert code == 1
    assert error_lines(capsys) == [
        (
            "albert toy failed: internal error: ValueError: invalid literal for int() with base "
            "10: 'o'"
        ),
        "run with --verbose for the traceback",
    ]
    assert run_toy(ConnectionResetError("peer reset")) == 1
    assert "internal error: ConnectionResetError: peer reset" in error_lines(capsys)[0]
    with pytest.raises(StageError, match=r"^m\.keras: Unsafe"), naming("m.keras"):
        raise ValueError("Unsafe `Lambda` layer.")  # a library's known meaning, mapped where raised


def test_naming_prefixes_the_path_once():
    with (
        pytest.raises(StageError, match=r"^m\.keras: Requested the deserialization"),
        naming("m.keras"),
    ):
        raise ValueError(
            "Requested the deserialization of a `Lambda` layer whose `function` is a Python lambda."
        )
    with pytest.raises(StageError, match=r"^m\.keras: holds a Sequential$"), naming("m.keras"):
        raise ValueError("m.keras: holds a Sequential")


def test_unknown_beam_runner_is_one_line_through_the_cli(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("One sentence here. Another one.\n")
    code = cli.main(
        [
            "segment",
            "--input",
            str(tmp_path / "a.txt"),
            "--output",
            str(tmp_path / "out"),
            "--runner=DaskRunner",
        ]
    )
    assert code == 2
    [message] = error_lines(capsys)
    assert message.startswith(
        "albert segment failed: --runner=DaskRunner: Beam knows no runner by this name"
    )
    assert not (tmp_path / "out").exists()


def test_unsafe_keras_file_is_refused_in_one_line(tmp_path):
    import keras

    from model import pretrain

    path = str(tmp_path / "unsafe.keras")
    keras.Sequential([keras.Input((2,)), keras.layers.Lambda(lambda x: x * 2)]).save(path)
    with pytest.raises(
        StageError, match=rf"^{path}: Requested the deserialization of a `Lambda` layer"
    ):
        pretrain.load_initial_weights(None, path)


def test_library_tracebacks_are_dropped_from_the_console_unless_verbose():
    import logging

    from albert.log import _no_library_tracebacks

    def record(name, message, exc_info=None):
        return logging.LogRecord(name, logging.ERROR, __file__, 1, message, None, exc_info)

    try:
        raise StageError("x: y")
    except StageError as error:
        exc_info = (type(error), error, error.__traceback__)
    assert not _no_library_tracebacks(
        record("prefect.flow_runs", "Encountered exception during execution", exc_info)
    )
    assert not _no_library_tracebacks(
        record("apache_beam.runners.common", "x: y [while running 'Map']", exc_info)
    )
    assert not _no_library_tracebacks(
        record(
            "apache_beam.runners.portability.local_job_service",
            "Worker: message: Traceback (most recent call last):\n ...",
        )
    )
    assert _no_library_tracebacks(record("prefect.flow_runs", "Finished in state Failed('x: y')"))
    assert _no_library_tracebacks(record("albert.stage", "albert toy failed: x: y", exc_info))
