"""Where the flows' task results are persisted, and how they are read back: plain JSON only.

Results are persisted as plain JSON only (`PlainJsonSerializer`). A run directory may sit on a
shared bucket, so a stored record is never handed to Prefect as found: the storage that Prefect
reads records through parses it strictly (`check_result_record`: exact keys, no duplicates, our
serializer, a JSON object as the value) and gives Prefect a record rebuilt from the parsed plain
values, so whatever else the file holds (another serializer, a pickle, an old record format) never
reaches a deserializer that can build objects. A record that fails the check is refused with a
StageError (`UnsafeResultError`)."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any, Literal

from prefect.filesystems import LocalFileSystem, RemoteFileSystem
from prefect.results import ResultRecord
from prefect.serializers import Serializer
from prefect.states import State

from albert.errors import StageError
from albert.fs import join, remove


class PlainJsonSerializer(Serializer):
    """Task results as plain JSON: no pickle and, unlike Prefect's "json", no class looked up by
    name."""

    type: Literal["albert-json"] = "albert-json"

    def dumps(self, obj: Any) -> bytes:
        return json.dumps(obj, sort_keys=True, default=str).encode()

    def loads(self, blob: bytes) -> Any:
        return json.loads(blob)


class UnsafeResultError(StageError):
    """A stored task result is not a plain-JSON record of ours; it is refused, never loaded."""


_OUR_SERIALIZER = {"type": PlainJsonSerializer.model_fields["type"].default}
_RECORD_KEYS = ("metadata", "result")
_METADATA_KEYS = ("storage_key", "expiration", "serializer", "prefect_version", "storage_block_id")
"""The record layout Prefect 3.8 writes (`ResultRecord.serialize`), the only one we read back."""


class _NotOurRecord(Exception):
    """Why a stored record is not one that `PlainJsonSerializer` wrote."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json `object_pairs_hook`: an object naming a key twice is not ours (readers disagree)."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate key {next(k for k in keys if keys.count(k) > 1)!r}")
    return dict(pairs)


def _strict_json(text: str | bytes) -> Any:
    """Plain values (dict, list, str, number, bool, None) from JSON text; else ValueError."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError as error:
        raise ValueError("nested too deeply") from error


def _rebuilt_record(content: bytes) -> bytes:
    """The record `content` rebuilt from its parsed plain values; else _NotOurRecord saying why."""
    try:
        record = _strict_json(content)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        raise _NotOurRecord("uses serializer 'none: not a JSON result record', not plain JSON")
    metadata = record.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    for serializer in (record.get("serializer", _OUR_SERIALIZER), metadata.get("serializer")):
        if serializer != _OUR_SERIALIZER:  # the first one: where old records kept it
            kind = serializer.get("type") if isinstance(serializer, dict) else serializer
            named = serializer if kind == _OUR_SERIALIZER["type"] else kind
            raise _NotOurRecord(f"uses serializer {_short(named)}, not plain JSON")
    for keys, expected in ((record, _RECORD_KEYS), (metadata, _METADATA_KEYS)):
        if unexpected := sorted(set(keys) - set(expected)):
            raise _NotOurRecord(f"has an unexpected key {_short(unexpected[0])}")
        if missing := [key for key in expected if key not in keys]:
            raise _NotOurRecord(f"lacks the key {missing[0]!r}")
    storage_key, block_id = metadata["storage_key"], metadata["storage_block_id"]
    if not (
        isinstance(storage_key, str | None)
        and isinstance(metadata["prefect_version"], str)
        and metadata["expiration"] is None
        and (block_id is None or _is_uuid(block_id))
    ):
        raise _NotOurRecord("has metadata values of the wrong type")
    result = record["result"]
    try:
        result = _strict_json(result) if isinstance(result, str) else None
    except ValueError as error:
        raise _NotOurRecord(f"holds a value that is not plain JSON ({error})") from None
    if not isinstance(result, dict):
        raise _NotOurRecord("holds a value that is not a JSON object")
    rebuilt = {
        "metadata": {key: metadata[key] for key in _METADATA_KEYS},
        "result": PlainJsonSerializer().dumps(result).decode(),
    }
    return json.dumps(rebuilt, ensure_ascii=False, separators=(",", ":")).encode()


def _short(value: Any) -> str:
    """repr(value), cut to 60 characters: a refusal names what it found in one readable line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_uuid(value: Any) -> bool:
    try:
        return isinstance(value, str) and str(uuid.UUID(value)) == value
    except ValueError:
        return False


def check_result_record(content: bytes, where: str) -> bytes:
    """The Prefect result record `content` rebuilt from its plain values, if it is one that
    `PlainJsonSerializer` wrote (strict: the exact keys and types of `_METADATA_KEYS`, no duplicate
    keys, a JSON object as the value); else raise a one-line UnsafeResultError naming `where`.

    Only the rebuilt bytes reach Prefect, so no reader sees a key, a serializer or a payload that
    the check did not pass, whatever its parsing rules; nothing is parsed here but plain JSON.
    """
    try:
        return _rebuilt_record(content)
    except _NotOurRecord as error:
        raise UnsafeResultError(
            f"{where}: stored task result {error}; refused without loading it (it could run code)"
            " - delete the file to re-run the stage"
        ) from None


# Built on Prefect's public storage blocks; Prefect has no public hook that sees a record before it
# is deserialized, so the mixin overrides the blocks' two read methods (their `_sync` flag is
# Prefect's internal sync/async dispatch, which we only accept, never import).
class _JsonOnlyReads:
    """Storage-block mixin: Prefect reads every record as `check_result_record` rebuilt it.

    Prefect calls `read_path(key, _sync=True)` from sync code and `aread_path(key)` from async
    code, so plain methods suffice: `read_path` always reads synchronously.
    """

    basepath: str

    def _record_path(self, path: str) -> str:
        return join(str(self.basepath), path)

    async def aread_path(self, path: str) -> bytes:
        content = await super().aread_path(path)  # type: ignore[misc]
        return check_result_record(content, self._record_path(path))

    def read_path(self, path: str, _sync: bool = True) -> bytes:
        content = super().read_path(path, _sync=True)  # type: ignore[misc]
        return check_result_record(content, self._record_path(path))


class JsonOnlyLocalFileSystem(_JsonOnlyReads, LocalFileSystem):
    """Local result storage that reads plain-JSON result records only."""

    _block_type_name = "Albert JSON-only Local File System"
    _block_type_slug = "albert-json-only-local-file-system"


class JsonOnlyRemoteFileSystem(_JsonOnlyReads, RemoteFileSystem):
    """Remote (gs://, s3://, ...) result storage that reads plain-JSON result records only."""

    _block_type_name = "Albert JSON-only Remote File System"
    _block_type_slug = "albert-json-only-remote-file-system"


def result_storage_for(url: str) -> Any:
    """Prefect result storage at `url` (a local directory, or gs:// etc.) that reads plain-JSON
    records only; a block saved on the Prefect server, as Prefect requires of storage blocks."""
    if "://" not in url or url.startswith("file://"):
        block: Any = JsonOnlyLocalFileSystem(
            basepath=str(Path(url.removeprefix("file://")).resolve())
        )
    else:
        block = JsonOnlyRemoteFileSystem(basepath=url)
    block.save(
        "albert-results-" + hashlib.sha256(block.basepath.encode()).hexdigest()[:16], overwrite=True
    )
    return block


def json_only_storage(storage: Any) -> Any:
    """`storage` (a local directory, or a block from `result_storage_for`) as a JSON-only block."""
    if isinstance(storage, _JsonOnlyReads):
        return storage
    if isinstance(storage, (str, Path)):
        return result_storage_for(str(storage))
    raise TypeError(
        f"result storage must be a local directory or made by result_storage_for, not {storage!r}"
    )


def discard_failure_record(state: State, storage: Any) -> None:
    """Delete the record Prefect persisted of a failed stage's exception: the result storage holds
    cached results only, and the failure itself is reported in one line."""
    if isinstance(state.data, ResultRecord) and state.data.metadata.storage_key:
        remove(join(str(storage.basepath), state.data.metadata.storage_key))
