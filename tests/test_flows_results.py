"""Persisted task results are plain JSON; a stored record naming another serializer is refused unread."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import Field

from albert.config import StageConfig
from albert.fileio import atomic_output_dir
from flows.caching import stage_cache_key
from flows.tasks import (
    JsonOnlyLocalFileSystem,
    PlainJsonSerializer,
    UnsafeResultError,
    check_result_record,
    run_stage,
    stage_task,
)


class EchoConfig(StageConfig):
    input: str = Field(description="file to copy")
    output: str = Field(description="output directory")


@stage_task("echo", input_fields=["input"], modules=["flows.tasks"])
def echo_stage(config: EchoConfig) -> dict:
    """A tiny real stage: copies its input into OUTPUT/echo.txt."""
    with atomic_output_dir(config.output) as out:
        Path(out, "echo.txt").write_text(Path(config.input).read_text())
    return {"chars": len(Path(config.input).read_text())}


class RunsCommand:
    """What an attacker pickles: unpickling it runs a shell command."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def pickle_record(marker: Path) -> bytes:
    """A Prefect result record naming the (cloud)pickle serializer whose payload touches `marker`."""
    from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
    from prefect.serializers import PickleSerializer

    record = ResultRecord(metadata=ResultRecordMetadata(serializer=PickleSerializer()),
                          result=RunsCommand(f"touch {marker}"))
    return record.serialize()


def test_result_record_check_accepts_plain_json_only(tmp_path: Path) -> None:
    from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
    from prefect.serializers import JSONSerializer

    ours = ResultRecord(metadata=ResultRecordMetadata(serializer=PlainJsonSerializer()), result={"a": 1}).serialize()
    assert check_result_record(ours, "x") == ours
    assert json.loads(ours)["metadata"]["serializer"]["type"] == "albert-json"
    prefect_json = ResultRecord(metadata=ResultRecordMetadata(serializer=JSONSerializer()), result={"a": 1}).serialize()
    for content, named in ((pickle_record(tmp_path / "m"), "'pickle'"), (prefect_json, "'json'"),
                           (b"\x80\x04garbage", "not a JSON result record")):
        with pytest.raises(UnsafeResultError, match=f"^x: stored task result uses serializer .*{named}"):
            check_result_record(content, "x")
    assert not (tmp_path / "m").exists()


def test_prefects_own_cache_check_never_unpickles(tmp_path: Path) -> None:
    """Prefect's ResultStore.exists/read deserialize a record; through our storage nothing is loaded."""
    from prefect.results import ResultStore

    marker = tmp_path / "pwned"
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "key").write_bytes(pickle_record(marker))
    store = ResultStore(result_storage=JsonOnlyLocalFileSystem(basepath=str(tmp_path / "store")))
    assert not store.exists("key")
    with pytest.raises(UnsafeResultError):
        store.read("key")
    assert not marker.exists()


def test_tampered_result_in_run_dir_is_refused_not_executed(tmp_path: Path) -> None:
    """The attack: replace a persisted result with a pickle that runs a command, then re-run."""
    from prefect import flow
    from prefect.testing.utilities import prefect_test_harness

    source, storage, marker = tmp_path / "in.txt", tmp_path / ".prefect", tmp_path / "pwned"
    source.write_text("hello")
    config = EchoConfig(input=str(source), output=str(tmp_path / "out"))

    @flow
    def echo_flow() -> tuple[bool, dict]:
        outcome = run_stage(echo_stage, config, index=1, total=1,
                            output_marker=str(tmp_path / "out" / "echo.txt"), result_storage=storage)
        return outcome.cached, outcome.result

    with prefect_test_harness(server_startup_timeout=90):
        assert echo_flow() == (False, {"chars": 5})
        record = storage / stage_cache_key("echo", config, ["input"], ["flows.tasks"])
        assert json.loads(record.read_bytes())["metadata"]["serializer"]["type"] == "albert-json"
        record.write_bytes(pickle_record(marker))
        with pytest.raises(UnsafeResultError) as caught:
            echo_flow()
    assert not marker.exists(), "the pickled payload ran"
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{record}: stored task result uses serializer 'pickle', not plain JSON; refused")
