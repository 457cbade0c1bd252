"""Persisted task results are plain JSON; a stored record not exactly ours is refused unread."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import prefect_server
from pydantic import Field
from record_mutations import fuzz_reads, pickle_record
from thread_random import random_for_this_thread_alone

from albert.config import StageConfig
from albert.outputs import atomic_output_dir
from flows.engine.caching import stage_cache_key
from flows.engine.result_storage import (
    JsonOnlyLocalFileSystem,
    PlainJsonSerializer,
    UnsafeResultError,
    check_result_record,
)
from flows.engine.tasks import run_stage, stage_task

pytestmark = pytest.mark.backend_free


class EchoConfig(StageConfig):
    input: str = Field(description="file to copy")
    output: str = Field(description="output directory")


@stage_task(
    "echo", input_fields=["input"], modules=["flows.engine.tasks"], output_marker="echo.txt"
)
def echo_stage(config: EchoConfig) -> dict:
    """A tiny real stage: copies its input into OUTPUT/echo.txt."""
    with atomic_output_dir(config.output) as out:
        Path(out, "echo.txt").write_text(Path(config.input).read_text())
    return {"chars": len(Path(config.input).read_text())}


def test_result_record_check_accepts_plain_json_only(tmp_path: Path) -> None:
    from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
    from prefect.serializers import JSONSerializer

    ours = ResultRecord(
        metadata=ResultRecordMetadata(serializer=PlainJsonSerializer()), result={"a": 1}
    ).serialize()
    assert check_result_record(ours, "x") == ours
    assert json.loads(ours)["metadata"]["serializer"]["type"] == "albert-json"
    prefect_json = ResultRecord(
        metadata=ResultRecordMetadata(serializer=JSONSerializer()), result={"a": 1}
    ).serialize()
    for content, named in (
        (pickle_record(tmp_path / "m"), "'pickle'"),
        (prefect_json, "'json'"),
        (b"\x80\x04garbage", "not a JSON result record"),
    ):
        with pytest.raises(
            UnsafeResultError, match=f"^x: stored task result uses serializer .*{named}"
        ):
            check_result_record(content, "x")
    assert not (tmp_path / "m").exists()


def test_prefects_own_cache_check_never_unpickles(tmp_path: Path) -> None:
    """Prefect's ResultStore.exists/read deserialize a record; through our storage nothing is
    loaded."""
    from prefect.results import ResultStore

    marker = tmp_path / "pwned"
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "key").write_bytes(pickle_record(marker))
    store = ResultStore(result_storage=JsonOnlyLocalFileSystem(basepath=str(tmp_path / "store")))
    assert not store.exists("key")
    with pytest.raises(UnsafeResultError):
        store.read("key")
    assert not marker.exists()


@pytest.fixture(scope="module")
def echo_run(tmp_path_factory: pytest.TempPathFactory):
    """One real flow run of the echo stage on a temporary Prefect server (kept for the module): its
    flow, persisted record, the record's genuine bytes and the marker file payloads would touch."""
    from prefect import flow

    root = tmp_path_factory.mktemp("echo")
    source, storage = root / "in.txt", root / ".prefect"
    source.write_text("hello")
    config = EchoConfig(input=str(source), output=str(root / "out"))

    @flow
    def echo_flow() -> tuple[bool, dict]:
        outcome = run_stage(
            echo_stage,
            config,
            index=1,
            total=1,
            result_storage=storage,
        )
        return outcome.cached, outcome.result

    with prefect_server():
        assert echo_flow() == (False, {"chars": 5})
        record = storage / stage_cache_key("echo", config, ["input"], ["flows.engine.tasks"])
        yield SimpleNamespace(
            flow=echo_flow, record=record, genuine=record.read_bytes(), marker=root / "pwned"
        )


def test_tampered_result_in_run_dir_is_refused_not_executed(echo_run: SimpleNamespace) -> None:
    """The attacks: replace a persisted result with a pickle that runs a command, or keep our
    serializer in its metadata and name pickle at the top (Prefect's old layout), then re-run."""
    record, marker = echo_run.record, echo_run.marker
    assert json.loads(echo_run.genuine)["metadata"]["serializer"]["type"] == "albert-json"
    classic = json.loads(echo_run.genuine)
    classic["serializer"] = json.loads(pickle_record(marker))["metadata"]["serializer"]
    classic["result"] = json.loads(pickle_record(marker))["result"]
    for tampered in (pickle_record(marker), json.dumps(classic).encode()):
        record.write_bytes(tampered)
        with pytest.raises(UnsafeResultError) as caught:
            echo_run.flow()
        assert not marker.exists(), "the pickled payload ran"
        message = str(caught.value)
        assert "\n" not in message
        assert message.startswith(
            f"{record}: stored task result uses serializer 'pickle', not plain JSON; refused"
        )
    record.write_bytes(echo_run.genuine)
    assert echo_run.flow() == (True, {"chars": 5})  # the genuine record: still a cache hit


def test_mutated_records_never_run_code(echo_run: SimpleNamespace, tmp_path: Path) -> None:
    """Fuzz: 1,500 mutations of the real record are each refused in one line (Prefect's own check
    then says absent: recomputed) or read as plain JSON data; no payload ever runs."""
    (tmp_path / "store").mkdir()
    storage = JsonOnlyLocalFileSystem(basepath=str(tmp_path / "store"))
    start = time.monotonic()
    with random_for_this_thread_alone():  # the earlier flow's client threads: not the strategies'
        outcomes = fuzz_reads(
            storage, echo_run.record.name, echo_run.genuine, echo_run.marker, examples=1500
        )
    assert not echo_run.marker.exists()
    assert sum(outcomes.values()) >= 1000 and outcomes["refused"] > outcomes["data"], outcomes
    print(f"fuzzed record reads: {dict(outcomes)} in {time.monotonic() - start:.1f} s")
