"""A model line checks itself (flows.line.check): `albert line check`, what `show`, `prune` and a
night refuse, what a night removes of killed commits, and what pruning keeps. The lines are
written with the line's own writers (`ModelLine.commit`, `write_json`), no night is trained; a
Hypothesis test mutates line.json, version.json and `current`: every mutation is refused in one
line (exit 2) or is a valid line, never a traceback or a deletion."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albert import cli
from flows.line.config import LineConfig
from flows.line.inputs import novelty
from flows.line.records import LINE_FILE, ModelLine, next_version, write_json

pytestmark = pytest.mark.backend_free

SETTINGS = {
    "format": "albert-model-line-v1",
    "base": {"path": "base", "model_file": "base/model.keras", "spm_model": "base/spiece.model"},
    "preset": "albert-nano",
    "tfrecords": {"max_seq_length": 64, "max_predictions_per_seq": 10},
    "general": {"data": "general", "shards": ["general/a"], "counts": [3], "listing": "x"},
}


def files_of(tmp: Path, night: int) -> list[Path]:
    """Two corpus files of night `night` (their content is the night's)."""
    paths = [tmp / "inbox" / f"n{night}-{i}.txt" for i in range(2)]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"night {night}, file {path.name}\n")
    return paths


def corpus(paths: list[Path]) -> dict[str, Any]:
    return {
        "files": [
            {"path": str(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in paths
        ]
    }


FILES = ("export/model.keras", "vocab/spiece.model", "data/d-0.tfrecord", "data/h.tfrecord")
"""A version's files: an export, a vocabulary, a data shard and a held-out shard."""


def fill(directory: str) -> None:
    for name in FILES:
        path = Path(directory) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(name.encode() * 3)


NIGHT_DATA = {"shards": ["data/d-0.tfrecord"], "counts": [3], "heldout": ["data/h.tfrecord"]}


def make_line(root: Path) -> ModelLine:
    """v0001 the base, v0002 promoted (current), v0003 refused: written by the line's writers."""
    line = ModelLine(str(root / "line"))
    write_json(line.path(LINE_FILE), SETTINGS)
    base_night = {"work_dir": line.path("nights", "base")}
    base = {"parent": None, "status": "base", "corpus": {"files": []}, "night": base_night}
    line.commit("v0001", base, fill, promote=True)
    for name, parent, status, night in (
        ("v0002", "v0001", "promoted", 1),
        ("v0003", "v0002", "refused", 2),
    ):
        record = {
            "parent": parent,
            "status": status,
            "reason": "a test",
            "corpus": corpus(files_of(root, night)),
            "data": NIGHT_DATA,
            "scores": {"domain": {"masked_lm_loss": 5.0}, "general": None},
            "trained_on": {"new": 10},
            "night": {"work_dir": line.path("nights", f"{parent}-{night}")},
        }
        Path(line.path("nights", f"{parent}-{night}")).mkdir(parents=True)
        line.commit(name, record, fill, promote=status == "promoted")
    return line


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("template")
    make_line(root)
    return root


@pytest.fixture()
def line(template: Path, tmp_path: Path) -> ModelLine:
    shutil.copytree(template, tmp_path, dirs_exist_ok=True)
    return ModelLine(str(tmp_path / "line"))


def albert(*argv: str) -> tuple[int, list[str], list[str]]:
    """`albert ARGV` in this process: (exit code, stdout lines, stderr lines)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue().splitlines(), [s for s in err.getvalue().splitlines() if s]


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_sound_line_checks_clean_and_a_changed_byte_is_found(line: ModelLine) -> None:
    code, out, err = albert("line", "check", line.url)
    assert code == 0 and not err and "sound: current v0002, 3 version(s), 12 listed" in out[0]
    assert albert("line", "show", line.url)[0] == 0
    listing = json.loads(Path(line.path("v0002", "version.json")).read_text())["files"]
    assert set(listing) == set(FILES)
    model = Path(line.path("v0001", "export", "model.keras"))
    model.write_bytes(model.read_bytes()[::-1])  # same size, other bytes: only the digest sees it
    assert albert("line", "show", line.url)[0] == 0
    code, _, err = albert("line", "check", line.url)
    assert code == 2 and len(err) == 1
    assert err[0].endswith(f"failed: {model}: its sha256 is not the one version.json records")
    model.unlink()
    code, _, err = albert("line", "show", line.url)
    assert code == 2 and err[0].endswith(f"{model}: missing (listed in version.json)")


def test_a_version_from_before_the_listing_is_checked_by_the_files_it_names(line: ModelLine):
    """The old layout stays readable: a version.json without `files` is checked by its export
    and data shards."""
    for name in ("v0001", "v0002", "v0003"):
        path = Path(line.path(name, "version.json"))
        record = json.loads(path.read_text())
        del record["files"]
        path.write_text(json.dumps(record))
    assert albert("line", "check", line.url)[0] == 0
    assert albert("line", "show", line.url)[0] == 0
    Path(line.path("v0002", "data", "h.tfrecord")).unlink()
    code, _, err = albert("line", "show", line.url)
    assert code == 2 and err[0].endswith(f"{line.path('v0002', 'data', 'h.tfrecord')}: missing")


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda line: Path(line.path("current")).write_text("v0009\n"), "names v0009, which is no"),
        (
            lambda line: _edit(line, "v0003", parent="../../etc"),
            "parent '../../etc' is no version of the line",
        ),
        (
            lambda line: Path(line.path("current")).write_bytes(b"\x00\xff\xfe"),
            "holds b'\\x00\\xff\\xfe', not a version name",
        ),
    ],
    ids=["missing-version", "parent-outside", "bytes"],
)
def test_show_says_what_is_broken(line: ModelLine, damage, said) -> None:
    """Issue 46 row 7: show printed `current v0009` and exited 0; bytes gave UnicodeDecodeError."""
    damage(line)
    for command in ("show", "check", "prune"):
        code, _, err = albert("line", command, line.url)
        assert code == 2 and len(err) == 1 and said in err[0], (command, err)


def test_prune_refuses_a_version_without_its_parent(line: ModelLine) -> None:
    """Issue 46 row 8: a promoted version whose parent is null made prune offer the base."""
    _edit(line, "v0002", parent=None)
    before = tree(Path(line.url))
    code, out, err = albert("line", "prune", line.url, "--yes")
    assert code == 2 and not out and len(err) == 1
    assert "v0002/version.json: parent None is no version of the line" in err[0]
    assert tree(Path(line.url)) == before


def test_a_pruned_refused_nights_files_stay_taken(line: ModelLine, tmp_path: Path) -> None:
    """Issue 46 row 5: pruning a refused night made its files new again."""
    night_two = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files_of(tmp_path, 2)}
    config = LineConfig(line=line.url, input=["unused"])
    assert novelty(config, line, night_two)[1]  # taken: v0003 was refused
    said = f"{line.url}: nothing new since v0002 (--input unused matched no file yet); nothing done"
    assert novelty(config, line, {})[1] == said  # a typo in the glob shows
    code, out, _ = albert("line", "prune", line.url, "--yes")
    assert code == 0 and any(o.startswith(f"removed {line.path('v0003')}  (") for o in out), out
    assert (
        not Path(line.path("v0003")).exists() and not Path(line.path("nights", "v0002-2")).exists()
    )
    assert sorted(line.records()) == ["v0001", "v0002"] and list(line.pruned()) == ["v0003"]
    assert "nothing new since v0002" in novelty(config, line, night_two)[1]
    retry = config.model_copy(update={"retry_refused": True})
    assert novelty(retry, line, night_two) == (night_two, None)
    assert next_version(line.records(), line.pruned()) == "v0004"  # a name is never given twice
    assert albert("line", "check", line.url)[0] == 0


def test_a_night_removes_what_killed_commits_left(line: ModelLine, tmp_path: Path) -> None:
    """Issue 46 row 6: `L/current.tmp-*` of a night killed before the pointer's rename stayed."""
    from flows.line.flow import main

    root = Path(line.url)
    left = [
        root / "current.tmp-0123abcd",
        root / "v0004.tmp-89abcdef" / "export" / "model.keras",
        root / "v0004" / "export" / "model.keras",  # committed, killed before its version.json
        root / "v0002" / "version.json.tmp-00ff00ff",
    ]
    kept = [root / "current.tmp-notours", root / "notes.tmp-01234567", root / "v0002" / "x.tmp"]
    for path in left + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("v0003\n")
    code, out, err = albert("line", "check", line.url)
    assert code == 2 and "4 faults" in err[0] and all("left by a killed commit" in o for o in out)
    night_one = [str(p) for p in files_of(tmp_path, 1)]  # taken by v0002: nothing new
    assert main(["--line", line.url, *(f"--input={p}" for p in night_one)]) == 0
    assert not any(p.exists() for p in left) and all(p.exists() for p in kept)
    assert not (root / "v0004").exists() and not (root / "v0004.tmp-89abcdef").exists()
    assert sorted(line.records()) == ["v0001", "v0002", "v0003"] and line.current() == "v0002"


def _list(line: ModelLine, name: str, path: str, data: bytes = b"") -> None:
    """Add `path` to version `name`'s listing, recorded as holding `data`."""
    record = json.loads(Path(line.path(name, "version.json")).read_text())
    entry = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    _edit(line, name, files={**record["files"], path: entry})


def within(seconds: float, call, *args):
    """`call(*args)`, failing the test (not hanging it) when it has not returned in `seconds`."""
    done: list = []
    worker = threading.Thread(target=lambda: done.append(call(*args)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert done, f"still reading after {seconds} s: {args}"
    return done[0]


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_listed_file_that_is_not_a_regular_file_is_one_line_never_read(line, kind) -> None:
    """Issue 67 row 3: a FIFO, or a symlink to /dev/zero recorded as 0 bytes, hung the check."""
    path = Path(line.path("v0002", "data", "odd"))
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    _list(line, "v0002", "data/odd")
    for command in ("check", "show"):
        code, _, err = within(20, albert, "line", command, line.url)
        assert code == 2 and len(err) == 1 and f"{path}: not a regular file" in err[0], err
    Path(line.path("current")).unlink()
    os.mkfifo(line.path("current"))  # the pointer, and version.json, are never opened either
    path.unlink()
    os.mkfifo(line.path("v0003", "version.json.x"))
    Path(line.path("v0003", "version.json")).unlink()
    Path(line.path("v0003", "version.json.x")).rename(line.path("v0003", "version.json"))
    code, out, err = within(20, albert, "line", "check", line.url)
    assert code == 2 and f"{line.path('current')}: not a regular file" in "\n".join(out + err)
    assert f"{line.path('v0003', 'version.json')}: not a regular file" in "\n".join(out + err)


@pytest.mark.parametrize("what", ["current", "listed", "version", "night"])
def test_a_symlink_that_leaves_the_line_is_a_fault(line, tmp_path, what) -> None:
    """Issue 67 row 5: `current`, a listed file, a version or a night directory linked to a copy
    outside the line checked sound."""
    root, outside = Path(line.url), tmp_path / "outside"
    target = {
        "current": root / "current",
        "listed": root / "v0002" / "data" / "d-0.tfrecord",
        "version": root / "v0003",
        "night": root / "nights" / "v0001-1",
    }[what]
    shutil.move(target, outside)
    target.symlink_to(outside, target_is_directory=outside.is_dir())
    code, _, err = albert("line", "check", line.url)
    assert code == 2 and len(err) == 1, err
    assert err[0].endswith(f"{target}: a symlink to {outside}, outside the line"), err
    target.unlink()
    shutil.move(outside, target)
    (root / "nights" / "alias").symlink_to(root / "nights" / "v0001-1")  # a link inside: sound
    assert albert("line", "check", line.url)[0] == 0


def test_a_copied_version_is_a_fault_and_prune_keeps_the_nights_kept_versions_name(
    line: ModelLine,
) -> None:
    """Issue 67 row 5: `cp -a L/v0002 L/v0004` checked sound. A night re-run with --retry-refused
    shares the refused night's directory: pruning the refused version removed it, without
    --nights, while the kept re-run names it."""
    root = Path(line.url)
    shutil.copytree(root / "v0002", root / "v0004", symlinks=True)
    code, out, err = albert("line", "check", line.url)
    said = "\n".join(out + err)
    assert code == 2 and f"{root / 'v0004' / 'version.json'}: version 'v0002' is not its " in said
    assert f"{root / 'nights' / 'v0001-1'}: the night of v0002 and v0004, which are" in said
    before = tree(root)
    assert albert("line", "prune", line.url, "v0004", "--yes")[0] == 2 and tree(root) == before
    shutil.rmtree(root / "v0004")
    shutil.copytree(root / "v0003", root / "v0004")  # v0003's night again, promoted this time
    _edit(line, "v0004", version="v0004", status="promoted")
    Path(line.path("current")).write_text("v0004\n")
    assert albert("line", "check", line.url)[0] == 0
    code, out, _ = albert("line", "prune", line.url, "--yes")
    assert code == 0 and not Path(line.path("v0003")).exists(), out
    assert (root / "nights" / "v0002-2").is_dir(), out  # v0004's night
    assert albert("line", "check", line.url)[0] == 0


def _edit(line: ModelLine, name: str, **fields: Any) -> None:
    path = Path(line.path(name, "version.json"))
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


# --------------------------------------------------------------------------------------------
# Fuzzing line.json, version.json and `current`

NAMES = ["", "v0001", "v0002", "../x", "/etc", "data/d-0.tfrecord", "a" * 64]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(NAMES),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
"""JSON values, with names a line uses among them."""


def _paths_in(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and list indices) to a value inside a JSON document, the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths_in(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths_in(inner, (*prefix, index))
    return found


def _mutate_json(document: Any, data) -> bytes:
    """The document with one value replaced or removed, or some bytes instead."""
    if data.draw(st.integers(0, 9)) == 0:
        return data.draw(st.binary(max_size=40))
    path = data.draw(st.sampled_from(_paths_in(document)))
    if not path:
        return json.dumps(data.draw(JSON)).encode()
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and data.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JSON)
    return json.dumps(document).encode()


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_mutation_is_refused_in_one_line_or_is_a_valid_line(template, tmp_path, data):
    root = tmp_path / uuid.uuid4().hex
    shutil.copytree(template, root)
    line = Path(root / "line")
    target = data.draw(
        st.sampled_from(["line.json", "current", *(f"v000{i}/version.json" for i in (1, 2, 3))])
    )
    path = line / target
    if target == "current":
        path.write_bytes(
            data.draw(st.sampled_from([b"v0001\n", b"v0003", b"v0009", b"", b"../v0001"]))
            if data.draw(st.booleans())
            else data.draw(st.binary(max_size=12))
        )
    else:
        path.write_bytes(_mutate_json(json.loads(path.read_text()), data))
    before = tree(line)
    codes = {}
    for command in ("show", "prune", "check"):
        code, out, err = albert("line", command, str(line))
        codes[command] = code
        assert code in (0, 2), (command, out, err)
        assert not any("Traceback" in s or "internal error" in s for s in out + err), err
        assert len(err) == (1 if code == 2 else 0), err
    assert codes["show"] == codes["prune"] and codes["show"] <= codes["check"], codes  # the
    # same checks; `check` also compares digests
    assert tree(line) == before  # nothing deleted, nothing written
