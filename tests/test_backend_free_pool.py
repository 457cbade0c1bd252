"""The backend-free modules `make test`'s two passes share (tests/backend_free_pool.py): each module
runs whole in the pass that claims it first, the pooled modules come after a pass's own tests, and
a pass run alone pools nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from backend_free_pool import POOL, claimed_here, pool_order, pooled

pytestmark = pytest.mark.backend_free


@dataclass
class Item:
    """What the pool reads of a pytest item: its module's path and its markers."""

    path: Path
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None


def test_each_module_runs_whole_in_the_pass_that_claims_it_first(tmp_path, monkeypatch):
    monkeypatch.setenv(POOL, str(tmp_path))
    first, second = Path("tests/test_a.py"), Path("tests/test_b.py")
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert claimed_here(first)
    monkeypatch.delenv("KERAS_BACKEND")  # the TensorFlow pass (the default backend)
    assert not claimed_here(first) and claimed_here(second) and claimed_here(second)
    monkeypatch.setenv("KERAS_BACKEND", "jax")  # its later tests, or a replaced worker's
    assert claimed_here(first) and not claimed_here(second)


def test_the_pooled_modules_follow_the_passes_own_tests_the_slow_ones_first(monkeypatch):
    items = [
        Item(Path("test_a.py"), {"backend_free"}),
        Item(Path("test_b.py"), {"keras"}),
        Item(Path("test_c.py"), {"backend_free"}),
        Item(Path("test_c.py"), {"backend_free", "slow"}),
        Item(Path("test_d.py")),
    ]
    alone = list(items)
    monkeypatch.delenv(POOL, raising=False)
    pool_order(alone)
    assert alone == items and not any(pooled(item) for item in items)

    monkeypatch.setenv(POOL, "/pool")
    pool_order(items)
    assert [(item.path.name, sorted(item.markers)) for item in items] == [
        ("test_b.py", ["keras"]),
        ("test_d.py", []),
        ("test_c.py", ["backend_free"]),
        ("test_c.py", ["backend_free", "slow"]),
        ("test_a.py", ["backend_free"]),
    ]
