"""A bad environment is one line, found before the work starts (issue 46, rows 1 and 3; row 2, the
GPU kit, is in test_gpu_kit.py; row 4, a signal while the command still imports, is
test_environment_sweep's signal case of `python -m model.pretrain`): a PREFECT_HOME that cannot be
made (the commands themselves: test_environment_sweep's PREFECT_HOME cases), a write the disk
refuses without naming a file (a flush, a background thread). Real files; /dev/full is a real full
disk."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from albert.errors import describe_error
from albert.outputs import atomic_output_dir

pytestmark = pytest.mark.backend_free


def test_a_prefect_home_whose_parent_can_be_made_is_made(tmp_path):
    from prefect.settings import PREFECT_HOME, PREFECT_LOCAL_STORAGE_PATH, temporary_settings

    from flows.engine.prefect_settings import check_environment

    home = tmp_path / "new" / "deeper" / "prefect"
    with temporary_settings({PREFECT_HOME: home, PREFECT_LOCAL_STORAGE_PATH: home / "storage"}):
        check_environment()
    assert (home / "storage").is_dir()


def test_the_temporary_servers_failure_to_start_is_one_line_naming_the_setting():
    from flows.engine.prefect_settings import server_failure

    failure = server_failure(
        RuntimeError("Timed out while attempting to connect to ephemeral Prefect API server.")
    )
    assert "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" in str(failure)
    assert "PREFECT_API_URL" in str(failure) and "\n" not in str(failure)
    assert server_failure(RuntimeError("something else")) is None


def test_a_directory_that_cannot_be_written_says_why(tmp_path):
    from albert.outputs import unwritable

    (tmp_path / "a-file").write_text("")
    assert unwritable(str(tmp_path / "a-file")) == "a file is in the way, not a directory"
    assert unwritable(str(tmp_path / "a-file" / "out")) == "cannot be made: not a directory"
    assert unwritable(str(tmp_path / "new" / "out")) is None
    assert (tmp_path / "new" / "out").is_dir()


def test_the_writability_check_leaves_no_directory_it_made(tmp_path):
    """A run refused after the check (a bad teacher, a bad setting) leaves no empty output."""
    from albert.outputs import check_writable

    check_writable(str(tmp_path / "new" / "out"))
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    check_writable(str(tmp_path / "kept"))
    assert (tmp_path / "kept").is_dir()


def _fill_a_full_disk(temp: str) -> None:
    """Write what the output holds to a full disk: the refusal comes from a write or its flush,
    without a file name."""
    with open(os.path.join(temp, "weights.npz"), "wb") as handle, open("/dev/full", "wb") as full:
        handle.write(b"0" * 16)
        full.write(b"0" * 2**20)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_disk_full_in_a_background_write_names_the_output_and_exits_2(tmp_path):
    """Row 3: as the checkpoint writer's thread commits an output: the error raised in the caller
    names the output and 'no space left on device', exit 2 (before: `internal error: OSError:
    [Errno 28] No space left on device`, exit 1); the previous output stays whole."""
    target = tmp_path / "checkpoints" / "ckpt-000000004"
    target.mkdir(parents=True)
    (target / "weights.npz").write_bytes(b"previous")

    def write() -> None:
        with atomic_output_dir(str(target), lock=False, keep_previous=False) as temp:
            _fill_a_full_disk(temp)

    with ThreadPoolExecutor(1) as thread:
        failed = thread.submit(write)
        with pytest.raises(OSError) as raised:
            failed.result()
    assert describe_error(raised.value) == (f"{target}: No space left on device", 2)
    assert (target / "weights.npz").read_bytes() == b"previous"
    assert [p.name for p in target.parent.iterdir()] == [target.name]
