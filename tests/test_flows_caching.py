"""Cross-run cache keys (manifest + config + code) and retry classification, on real Prefect."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from conftest import prefect_server
from pydantic import Field

from albert.config import ConfigError, StageConfig
from albert.errors import StageError
from albert.outputs import atomic_output_dir
from flows.engine.caching import code_version, manifest_digest, module_closure, stage_cache_key
from flows.engine.retry import is_transient_error
from flows.engine.tasks import run_stage, stage_task

pytestmark = pytest.mark.backend_free


class CopyConfig(StageConfig):
    input: str = Field(description="file to copy")
    output: str = Field(description="output directory")
    suffix: str = Field("", description="appended to the copy")


CALLS: list[str] = []


@stage_task(
    "copy", input_fields=["input"], modules=["flows.engine.caching"], output_marker="copy.txt"
)
def copy_stage(config: CopyConfig) -> dict:
    """A tiny real stage: copies its input into OUTPUT/copy.txt atomically."""
    CALLS.append(config.output)
    with atomic_output_dir(config.output) as out:
        Path(out, "copy.txt").write_text(Path(config.input).read_text() + config.suffix)
    return {"chars": len(Path(config.input).read_text()) + len(config.suffix)}


def test_manifest_tracks_names_sizes_and_content(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one")
    first = manifest_digest([str(tmp_path)])
    assert manifest_digest([str(tmp_path)]) == first
    (tmp_path / "a.txt").write_text("two")  # same size, new content
    assert manifest_digest([str(tmp_path)]) != first
    second = manifest_digest([str(tmp_path)])
    (tmp_path / "b.txt").write_text("")
    assert manifest_digest([str(tmp_path)]) != second
    assert manifest_digest([str(tmp_path / "*.txt")]) == manifest_digest([str(tmp_path / "*.txt")])
    assert manifest_digest([str(tmp_path / "missing")]) != manifest_digest([str(tmp_path)])


def test_cache_key_changes_with_config_inputs_and_stage(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("hello")
    config = CopyConfig(input=str(source), output=str(tmp_path / "out"))
    key = stage_cache_key("copy", config, ["input"], ["flows"])
    assert key == stage_cache_key("copy", config.model_copy(), ["input"], ["flows"])
    assert key != stage_cache_key(
        "copy", config.model_copy(update={"suffix": "!"}), ["input"], ["flows"]
    )
    assert key != stage_cache_key("other", config, ["input"], ["flows"])
    source.write_text("hellO")
    assert key != stage_cache_key("copy", config, ["input"], ["flows"])
    assert len(code_version(["flows.engine.caching"])) == 64
    assert code_version(["flows.engine.caching"]) != code_version(["albert.fs"])


def test_code_version_covers_the_modules_a_stage_runs() -> None:
    """Lazy imports inside functions count; modules a stage never imports (fine-tuning) do not."""
    pretrain = module_closure(["model.pretrain"])
    assert {
        "model.pretrain",
        "model.checkpoints.store",
        "model.input.tf_data",
        "model.conversion.convert",
        "albert.fs",
        "albert.outputs",
        "albert.masking",
        "model",
        "albert",
    } <= set(pretrain)
    assert "model.finetune" not in pretrain and "pipelines.segment.stage" not in pretrain
    for data_stage in (
        "pipelines.segment.stage",
        "pipelines.vocab.stage",
        "pipelines.tfrecords.stage",
    ):
        assert not any(name.startswith("model") for name in module_closure([data_stage])), (
            data_stage
        )


def test_transient_errors_are_retried_bad_input_is_not() -> None:
    assert is_transient_error(OSError(5, "Input/output error"))
    assert is_transient_error(ConnectionResetError())
    assert is_transient_error(TimeoutError())
    assert not is_transient_error(FileNotFoundError("gone"))
    assert not is_transient_error(OSError(errno.ENOSPC, "No space left on device"))
    assert not is_transient_error(OSError(errno.EROFS, "Read-only file system"))
    assert not is_transient_error(StageError("bad record"))
    assert not is_transient_error(ConfigError("bad field"))
    assert not is_transient_error(ValueError("bug"))


def test_stage_cached_across_runs_and_rerun_when_needed(tmp_path: Path) -> None:
    from prefect import flow

    source = tmp_path / "in.txt"
    source.write_text("hello")
    storage = tmp_path / "results"

    @flow
    def copy_flow(suffix: str = "") -> tuple[bool, dict]:
        config = CopyConfig(input=str(source), output=str(tmp_path / "out"), suffix=suffix)
        outcome = run_stage(
            copy_stage,
            config,
            index=1,
            total=1,
            result_storage=storage,
        )
        return outcome.cached, outcome.result

    CALLS.clear()
    with prefect_server():
        assert copy_flow() == (False, {"chars": 5})
        assert copy_flow() == (True, {"chars": 5})  # a new flow run: cross-run cache hit
        cached, result = copy_flow("!")  # parameter changed: re-run; the first output is kept aside
        assert (cached, result["chars"]) == (False, 6)
        assert Path(result["moved_aside"], "copy.txt").read_text() == "hello"
        source.write_text("hello world")
        cached, result = copy_flow("!")  # input changed: re-run
        assert (cached, result["chars"]) == (False, 12)
        assert Path(result["moved_aside"], "copy.txt").read_text() == "hello!"
        (tmp_path / "out" / "copy.txt").unlink()
        assert copy_flow("!") == (False, {"chars": 12})  # output deleted: re-run, nothing to keep
        assert (tmp_path / "out" / "copy.txt").read_text() == "hello world!"
        assert copy_flow("!") == (True, {"chars": 12})
    assert len(CALLS) == 4
