"""GPU pretraining throughput and MFU on the JAX backend, on generated data (no TensorFlow needed).

For each preset x sequence length, one subprocess builds our `AlbertPretrainingModel` in bf16
(Keras `mixed_bfloat16`), compiles the training step the trainer uses
(`model.pretrain.jax_train_step`: forward, masked-LM + SOP loss, backward, LAMB update) and times it
on a generated batch (random ids, 20 masked positions per sequence, as the reference's data). Prints
ONE JSON line with, per row: sequences/s, tokens/s, peak device memory, whether attention compiled
to cuDNN's fused (flash) kernel, model FLOPs per token and MFU against the device's dense bf16 peak.

    python -m benchmarks.gpu.train [--presets albert-base,albert-large] [--seqs 128,512]
                                   [--batch-tokens 65536] [--steps 20] [--peak-tflops 989]
                                   [--objectives mlm,rtd]

`--objectives mlm,rtd` measures each row with both objectives: `rtd` is ELECTRA's replaced-token
detection (`--objective rtd`: the generator at its default width, its FLOPs counted), and the
summary's `generator_cost` is each row's RTD step time over its masked-LM step time.
`--xla-variants default,no_command_buffers,latency_hiding` measures each masked-LM row under each
set of XLA flags (`XLA_VARIANTS`), a process each, and the summary's `xla_speedup` is each
variant's speed over the default flags'.

Model FLOPs per token = 6 x (parameters as applied per token: every layer's weights once per layer
they serve, the embedding projection, the masked-LM head at its share of positions) + 12 x layers x
hidden x sequence length (attention scores and context, forward and backward).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

from benchmarks.pretrain import PREDICTIONS, make_batch  # the CPU benchmark's generated batch

# Dense (no sparsity) bf16 peak of the device, TFLOP/s, by a substring of jax's `device_kind`.
DENSE_BF16_PEAK_TFLOPS = {
    "H200": 989.4,
    "H100 PCIe": 756.0,
    "H100": 989.4,
    "A100": 312.0,
    "L4": 121.0,
}


def flops_per_token(
    cfg, seq: int, predictions: int = PREDICTIONS, heads: tuple[str, ...] = ("mlm", "sop")
) -> dict:
    """Model FLOPs per token of one training step (forward + backward) and the applied
    parameters of an ALBERT encoder and its `heads`: `mlm` (dense, LayerNorm and tied output at
    `predictions` of `seq` positions), `sop` (pooler and classifier, once a sequence), `rtd`
    (ELECTRA's dense H->H and H->1 at every token)."""
    h, e, f, v, layers = (
        cfg.hidden_size,
        cfg.embedding_size,
        cfg.intermediate_size,
        cfg.vocab_size,
        cfg.num_hidden_layers,
    )
    attention = 4 * h * h + 4 * h + 2 * h  # Q, K, V, output dense + biases, LayerNorm
    ffn = 2 * h * f + f + h + 2 * h  # two dense layers + biases, LayerNorm
    projection = e * h + h if cfg.has_embedding_projection else 0  # embedding E -> hidden H
    head_parameters = {
        "mlm": (h * e + e + 2 * e + e * v + v) * predictions / seq,
        "sop": (h * h + h + 2 * h + 2) / seq,
        "rtd": h * h + h + h + 1,
    }
    applied = layers * (attention + ffn) + projection
    applied += sum(head_parameters[head] for head in heads)
    return {"applied_parameters": applied, "flops_per_token": 6 * applied + 12 * layers * h * seq}


def peak_tflops(device_kind: str) -> float | None:
    for name, tflops in DENSE_BF16_PEAK_TFLOPS.items():
        if name.lower() in device_kind.lower():
            return tflops
    return None


def built_step(
    preset: str, seq: int, batch: int, precision: str, steps: int = 1, objective: str = "mlm"
):
    """(model, the trainer's jitted step, its state values, a generated batch on the device) of
    one row, built in this process."""
    import jax  # heavy: JAX, only this path
    import keras  # heavy: Keras loads its backend (chosen per process/run first)

    from model.pretrain import (  # heavy: loads Keras (the backend is chosen first)
        JaxState,
        PretrainConfig,
        build_model,
        build_training_optimizer,
        jax_train_step,
    )

    policy = {"bfloat16": "mixed_bfloat16", "float32": "float32"}[precision]
    keras.config.set_dtype_policy(policy)
    config = PretrainConfig(
        data="generated",
        output="unused",
        preset=preset,
        steps=steps,
        batch_size=batch,
        warmup_steps=1,
        precision=precision,
        learning_rate=1e-4,
        objective=objective,
    )
    model = build_model(config, vocab_size=30000)
    optimizer, _ = build_training_optimizer(config)
    optimizer.build(model.trainable_variables)
    state = JaxState(model, optimizer)
    step, _ = jax_train_step(model, optimizer, accumulation=1)
    data = jax.device_put(make_batch(batch, seq, model.config.vocab_size))
    return model, step, state.values, data


def step_flops(model, seq: int, objective: str) -> dict:
    """`flops_per_token` of the row's model; for `rtd`, the generator's (with its masked-LM head)
    plus the discriminator's (with its RTD and SOP heads), and `flops_over_mlm`: that count over
    the masked-LM step's."""
    flops = flops_per_token(model.config, seq)
    if objective == "rtd":
        from model.network.electra import generator_config

        generator = generator_config(model.config, model.generator_hidden_fraction)
        counted = (
            flops_per_token(generator, seq, heads=("mlm",))["flops_per_token"]
            + flops_per_token(model.config, seq, heads=("rtd", "sop"))["flops_per_token"]
        )
        ratio = round(counted / flops["flops_per_token"], 3)
        flops = {**flops, "flops_per_token": counted, "flops_over_mlm": ratio}
    return flops


def measure(
    preset: str, seq: int, batch: int, steps: int, warmup: int, precision: str, objective: str
) -> dict:
    """One row: build, compile and time the training step in this process."""
    import jax  # heavy: JAX, only this path

    model, step, values, data = built_step(preset, seq, batch, precision, steps + warmup, objective)
    device = jax.devices()[0]
    start = time.perf_counter()
    compiled = step.lower(values, data).compile()
    compile_seconds = time.perf_counter() - start
    hlo = compiled.as_text()
    flash = "__cudnn$fmha" in hlo or "cudnn" in hlo.lower() and "fmha" in hlo.lower()

    for _ in range(warmup):
        values, sums = compiled(values, data)
    jax.block_until_ready(sums)
    start = time.perf_counter()
    for _ in range(steps):
        values, sums = compiled(values, data)
    jax.block_until_ready((values, sums))
    seconds = time.perf_counter() - start

    loss = float(sums[0] / sums[2])
    sequences_per_second = batch * steps / seconds
    tokens_per_second = sequences_per_second * seq
    flops = step_flops(model, seq, objective)
    peak = peak_tflops(device.device_kind) if device.platform == "gpu" else None
    stats = device.memory_stats() or {}
    achieved = tokens_per_second * flops["flops_per_token"]
    return {
        "preset": preset,
        "seq": seq,
        "objective": objective,
        "batch": batch,
        "precision": precision,
        "steps": steps,
        "device": device.device_kind,
        "platform": device.platform,
        "parameters": int(model.count_params()),
        "applied_parameters": int(flops["applied_parameters"]),
        "flops_per_token": int(flops["flops_per_token"]),
        "compile_s": round(compile_seconds, 1),
        "step_ms": round(1000 * seconds / steps, 2),
        "sequences_per_s": round(sequences_per_second, 1),
        "tokens_per_s": round(tokens_per_second),
        "model_tflops_per_s": round(achieved / 1e12, 1),
        "peak_bf16_tflops": peak,
        "mfu": round(achieved / (peak * 1e12), 4) if peak else None,
        "peak_memory_gib": round(stats["peak_bytes_in_use"] / 2**30, 2)
        if "peak_bytes_in_use" in stats
        else None,
        "flash_attention": flash,
        **({"flops_over_mlm": flops["flops_over_mlm"]} if "flops_over_mlm" in flops else {}),
        "mlm_loss": round(loss, 3),
    }


XLA_VARIANTS = {
    "default": "",
    "no_command_buffers": "--xla_gpu_enable_command_buffer=",
    "latency_hiding": "--xla_gpu_enable_latency_hiding_scheduler=true",
}
"""`--xla-variants`: XLA_FLAGS added to the environment's for a row's process. `default` adds
none; `no_command_buffers` turns off XLA's CUDA-graph command buffers (on by default for fusions
and library calls in jax 0.10's XLA); `latency_hiding` turns on the latency-hiding scheduler."""


def ratios(rows: list[dict]) -> dict:
    """The summary's ratios of step times between rows of one shape: `generator_cost` (RTD over
    masked-LM, both at the `default` XLA flags) and `xla_speedup` (a variant's masked-LM step over
    the `default` one's, inverted: above 1 is faster); each only where both were measured."""
    steps = {
        (r["preset"], r["seq"], r["objective"], r["xla_variant"]): r.get("step_ms") for r in rows
    }
    cost, speedup = {}, {}
    for (preset, seq, objective, variant), ms in steps.items():
        base = steps.get((preset, seq, "mlm", "default"))
        if not (ms and base):
            continue
        if objective == "rtd" and variant == "default":
            cost[f"{preset} s{seq}"] = round(ms / base, 3)
        if objective == "mlm" and variant != "default":
            speedup.setdefault(f"{preset} s{seq}", {})[variant] = round(base / ms, 3)
    return {
        **({"generator_cost": cost} if cost else {}),
        **({"xla_speedup": speedup} if speedup else {}),
    }


def main() -> int:
    os.environ.setdefault("KERAS_BACKEND", "jax")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="albert-base,albert-large")
    parser.add_argument("--seqs", default="128,512")
    parser.add_argument(
        "--batch-tokens", type=int, default=32768, help="sequences per step = this / seq"
    )
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--precision", choices=["bfloat16", "float32"], default="bfloat16")
    parser.add_argument(
        "--peak-tflops", type=float, default=None, help="override the device's dense bf16 peak"
    )
    parser.add_argument(
        "--objectives", default="mlm", help="mlm, rtd or mlm,rtd: each row with each objective"
    )
    parser.add_argument(
        "--xla-variants",
        default="default",
        help=f"comma-separated, of {', '.join(XLA_VARIANTS)}: each masked-LM row under each",
    )
    parser.add_argument("--row", help=argparse.SUPPRESS)  # PRESET:SEQ[:OBJECTIVE], in a child
    args = parser.parse_args()

    if args.row:
        preset, seq, *objective = args.row.split(":")
        seq, objective = int(seq), (objective or ["mlm"])[0]
        batch = max(1, args.batch_tokens // seq)
        row = measure(preset, seq, batch, args.steps, args.warmup, args.precision, objective)
        if args.peak_tflops:
            row["peak_bf16_tflops"] = args.peak_tflops
            row["mfu"] = round(row["model_tflops_per_s"] / args.peak_tflops, 4)
        print(json.dumps(row))
        return 0

    rows = []
    shapes = [(p, int(s)) for p in args.presets.split(",") for s in args.seqs.split(",")]
    arms = [
        (preset, seq, objective, variant)
        for preset, seq in shapes
        for objective in args.objectives.split(",")
        for variant in args.xla_variants.split(",")
        if objective == "mlm" or variant == "default"
    ]
    for preset, seq, objective, variant in arms:
        child = [
            sys.executable,
            "-m",
            "benchmarks.gpu.train",
            "--row",
            f"{preset}:{seq}:{objective}",
        ]
        child += ["--batch-tokens", str(args.batch_tokens), "--steps", str(args.steps)]
        child += ["--warmup", str(args.warmup), "--precision", args.precision]
        if args.peak_tflops:
            child += ["--peak-tflops", str(args.peak_tflops)]
        flags = f"{os.environ.get('XLA_FLAGS', '')} {XLA_VARIANTS[variant]}".strip()
        env = {**os.environ, "XLA_FLAGS": flags}
        done = subprocess.run(child, check=False, capture_output=True, text=True, env=env)
        arm = {"preset": preset, "seq": seq, "objective": objective, "xla_variant": variant}
        if done.returncode:
            rows.append({**arm, "error": done.stderr.strip().splitlines()[-1:]})
            print(done.stderr[-3000:], file=sys.stderr)
        else:
            rows.append({**json.loads(done.stdout.strip().splitlines()[-1]), **arm})
    import jax  # heavy: JAX, only this path
    import keras  # heavy: Keras loads its backend (chosen per process/run first)

    print(
        json.dumps(
            {
                "benchmark": "gpu_pretrain",
                "backend": "jax",
                "jax": jax.__version__,
                "keras": keras.__version__,
                "host_cpu": platform.processor() or platform.machine(),
                "rows": rows,
                **ratios(rows),
            }
        )
    )
    return 0 if all("error" not in row for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
