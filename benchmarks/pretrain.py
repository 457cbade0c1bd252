"""Pretraining throughput on CPU, side by side in one run: our Keras training step on the TensorFlow
backend (XLA off, the CPU default, and on), on the JAX backend (always jit-compiled), and Hugging
Face `AlbertForPreTraining` (torch).

For each (preset, sequence length) every implementation runs the same architecture on the same batch
(random ids, 20 masked positions per sequence as the reference's data) for full training steps:
forward, masked-LM + SOP loss, backward, optimizer update (ours: the paper's LAMB, the trainer's own
step functions; Hugging Face: torch AdamW, it ships no LAMB). Hugging Face's head scores every
position (its API), ours only the masked positions (as google-research/albert). Each measurement
runs in its own process (a Keras backend is chosen per process), one after another. Prints ONE JSON
line: the CPU model and vector extensions, sequences/s and tokens/s per implementation, JAX against
TensorFlow and ours against Hugging Face as ratios.

    python -m benchmarks.pretrain [--presets albert-tiny,albert-base] [--seqs 128,512] [--batch 8]
                                  [--implementations tf,tf-xla,jax,hf]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.helpers.machine import cpu_model, vector_extensions

ROOT = Path(__file__).resolve().parents[1]
PREDICTIONS = 20
# implementation -> the Keras backend its process runs (None: Hugging Face on torch)
IMPLEMENTATIONS = {"tf": "tensorflow", "tf-xla": "tensorflow", "jax": "jax", "hf": None}


def make_batch(batch: int, seq: int, vocab: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    positions = np.sort(
        np.stack(
            [rng.choice(np.arange(1, seq - 1), PREDICTIONS, replace=False) for _ in range(batch)]
        )
    )
    return {
        "input_ids": rng.integers(5, vocab, (batch, seq)).astype(np.int32),
        "input_mask": np.ones((batch, seq), np.int32),
        "segment_ids": (np.arange(seq)[None, :] >= seq // 2).astype(np.int32).repeat(batch, 0),
        "masked_lm_positions": positions.astype(np.int32),
        "masked_lm_ids": rng.integers(5, vocab, (batch, PREDICTIONS)).astype(np.int32),
        "masked_lm_weights": np.ones((batch, PREDICTIONS), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype(np.int32),
        "mlm_denominator": np.full((batch,), batch * PREDICTIONS, np.float32),
        "sop_denominator": np.full((batch,), batch, np.float32),
    }


def timed(step, warmup: int, seconds: float, min_steps: int) -> float:
    """Steps per second after `warmup` steps, measured over at least `min_steps` and `seconds`."""
    for _ in range(warmup):
        step()
    count, start = 0, time.perf_counter()
    while count < min_steps or time.perf_counter() - start < seconds:
        step()
        count += 1
    return count / (time.perf_counter() - start)


def ours(
    implementation: str, preset: str, batch: dict, warmup: int, seconds: float, min_steps: int
) -> float:
    """Steps/s of the trainer's step on this process's Keras backend (tf_train_step or
    jax_train_step)."""
    import keras  # heavy: Keras loads its backend (chosen per process/run first)

    from model.network.config import get_preset  # heavy: loads Keras (the backend is chosen first)

    # heavy: loads Keras (the backend is chosen first)
    from model.network.pretraining_model import AlbertPretrainingModel

    # heavy: loads Keras (the backend is chosen first)
    from model.optimization.optimizers import WarmupPolynomialDecay, build_optimizer

    keras.utils.set_random_seed(0)
    model = AlbertPretrainingModel(get_preset(preset, vocab_size=30000))
    optimizer = build_optimizer("lamb", WarmupPolynomialDecay(1e-4, 10, 10_000))
    optimizer.build(model.trainable_variables)
    if implementation == "jax":
        # heavy: loads Keras (the backend is chosen first)
        from model.pretrain.jax_step import JaxState, jax_train_step

        step_fn, _ = jax_train_step(model, optimizer, 1)
        state = [JaxState(model, optimizer).values]

        def step():
            state[0], sums = step_fn(state[0], batch)
            np.asarray(sums)

        return timed(step, warmup, seconds, min_steps)
    import tensorflow as tf  # heavy: TensorFlow, only this path

    from model.pretrain import tf_train_step  # heavy: loads Keras (the backend is chosen first)

    step_fn = tf_train_step(
        model, optimizer, tf.distribute.get_strategy(), 1, implementation == "tf-xla"
    )
    tensors = {k: tf.constant(v) for k, v in batch.items()}
    return timed(lambda: step_fn(tensors).numpy(), warmup, seconds, min_steps)


def huggingface_step(preset: str, batch: dict, device: str = "cpu", compiled: bool = False):
    """One training step of Hugging Face's `AlbertForPreTraining` of `preset` on `batch` (torch
    AdamW); on a GPU in bf16 autocast with SDPA attention, waiting for the device, optionally
    `torch.compile`d."""
    import torch  # optional: the test extra, only the Hugging Face side
    import transformers  # optional: the test extra, only the Hugging Face side

    # heavy: loads Keras (the backend is chosen first)
    from model.conversion.hf import config_to_huggingface
    from model.network.config import get_preset  # heavy: loads Keras (the backend is chosen first)

    torch.manual_seed(0)
    config = transformers.AlbertConfig(
        **config_to_huggingface(get_preset(preset, vocab_size=30000)), attn_implementation="sdpa"
    )
    model = transformers.AlbertForPreTraining(config).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
    forward = torch.compile(model) if compiled else model
    labels = np.full(batch["input_ids"].shape, -100, np.int64)
    np.put_along_axis(
        labels,
        batch["masked_lm_positions"].astype(np.int64),
        batch["masked_lm_ids"].astype(np.int64),
        1,
    )
    inputs = {
        "input_ids": torch.tensor(batch["input_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(batch["input_mask"], dtype=torch.long),
        "token_type_ids": torch.tensor(batch["segment_ids"], dtype=torch.long),
        "labels": torch.tensor(labels),
        "sentence_order_label": torch.tensor(batch["next_sentence_labels"][:, 0], dtype=torch.long),
    }
    inputs = {name: value.to(device) for name, value in inputs.items()}
    gpu = device != "cpu"

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=gpu):
            loss = forward(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if gpu:
            torch.cuda.synchronize()

    return step


def huggingface(preset: str, batch: dict, warmup: int, seconds: float, min_steps: int) -> float:
    return timed(huggingface_step(preset, batch), warmup, seconds, min_steps)


def measure(
    implementation: str, preset: str, seq: int, batch_size: int, seconds: float, min_steps: int
) -> float:
    """Sequences/s of one implementation, measured in this process."""
    batch = make_batch(batch_size, seq, 30000)
    if implementation == "hf":
        import torch  # optional: the test extra, only the Hugging Face side

        torch.set_num_threads(os.cpu_count() or 1)
        return huggingface(preset, batch, 2, seconds, min_steps) * batch_size
    return ours(implementation, preset, batch, 2, seconds, min_steps) * batch_size


def measure_in_subprocess(implementation: str, preset: str, seq: int, args) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    if IMPLEMENTATIONS[implementation]:
        env["KERAS_BACKEND"] = IMPLEMENTATIONS[implementation]
    command = [
        sys.executable,
        "-m",
        "benchmarks.pretrain",
        "--measure",
        implementation,
        "--presets",
        preset,
        "--seqs",
        str(seq),
        "--batch",
        str(args.batch),
        "--seconds",
        str(args.seconds),
        "--min-steps",
        str(args.min_steps),
    ]
    done = subprocess.run(command, check=False, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{implementation} {preset} seq {seq} failed:\n{done.stderr[-3000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def row_ratios(rates: dict) -> dict:
    """JAX against each TensorFlow mode and against the faster one; each of ours against Hugging
    Face."""
    ratios = {}
    tf_modes = [rates[k] for k in ("tf", "tf-xla") if k in rates]
    if "jax" in rates:
        for mode in ("tf", "tf-xla"):
            if mode in rates:
                ratios[f"jax_vs_{mode}"] = round(rates["jax"] / rates[mode], 3)
        if tf_modes:
            ratios["jax_vs_best_tf"] = round(rates["jax"] / max(tf_modes), 3)
    if "hf" in rates:
        for mode in ("tf", "tf-xla", "jax"):
            if mode in rates:
                ratios[f"{mode}_vs_hf"] = round(rates[mode] / rates["hf"], 3)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="albert-tiny,albert-base")
    parser.add_argument("--seqs", default="128,512")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="minimum measuring time per case"
    )
    parser.add_argument("--min-steps", type=int, default=3)
    parser.add_argument(
        "--implementations", default="tf,tf-xla,jax,hf", help=f"any of {','.join(IMPLEMENTATIONS)}"
    )
    parser.add_argument(
        "--measure", choices=list(IMPLEMENTATIONS), help=argparse.SUPPRESS
    )  # one case, in-process
    args = parser.parse_args()
    if args.measure:
        print(
            measure(
                args.measure, args.presets, int(args.seqs), args.batch, args.seconds, args.min_steps
            )
        )
        return
    implementations = args.implementations.split(",")
    unknown = sorted(set(implementations) - set(IMPLEMENTATIONS))
    if unknown:
        parser.error(
            f"unknown implementation(s) {', '.join(unknown)}; known: {', '.join(IMPLEMENTATIONS)}"
        )
    rows, started = [], time.time()
    for preset in args.presets.split(","):
        for seq in (int(s) for s in args.seqs.split(",")):
            rates = {
                name: measure_in_subprocess(name, preset, seq, args) for name in implementations
            }
            rows.append(
                {
                    "preset": preset,
                    "seq": seq,
                    "batch": args.batch,
                    "sequences_per_s": {k: round(v, 2) for k, v in rates.items()},
                    "tokens_per_s": {k: round(v * seq, 1) for k, v in rates.items()},
                    **row_ratios(rates),
                }
            )
    print(
        json.dumps(
            {
                "benchmark": "pretrain_throughput_cpu",
                "cpu": cpu_model(),
                "vector_extensions": vector_extensions(),
                "cpu_count": os.cpu_count(),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "wall_s": round(time.time() - started),
                "implementations": {
                    "tf": "TensorFlow backend, XLA off (the CPU default)",
                    "tf-xla": "TensorFlow backend, XLA on",
                    "jax": "JAX backend (jit)",
                    "hf": "Hugging Face AlbertForPreTraining, torch",
                },
                "optimizers": {"ours": "LAMB (paper)", "hf": "torch AdamW"},
                "rows": rows,
            }
        )
    )


if __name__ == "__main__":
    main()
