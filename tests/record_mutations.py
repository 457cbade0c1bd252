"""Mutations of a real Prefect result record; the check that reading any of them never runs code.

Shared by tests/test_flows_results.py (a bounded example count in `make test`) and
benchmarks/faults.py (a large one). Every payload that could run code, once deserialized by any of
Prefect's serializers, writes a marker file: reading a mutation through our result storage must
refuse it in one line (then Prefect's own cache check says "absent" and the stage is recomputed) or
give a record of plain JSON data; the marker must never appear.
"""

from __future__ import annotations

import asyncio
import base64
import bz2
import copy
import gzip
import json
import lzma
import os
import pickle
import shlex
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st


class RunsCommand:
    """What an attacker pickles: unpickling it runs a shell command."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def pickle_record(marker: Path) -> bytes:
    """A Prefect result record naming the cloudpickle serializer; its payload touches `marker`."""
    from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
    from prefect.serializers import PickleSerializer

    record = ResultRecord(
        metadata=ResultRecordMetadata(serializer=PickleSerializer()),
        result=RunsCommand(f"touch {shlex.quote(str(marker))}"),
    )
    return record.serialize()


def attacks(marker: Path) -> list[tuple[dict, str]]:
    """(serializer entry, result text) pairs: each of Prefect's pickle-based serializers with a
    payload that it would load by running `touch marker`, and its class-importing JSON ones."""
    from prefect.serializers import (
        CompressedJSONSerializer,
        CompressedPickleSerializer,
        CompressedSerializer,
        JSONSerializer,
        PickleSerializer,
    )

    bomb = RunsCommand(f"touch {shlex.quote(str(marker))}")
    pickling = [
        PickleSerializer(),
        PickleSerializer(picklelib="pickle"),
        CompressedPickleSerializer(),
        *(
            CompressedSerializer(serializer=PickleSerializer(picklelib=lib), compressionlib=comp)
            for lib in ("cloudpickle", "pickle")
            for comp in ("lzma", "bz2", "zlib", "gzip")
        ),
    ]
    class_by_name = {"__class__": f"{__name__}.RunsCommand", "data": {"command": f"touch {marker}"}}
    return [
        *((s.model_dump(mode="json"), s.dumps(bomb).decode()) for s in pickling),
        *(
            (s.model_dump(mode="json"), s.dumps(class_by_name).decode())
            for s in (JSONSerializer(), CompressedJSONSerializer())
        ),
    ]


def serializers(marker: Path) -> list[Any]:
    """Serializer entries as records name them: Prefect's own (model dumps), ours, and odd ones."""
    return [
        *(entry for entry, _ in attacks(marker)),
        {"type": "albert-json"},
        {"type": "albert-json", "picklelib": "pickle"},
        {"type": "ALBERT-JSON"},
        "pickle",
        "albert-json",
        None,
        {"type": "compressed/pickle", "compressionlib": "lzma"},
    ]


def payloads(marker: Path) -> list[str]:
    """Result texts that run `touch marker` when a pickle-based serializer (base64, compressed or
    raw) or Prefect's class-importing JSON decoder loads them."""
    raw = pickle.dumps(RunsCommand(f"touch {shlex.quote(str(marker))}"))
    return [
        *(text for _, text in attacks(marker)),
        raw.decode("latin-1"),
        base64.b64encode(raw).decode(),
        base64.b64encode(zlib.compress(raw)).decode(),
        base64.b64encode(lzma.compress(raw)).decode(),
    ]


_KEYS = [
    "serializer",
    "result",
    "data",
    "metadata",
    "expiration",
    "prefect_version",
    "storage_key",
    "storage_block_id",
    "type",
    "picklelib",
    "compressionlib",
    "__class__",
    "chars",
]


OPERATIONS = ["set", "drop", "duplicate", "serializer", "old", "payload", "attack", "attack"]


def mutations(genuine: bytes, marker: Path) -> st.SearchStrategy[bytes]:
    """Bytes derived from the real record `genuine`: keys added, dropped or duplicated at every
    level, other serializers (in the metadata or at the top, as old records kept them), the old
    record format, attack payloads as the result, then optionally a byte-level change (truncation,
    a flipped or inserted byte, compression, base64, another text encoding, trailing data)."""
    record = json.loads(genuine)
    names, texts = serializers(marker), payloads(marker)
    matched = st.sampled_from(attacks(marker)).map(copy.deepcopy)
    named = st.sampled_from(names).map(copy.deepcopy)  # drawn entries get mutated: never share them
    values = st.one_of(
        named,
        st.sampled_from(texts),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=6,
        ),
    )
    keys = st.one_of(st.sampled_from(_KEYS), st.text(max_size=6))
    levels = st.sampled_from(["top", "metadata", "serializer", "value"])

    def apply(draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
        doc = copy.deepcopy(record)
        value = json.loads(doc["result"])
        duplicates: dict[str, list[tuple[str, Any]]] = {}
        for _ in range(draw(st.integers(0, 4))):
            op, level = (
                draw(st.sampled_from(OPERATIONS)),
                draw(levels),
            )
            metadata = doc.get("metadata")
            target = {
                "top": doc,
                "metadata": metadata,
                "value": value,
                "serializer": metadata.get("serializer") if isinstance(metadata, dict) else None,
            }[level]
            if op == "set" and isinstance(target, dict):
                target[draw(keys)] = draw(values)
            elif op == "drop" and isinstance(target, dict) and target:
                target.pop(draw(st.sampled_from(sorted(target))))
            elif op == "duplicate" and isinstance(target, dict) and target:
                duplicates.setdefault(level, []).append(
                    (draw(st.sampled_from(sorted(target))), draw(values))
                )
            elif op == "serializer":
                where = doc if level in ("top", "value") else doc.setdefault("metadata", {})
                if isinstance(where, dict):
                    where["serializer"] = draw(named)
            # a serializer and a payload it loads, at the top, in metadata, both
            elif op == "attack":
                (entry, payload), metadata = draw(matched), doc.get("metadata")
                if level in ("top", "serializer") or not isinstance(metadata, dict):
                    doc["serializer"] = (
                        entry  # the classic attack: Prefect moves it over metadata's
                    )
                if level in ("metadata", "serializer") and isinstance(metadata, dict):
                    metadata["serializer"] = copy.deepcopy(entry)
                doc["result" if "result" in doc else "data"] = payload
                value = None
            elif op == "old":  # Prefect's old layout: metadata fields and "data" at the top level
                metadata = doc.pop("metadata", None)
                doc.update(metadata if isinstance(metadata, dict) else {})
                doc["data"] = doc.pop("result", None)
            elif op == "payload":
                payload = draw(st.sampled_from(texts))
                if level == "value" and isinstance(value, dict):
                    value[draw(keys)] = payload
                else:
                    doc["result" if "result" in doc else "data"] = payload
                    value = None
        # the value as our serializer writes it
        if value is not None and doc.get("result") == record["result"]:
            doc["result"] = json.dumps(value, sort_keys=True)
        data = _emit(
            doc, duplicates, value_level=value if isinstance(value, dict) else None
        ).encode()
        return _byte_change(draw, data)

    return st.composite(apply)()


def _emit(doc: dict, duplicates: dict[str, list[tuple[str, Any]]], value_level: dict | None) -> str:
    """JSON text of `doc`; the objects named in `duplicates` repeat those keys with new values."""

    def obj(mapping: dict, extra: list[tuple[str, Any]], inner: Callable[[str, Any], str]) -> str:
        pairs = [*mapping.items(), *extra]
        return "{" + ",".join(f"{json.dumps(k)}:{inner(k, v)}" for k, v in pairs) + "}"

    def serializer_level(key: str, val: Any) -> str:
        return (
            obj(val, duplicates.get("serializer", []), lambda k, v: json.dumps(v))
            if key == "serializer" and isinstance(val, dict)
            else json.dumps(val)
        )

    def top_level(key: str, val: Any) -> str:
        if key == "metadata" and isinstance(val, dict):
            return obj(val, duplicates.get("metadata", []), serializer_level)
        if key == "result" and value_level is not None and duplicates.get("value"):
            return json.dumps(obj(value_level, duplicates["value"], lambda k, v: json.dumps(v)))
        return json.dumps(val)

    return obj(doc, duplicates.get("top", []), top_level)


BYTE_CHANGES = ["none"] * 6 + [
    "truncate",
    "flip",
    "insert",
    "gzip",
    "zlib",
    "bz2",
    "lzma",
    "base64",
    "utf-16",
    "bom",
    "trailing",
]
"""What happens to the mutated record's bytes: nothing about a third of the time."""


def _byte_change(draw: Callable[[st.SearchStrategy[Any]], Any], data: bytes) -> bytes:
    change = draw(st.sampled_from(BYTE_CHANGES))
    at = draw(st.integers(0, max(len(data) - 1, 0)))
    if change == "truncate":
        return data[:at]
    if change == "flip":
        return (
            data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
            if data
            else data
        )
    if change == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    if change == "trailing":
        return data + draw(st.sampled_from([b"\n", b" {}", b'{"result": 1}', b"\x80\x04."]))
    encode = {
        "gzip": gzip.compress,
        "zlib": zlib.compress,
        "bz2": bz2.compress,
        "lzma": lzma.compress,
        "base64": base64.b64encode,
        "utf-16": lambda d: d.decode().encode("utf-16"),
        "bom": lambda d: b"\xef\xbb\xbf" + d,
    }
    return encode[change](data) if change in encode else data


def read_outcome(storage: Any, key: str, data: bytes, genuine: bytes, marker: Path) -> str:
    """Write `data` as the record `key` of `storage` (a JSON-only block) and read it back the ways
    Prefect and our flows do. Returns 'refused', 'same' (the genuine record: the mutation changed
    nothing that counts) or 'data' (another plain-JSON summary); fails if code ran or anything else
    came back."""
    from prefect._internal.result_records import ResultRecord
    from prefect.results import ResultStore

    from flows.engine.result_storage import PlainJsonSerializer, UnsafeResultError

    where = f"{storage.basepath}/{key}"
    Path(where).write_bytes(data)
    try:
        rebuilt = storage.read_path(key, _sync=True)
    except UnsafeResultError as error:
        message = str(error)
        assert "\n" not in message and message.startswith(f"{where}: stored task result "), message
        outcome = "refused"
    else:
        assert asyncio.run(storage.aread_path(key)) == rebuilt
        record = ResultRecord.deserialize(rebuilt)
        assert record.serializer.type == "albert-json" and _plain(record.result), rebuilt
        outcome = "same" if rebuilt == genuine else "data"
    store = ResultStore(
        result_storage=storage, serializer=PlainJsonSerializer(), cache_result_in_memory=False
    )
    assert store.exists(key) == (
        outcome != "refused"
    )  # Prefect's cache check: absent -> recomputed
    if outcome != "refused":
        assert _plain(store.read(key).result)
    assert not marker.exists(), f"a payload ran: {data[:200]!r}"
    return outcome


def _plain(value: Any) -> bool:
    """Whether `value` is made of JSON's own types only (no object was built)."""
    if isinstance(value, dict):
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


def fuzz_reads(
    storage: Any, key: str, genuine: bytes, marker: Path, examples: int, random_seed: int = 0
) -> Counter:
    """Read `examples` mutations of `genuine` (drawn from `random_seed`) through `storage`, each
    with `read_outcome`; the count of each outcome."""
    outcomes: Counter = Counter()

    @seed(random_seed)
    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(mutations(genuine, marker))
    def check(data: bytes) -> None:
        outcomes[read_outcome(storage, key, data, genuine, marker)] += 1

    check()
    return outcomes
