"""benchmarks/near_dedup without its peer: datatrove is only in the `bench` extra (`make bench`), so
where it is missing the side-by-side says so in one line, exit 2, before any work."""

import sys

import pytest

from benchmarks import near_dedup

pytestmark = pytest.mark.backend_free


@pytest.mark.parametrize("part", ["all", "quality"])
def test_without_datatrove_the_side_by_side_is_one_line_and_exit_2(part, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "datatrove", None)  # find_spec then says: not installed
    monkeypatch.setattr(sys, "argv", ["near_dedup", "--part", part])
    with pytest.raises(SystemExit) as exited:
        near_dedup.main()
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and not out
    assert err.splitlines() == [
        "benchmarks.near_dedup: datatrove is missing: `make bench` installs it"
    ]
