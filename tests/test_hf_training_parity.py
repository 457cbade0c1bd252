"""Same start, same loss as Hugging Face: albert-nano built here, exported untrained with
`export_huggingface`, loaded into transformers' AlbertForPreTraining (torch, float32, dropout off);
the first training batch's loss of our backend's training step equals Hugging Face's to 1e-4.

benchmarks/learning_parity.py carries the comparison on over whole training runs.
"""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from pretrain_testdata import write_shards

from albert.pretraining_example import decode_example
from albert.tfrecord_framing import tfrecord_records
from model.conversion.hf import export_huggingface
from model.evaluation.heldout import metrics_from_sums
from model.input.grain import with_denominators
from model.pretrain import PretrainConfig
from model.pretrain.build import build_training
from model.pretrain.identity import data_spec
from model.pretrain.loop import select_devices, training_engine

BATCH = 16
NO_DROPOUT = {"classifier_dropout_prob": 0.0}  # albert-nano has no other dropout


def first_records(path: str, count: int) -> dict[str, np.ndarray]:
    """The first `count` examples of a shard, decoded with `decode_example` and stacked."""
    examples = []
    for record in tfrecord_records(path):
        examples.append(decode_example(record))
        if len(examples) == count:
            break
    return {name: np.stack([e[name] for e in examples]) for name in examples[0]}


def huggingface_loss(hf_dir: str, batch: dict[str, np.ndarray]) -> float:
    """AlbertForPreTraining's loss: labels -100 off the masked positions (weight 0 included)."""
    import torch  # here, not at collection: it costs every xdist worker seconds to import
    from transformers import AlbertForPreTraining

    model = AlbertForPreTraining.from_pretrained(hf_dir, dtype=torch.float32)
    model.train()  # as in training; dropout is 0 on both sides
    labels = np.full(batch["input_ids"].shape, -100, np.int64)
    rows, columns = np.nonzero(batch["masked_lm_weights"] > 0)
    labels[rows, batch["masked_lm_positions"][rows, columns]] = batch["masked_lm_ids"][
        rows, columns
    ]
    with torch.no_grad():
        output = model(
            input_ids=torch.from_numpy(batch["input_ids"]),
            attention_mask=torch.from_numpy(batch["input_mask"]),
            token_type_ids=torch.from_numpy(batch["segment_ids"]),
            labels=torch.from_numpy(labels),
            sentence_order_label=torch.from_numpy(batch["next_sentence_labels"][:, 0]),
        )
    return float(output.loss)


@pytest.mark.keras
def test_first_batch_loss_equals_hugging_face(tmp_path):
    pytest.importorskip("torch")
    data = write_shards(tmp_path / "records", num_shards=2, per_shard=BATCH, seq_len=128, preds=20)
    config = PretrainConfig(
        data=str(data),
        output=str(tmp_path / "run"),
        preset="albert-nano",
        architecture=NO_DROPOUT,
        batch_size=BATCH,
        optimizer="adamw",
        jit_compile=False,
        progress=False,
    )
    spec = data_spec(config)
    backend = keras.config.backend()
    strategy, distribution, replicas = select_devices(config, backend)
    model, optimizer, _ = build_training(config, spec, strategy, 100, None)
    export_huggingface(model, str(tmp_path / "hf"))  # untrained: the same start

    batch = first_records(spec.files[0], BATCH)
    assert (batch["masked_lm_weights"] == 0).any()  # padded predictions are ignored by both
    ours = with_denominators(  # as the training input gives it
        {
            name: values.astype(np.float32 if name == "masked_lm_weights" else np.int32)
            for name, values in batch.items()
        }
    )
    engine = training_engine(config, backend, model, optimizer, strategy, distribution, replicas)
    our_loss = metrics_from_sums(engine.step(ours))["loss"]

    hf_loss = huggingface_loss(str(tmp_path / "hf"), batch)
    print(f"first-batch loss: ours {our_loss:.7f}, Hugging Face {hf_loss:.7f}")
    assert abs(our_loss - hf_loss) < 1e-4
