"""Fine-tuning step for step as Hugging Face's `Trainer`: albert-nano exported untrained, our
classifier head copied into AlbertForSequenceClassification, dropout off, the same SST-2 rows in
the same order and our schedule on both sides; the loss of each of 20 steps equals Trainer's to
1e-4 (as `tests/test_hf_training_parity.py` checks pretraining's first batch).

The export's weights are initialised with σ 0.1 (the presets' 0.02 keeps an untrained nano's
gradient norm below 1): the gradient is then clipped at some steps, which Trainer does with torch's
`clip_grad_norm_`. `benchmarks/finetune_steps.py` runs the same comparison on any export, with the
logits, gradient norms and both schedules.
"""

import os

import pytest

# Before torch loads libgomp: OpenMP threads that spin while waiting slow torch several times on a
# CPU shared with other jobs (xdist's other worker included).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

keras = pytest.importorskip("keras")


from benchmarks import finetune_steps
from benchmarks.helpers.hf_steps import trainer_steps

STEPS = 20
WIDE_INIT = {"initializer_range": 0.1}


@pytest.mark.slow
@pytest.mark.keras
@pytest.mark.shared_data
def test_twenty_steps_equal_trainers(tmp_path, shared_data):
    # here, not at collection: torch and transformers cost every xdist worker seconds to import
    for name in ("torch", "transformers", "accelerate"):  # accelerate: Trainer's
        pytest.importorskip(name)
    spm_model = str(shared_data / "reference" / "sp16k.model")
    init = finetune_steps.nano_export(str(tmp_path / "nano"), 1, WIDE_INIT, spm_model)
    setup = finetune_steps.Setup(
        init=init,
        data_dir=str(shared_data / "glue" / "SST-2"),
        spm_model=spm_model,
        examples=STEPS * 32,
        learning_rate=1e-3,
        warmup_steps=2,
        total_steps=STEPS,
    )
    data, tokenizer = finetune_steps.task_data(setup)
    order = finetune_steps.example_order(setup.examples, STEPS, setup.batch_size, seed=0)
    head, ours, _ = finetune_steps.our_steps(
        setup, data, tokenizer, order, "reference", STEPS, diagnostics=False
    )
    theirs, differ, _ = trainer_steps(
        setup, data, order, head, "reference", STEPS, str(tmp_path / "trainer")
    )
    assert differ == {"input_ids": 0, "segment_ids": 0, "input_mask": 0}  # tokenized alike
    assert max(step["grad_norm"] for step in theirs) > 1.0  # clipping applies
    rows, first = finetune_steps.compare(ours, theirs, 1e-4)
    print("|Δloss| per step:", " ".join(f"{row['loss_diff']:.1e}" for row in rows))
    assert len(rows) == STEPS
    assert first["loss"] is None, rows[first["loss"] - 1]
