"""What `benchmarks/gpu/check.py` reports beside its table (issue 65, items 3 and 4): the packed
runs beside the plain and bucketed ones where the trainer takes --packing, the goal ratios at the
end (real tokens a second over Hugging Face compiled's on the same shards; real-token MFU at
albert-large s512), `op_profile.py`'s per-op table read from the trace JAX's profiler writes,
and the synthetic step's ratios (`train.py`: RTD over masked-LM, XLA flag variants over the
default)."""

from __future__ import annotations

import gzip
import json
from types import SimpleNamespace

import pytest

from benchmarks.gpu.check_runs import layouts
from benchmarks.gpu.op_profile import op_origins, op_table, trace_file
from benchmarks.gpu.report import goals

pytestmark = pytest.mark.backend_free


def test_each_row_runs_plain_bucketed_and_packed_where_the_trainer_packs():
    args = SimpleNamespace(buckets=4, packing_instances=None)
    assert layouts(args, False) == [("plain", 0, []), ("buckets", 4, [])]
    off = ["--packing", "off"]
    assert layouts(args, True) == [
        ("plain", 0, off), ("buckets", 4, off), ("packed", 0, ["--packing", "on"])
    ]  # fmt: skip
    args.packing_instances = 3
    assert layouts(args, True)[2][2] == ["--packing", "on", "--packing-instances", "3"]


def _run(layout, shape, real_tokens, share, mfu=None):
    return {"run": f"{shape} {layout}", "shape": shape, "layout": layout,
            "steady_real_tok_per_s": real_tokens, "real_token_share": share,
            "real_token_mfu": mfu}  # fmt: skip


def test_the_goal_ratios_count_real_tokens_against_hugging_face_padding_every_instance():
    base, large = ("albert-base", 128), ("albert-large", 512)
    rows = [
        _run("plain", base, 0.75 * 128 * 4000, 0.75),  # 4,000 sequences/s, 25% padding
        _run("packed", base, 0.99 * 128 * 5000, 0.99),  # 5,000 rows/s of packed instances
        _run("plain", large, 0.5 * 512 * 400, 0.5, 0.33),
        _run("buckets", large, 0.9 * 512 * 500, 0.9, 0.52),
    ]
    shapes = [(*base, 256), (*large, 64)]
    hf = [{"compile": 5000.0}, {"compile": 400.0}]
    reached = goals(rows, shapes, hf)
    assert rows[0]["over_hf_compiled"] == 0.8  # plain: our sequences/s over theirs
    assert reached["albert-base s128 over Hugging Face compiled"] == {
        "best": 1.32, "run": "('albert-base', 128) packed", "goal": 1.5, "met": False,
    }  # fmt: skip
    assert reached["albert-large s512 over Hugging Face compiled"]["best"] == 2.25
    assert reached["albert-large s512 over Hugging Face compiled"]["met"]
    assert reached["albert-large s512 real-token MFU"]["best"] == 0.52
    skipped = goals(rows, shapes, [{"skipped": "no torch"}, {"compile": 1}])
    assert skipped["albert-base s128 over Hugging Face compiled"]["why_none"] == "no torch"
    assert skipped["albert-large s512 over Hugging Face compiled"]["why_none"] == "Hugging Face: 1"


def _event(tid, ts, dur, name, op=None):
    args = {"hlo_op": op or name} if op or name.startswith("fusion") else {}
    return {"ph": "X", "pid": 2, "tid": tid, "ts": ts, "dur": dur, "name": name, "args": args}


def test_the_per_op_table_is_self_time_on_the_devices_ops_line():
    names = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 2, "tid": 7, "name": "thread_name", "args": {"name": "XLA Ops"}},
        {"ph": "M", "pid": 2, "tid": 8, "name": "thread_name", "args": {"name": "Stream #1"}},
    ]
    events = [
        _event(7, 0, 10_000, "while", op="while.1"),  # holds two steps' fusions (microseconds)
        _event(7, 1000, 3000, "fusion.1"),
        _event(7, 5000, 4000, "fusion.2"),
        _event(7, 20_000, 3000, "fusion.1"),
        _event(8, 1000, 3000, "fusion.1"),  # the kernel again, on its stream: not counted twice
        {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 9e4, "name": "h", "args": {"hlo_op": "x"}},
    ]
    table = op_table({"traceEvents": names + events}, 2, origins={"fusion.2": "jit(step)/dot"})
    assert [(row["op"], row["ms_per_step"], row["per_step"]) for row in table] == [
        ("fusion.1", 3.0, 1.0), ("fusion.2", 2.0, 0.5), ("while.1", 1.5, 0.5),
    ]  # fmt: skip
    assert table[1]["from"] == "jit(step)/dot" and table[0]["share"] == pytest.approx(6 / 13, 1e-3)
    hlo = '  %fusion.2 = f32[4]{0} fusion(%p), kind=kLoop, metadata={op_name="jit(step)/dot"}'
    assert op_origins(hlo + "\n  ROOT tuple.3 = (f32[4]) tuple(%fusion.2)") == {
        "fusion.2": "jit(step)/dot"
    }


def test_a_real_cpu_trace_is_read_into_ops(tmp_path):
    jax = pytest.importorskip("jax")
    step = jax.jit(lambda x: (jax.numpy.tanh(x @ x) * 2).sum()).lower(jax.numpy.ones((64, 64)))
    compiled = step.compile()
    compiled(jax.numpy.ones((64, 64))).block_until_ready()
    with jax.profiler.trace(str(tmp_path)):
        for _ in range(2):
            compiled(jax.numpy.ones((64, 64))).block_until_ready()
    with gzip.open(trace_file(tmp_path), "rt") as text:
        table = op_table(json.load(text), 2, origins=op_origins(compiled.as_text()))
    assert table and all(row["ms_per_step"] >= 0 for row in table)
    assert sum(row["share"] for row in table) == pytest.approx(1.0, abs=0.01)
    assert any("jit(<lambda>)" in row.get("from", "") for row in table)


def test_the_synthetic_steps_ratios_pair_rows_of_one_shape():
    from benchmarks.gpu.train import ratios

    def row(objective, variant, ms):
        return {"preset": "p", "seq": 8, "objective": objective, "xla_variant": variant} | {
            "step_ms": ms
        }

    rows = [row("mlm", "default", 10.0), row("mlm", "latency_hiding", 8.0)]
    rows += [row("rtd", "default", 13.0), {**row("mlm", "no_command_buffers", None), "error": "x"}]
    assert ratios(rows) == {
        "generator_cost": {"p s8": 1.3},
        "xla_speedup": {"p s8": {"latency_hiding": 1.25}},
    }
    assert ratios(rows[1:]) == {}
