"""Where the JAX training step's time goes, per XLA op: `jax.profiler` traces of the trainer's own
step (`train.py`'s, generated batches, bf16) at each row, read back into a table of the ops with
the most self time.

    python -m benchmarks.gpu.op_profile [--rows albert-base:128,albert-large:512]
        [--batch-tokens 32768] [--steps 5] [--top 25] [--trace-dir DIR]

Each row runs in a process of its own: the step is compiled and run twice, then `--steps` steps
run under `jax.profiler.trace`; the trace's `*.trace.json.gz` (Chrome trace format, which the
profiler writes beside its xplane.pb) is read by `op_table`: the events that carry an `hlo_op`
(XLA's ops, on the device's own timeline where the trace has one: its "XLA Ops" line on a GPU,
the kernels' stream lines counted apart otherwise), each op's self time (its duration less its
nested events') summed by op over the profiled steps. Prints one JSON line per row: its device,
step time and the top ops with their milliseconds a step, share and count a step.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path


def trace_file(trace_dir: Path) -> Path:
    """The newest trace the profiler wrote under `trace_dir`
    (plugins/profile/RUN/HOST.trace.json.gz)."""
    found = sorted(Path(trace_dir).glob("plugins/profile/*/*.trace.json.gz"), key=os.path.getmtime)
    if not found:
        raise FileNotFoundError(f"{trace_dir}: no plugins/profile/*/*.trace.json.gz")
    return found[-1]


def _timelines(events: list[dict], names: dict) -> list[tuple]:
    """The (pid, tid) timelines whose events are the XLA ops to count: on a device's process
    (named /device:...) its "XLA Ops" line where it has one, else every line holding `hlo_op`
    events."""
    with_ops = {(e["pid"], e.get("tid")) for e in events if "hlo_op" in e.get("args", {})}
    devices = {p for p, _ in with_ops if str(names.get((p, None), "")).startswith("/device:")}
    chosen = []
    for pid in {p for p, _ in with_ops}:
        if devices and pid not in devices:
            continue
        lines = [(p, t) for p, t in with_ops if p == pid]
        ops_line = [line for line in lines if names.get(line) == "XLA Ops"]
        chosen += ops_line or lines
    return chosen


_METADATA = re.compile(r"^\s*(?:ROOT )?%?([\w.-]+) = .*metadata=\{[^}]*op_name=\"([^\"]+)\"")


def op_origins(hlo: str) -> dict[str, str]:
    """Each instruction of a compiled module's text -> the JAX op it came from (its metadata's
    op_name, e.g. jit(step)/transpose(jvp(...))/dot_general)."""
    return {m.group(1): m.group(2) for m in map(_METADATA.match, hlo.splitlines()) if m}


def op_table(trace: dict, steps: int, top: int = 25, origins: dict | None = None) -> list[dict]:
    """The `top` XLA ops by self time in a Chrome-format `trace` of `steps` steps: name, self ms a
    step, share of the ops' total, count a step, and the JAX op it came from (`origins`, from
    `op_origins`, else what the trace says: `tf_op` / `long_name`)."""
    origins = origins or {}
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]
    names = {}
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name"):
            key = (e["pid"], None if e["name"] == "process_name" else e.get("tid"))
            names[key] = e.get("args", {}).get("name", "")
    lines = set(_timelines(events, names))
    self_us, count, origin = defaultdict(float), defaultdict(int), {}
    by_line = defaultdict(list)
    for e in events:
        if (e["pid"], e.get("tid")) in lines:
            by_line[(e["pid"], e.get("tid"))].append(e)
    for line_events in by_line.values():
        line_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ops: list[list] = []  # [end, op or None, children's time, duration]
        for e in line_events:
            while open_ops and open_ops[-1][0] <= e["ts"]:
                _close(open_ops.pop(), open_ops, self_us)
            op = e.get("args", {}).get("hlo_op")
            if op is not None:
                count[op] += 1
                args = e["args"]
                found = origins.get(op) or args.get("tf_op") or args.get("long_name", "")
                origin.setdefault(op, found[-100:])
            open_ops.append([e["ts"] + e["dur"], op, 0.0, e["dur"]])
        while open_ops:
            _close(open_ops.pop(), open_ops, self_us)
    total = sum(self_us.values()) or 1.0
    ranked = sorted(self_us.items(), key=lambda item: -item[1])[:top]
    return [
        {
            "op": op,
            "ms_per_step": round(us / 1000 / steps, 3),
            "share": round(us / total, 4),
            "per_step": round(count[op] / steps, 2),
            **({"from": origin[op]} if origin.get(op) else {}),
        }
        for op, us in ranked
    ]


def _close(event: list, open_ops: list, self_us: dict) -> None:
    """An event ends: its self time is its duration less its children's; its parent's children
    time grows by its duration."""
    _, op, children, duration = event
    if op is not None:
        self_us[op] += max(0.0, duration - children)
    if open_ops:
        open_ops[-1][2] += duration


def profile_row(preset: str, seq: int, batch: int, steps: int, trace_dir: Path, top: int) -> dict:
    """In this process: the step of one row compiled, run twice, then `steps` steps traced."""
    import jax  # heavy: JAX, only this path

    from benchmarks.gpu.train import built_step  # heavy: loads Keras and our model

    _, step, values, data = built_step(preset, seq, batch, "bfloat16", steps + 2)
    step = step.lower(values, data).compile()
    origins = op_origins(step.as_text())
    for _ in range(2):
        values, sums = step(values, data)
    jax.block_until_ready(sums)
    start = time.perf_counter()
    with jax.profiler.trace(str(trace_dir)):
        for _ in range(steps):
            values, sums = step(values, data)
        jax.block_until_ready((values, sums))
    seconds = time.perf_counter() - start
    with gzip.open(trace_file(trace_dir), "rt") as text:
        table = op_table(json.load(text), steps, top, origins)
    return {
        "profile": f"{preset} s{seq}",
        "batch": batch,
        "device": jax.devices()[0].device_kind,
        "steps": steps,
        "traced_step_ms": round(1000 * seconds / steps, 2),
        "ops": table,
    }


def print_table(row: dict) -> None:
    """One Markdown table of a row's ops."""
    print(f"{row['profile']}, batch {row['batch']}, {row['device']}: {row['traced_step_ms']} ms a "
          f"traced step")  # fmt: skip
    print("| op | ms a step | share | a step | from |\n|---|---|---|---|---|")
    for op in row["ops"]:
        print(f"| {op['op']} | {op['ms_per_step']} | {op['share']:.1%} | {op['per_step']} | "
              f"{op.get('from', '')} |")  # fmt: skip


def main() -> int:
    os.environ.setdefault("KERAS_BACKEND", "jax")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="albert-base:128,albert-large:512")
    parser.add_argument("--batch-tokens", type=int, default=32768)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--trace-dir", type=Path, default=Path("profile-traces"))
    parser.add_argument("--row", help=argparse.SUPPRESS)  # PRESET:SEQ, in a process of its own
    args = parser.parse_args()
    if args.row:
        preset, seq = args.row.split(":")
        batch = max(1, args.batch_tokens // int(seq))
        row = profile_row(preset, int(seq), batch, args.steps, args.trace_dir, args.top)
        print(json.dumps(row))
        return 0
    failed = 0
    for row in args.rows.split(","):
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.gpu.op_profile", "--row", row]
            + ["--batch-tokens", str(args.batch_tokens), "--steps", str(args.steps)]
            + ["--top", str(args.top), "--trace-dir", str(args.trace_dir / row.replace(":", "-s"))],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            failed += 1
            print(json.dumps({"profile": row, "error": done.stderr.strip()[-2000:]}))
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print_table(result)
        print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
