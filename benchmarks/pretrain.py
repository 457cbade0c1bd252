"""Pretraining throughput: our Keras training step against Hugging Face `AlbertForPreTraining` (torch).

For each (preset, sequence length) both implementations run the same architecture on the same batch
(random ids, 20 masked positions per sequence as the reference's data) for full training steps:
forward, masked-LM + SOP loss, backward, optimizer update (ours: the paper's LAMB; Hugging Face:
torch AdamW, it ships no LAMB). Hugging Face's head scores every position (its API), ours only the
masked positions (as google-research/albert). Prints ONE JSON line: sequences/s, tokens/s, ratios.

    python benchmarks/pretrain.py [--presets albert-tiny,albert-base] [--seqs 128,512] [--batch 8]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

PREDICTIONS = 20


def make_batch(batch: int, seq: int, vocab: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), PREDICTIONS, replace=False) for _ in range(batch)]))
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


def ours(preset: str, batch: dict, jit_compile: bool, warmup: int, seconds: float, min_steps: int) -> float:
    import keras
    import tensorflow as tf

    from model.config import get_preset
    from model.optimizers import WarmupPolynomialDecay, build_optimizer
    from model.pretrain import tf_train_step
    from model.pretraining_model import AlbertPretrainingModel

    keras.utils.set_random_seed(0)
    model = AlbertPretrainingModel(get_preset(preset, vocab_size=30000))
    optimizer = build_optimizer("lamb", WarmupPolynomialDecay(1e-4, 10, 10_000))
    optimizer.build(model.trainable_variables)
    step_fn = tf_train_step(model, optimizer, tf.distribute.get_strategy(), 1, jit_compile)
    tensors = {k: tf.constant(v) for k, v in batch.items()}
    return timed(lambda: step_fn(tensors).numpy(), warmup, seconds, min_steps)


def huggingface(preset: str, batch: dict, warmup: int, seconds: float, min_steps: int) -> float:
    import torch
    import transformers

    from model.config import get_preset
    from model.convert import config_to_huggingface

    torch.manual_seed(0)
    config = transformers.AlbertConfig(**config_to_huggingface(get_preset(preset, vocab_size=30000)))
    model = transformers.AlbertForPreTraining(config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
    labels = np.full(batch["input_ids"].shape, -100, np.int64)
    np.put_along_axis(labels, batch["masked_lm_positions"].astype(np.int64), batch["masked_lm_ids"].astype(np.int64), 1)
    inputs = {
        "input_ids": torch.tensor(batch["input_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(batch["input_mask"], dtype=torch.long),
        "token_type_ids": torch.tensor(batch["segment_ids"], dtype=torch.long),
        "labels": torch.tensor(labels),
        "sentence_order_label": torch.tensor(batch["next_sentence_labels"][:, 0], dtype=torch.long),
    }

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return timed(step, warmup, seconds, min_steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="albert-tiny,albert-base")
    parser.add_argument("--seqs", default="128,512")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0, help="minimum measuring time per case")
    parser.add_argument("--min-steps", type=int, default=3)
    parser.add_argument("--jit", choices=["on", "off", "both"], default="off", help="XLA for our step (off: CPU default)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    rows = []
    for preset in args.presets.split(","):
        for seq in (int(s) for s in args.seqs.split(",")):
            batch = make_batch(args.batch, seq, 30000)
            row = {"preset": preset, "seq": seq, "batch": args.batch}
            hf = huggingface(preset, batch, 2, args.seconds, args.min_steps)
            row["hf_sequences_per_s"] = round(hf * args.batch, 2)
            for jit in ("on", "off") if args.jit == "both" else (args.jit,):
                rate = ours(preset, batch, jit == "on", 2, args.seconds, args.min_steps)
                row[f"ours_xla_{jit}_sequences_per_s"] = round(rate * args.batch, 2)
                row[f"ours_xla_{jit}_tokens_per_s"] = round(rate * args.batch * seq, 1)
                row[f"ratio_xla_{jit}_vs_hf"] = round(rate / hf, 3)
            row["hf_tokens_per_s"] = round(hf * args.batch * seq, 1)
            rows.append(row)
    print(json.dumps({
        "benchmark": "pretrain_throughput_cpu",
        "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "optimizers": {"ours": "LAMB (paper)", "huggingface": "torch AdamW"},
        "gpu": "none lent: base/large seq-512 bf16 JAX throughput and MFU not measured",
        "rows": rows,
    }))


if __name__ == "__main__":
    main()
