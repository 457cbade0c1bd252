"""The pretraining objective and its metrics, and `evaluate_pretraining` on a held-out split.

Loss = weighted masked-LM cross-entropy + SOP cross-entropy (google-research/albert's
`get_masked_lm_output` / `get_sentence_order_output`); for `--objective rtd` (an
`AlbertElectraModel`) plus lambda x replaced-token detection (`model.evaluation.replaced_tokens`).
Metrics are accumulated as sums (`sum_names`: `SUM_NAMES`, then the RTD ones) so they add exactly
across batches, replicas and workers, then turned into means.
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from albert.errors import StageError, naming
from model.conversion.convert import load_pretrained
from model.evaluation.replaced_tokens import RTD_SUM_NAMES, RTD_WEIGHT, rtd_metrics, rtd_sums
from model.input import records as pretrain_records  # Grain on JAX: no TensorFlow
from model.input import source as pretrain_input
from model.network.electra import inputs_for

SUM_NAMES = (
    "mlm_loss_sum",
    "mlm_correct",
    "mlm_weight",
    "sop_loss_sum",
    "sop_correct",
    "sop_count",
)


def label_scores(logits, labels):
    """Per row of `logits [.., C]` (float32) and `labels [..]` (int): `(nll, correct)`, where
    nll = -log softmax(logits)[label] and correct = 1.0 where the label's logit is the highest (a
    tie counts as correct). Spelled as a one-hot select, a log-sum-exp and a max, which fuse into
    passes over the logits: no argmax reduction, and no scatter into a zero tensor in the gradient
    (the costly parts of take_along_axis + argmax over a 30k vocabulary under XLA on CPU)."""
    hot = ops.one_hot(labels, ops.shape(logits)[-1], dtype=logits.dtype)
    label_logit = ops.sum(logits * hot, axis=-1)
    nll = ops.logsumexp(logits, axis=-1) - label_logit
    correct = ops.cast(ops.greater_equal(label_logit, ops.max(logits, axis=-1)), "float32")
    return nll, correct


def pretraining_loss(outputs: dict, batch: dict, mlm_denominator, sop_denominator):
    """(loss, sums): `loss` is this batch's share of the global loss, normalised by the global
    masked-token weight and sequence count (packed rows: instances, the sum of `sop_weights`);
    `sums` a [6] float32 vector in `SUM_NAMES` order."""
    mlm_logits = ops.cast(outputs["mlm_logits"], "float32")
    sop_logits = ops.cast(outputs["sop_logits"], "float32")
    labels = ops.cast(batch["masked_lm_ids"], "int32")
    weights = ops.cast(batch["masked_lm_weights"], "float32")
    token_nll, token_correct = label_scores(mlm_logits, labels)
    mlm_loss_sum = ops.sum(token_nll * weights)
    mlm_correct = ops.sum(token_correct * weights)

    # packed rows: one SOP prediction per instance slot, `sop_weights` 0 for an empty slot
    sop_labels = ops.cast(ops.reshape(batch["next_sentence_labels"], (-1,)), "int32")
    sop_nll, sop_hits = label_scores(ops.reshape(sop_logits, (-1, 2)), sop_labels)
    if "sop_weights" in batch:
        sop_weights = ops.reshape(ops.cast(batch["sop_weights"], "float32"), (-1,))
        sop_nll, sop_hits = sop_nll * sop_weights, sop_hits * sop_weights
        sop_count = ops.sum(sop_weights)
    else:
        sop_count = ops.cast(ops.shape(sop_labels)[0], "float32")
    sop_loss_sum = ops.sum(sop_nll)
    sop_correct = ops.sum(sop_hits)

    loss = mlm_loss_sum / mlm_denominator + sop_loss_sum / sop_denominator
    sums = ops.stack(
        [mlm_loss_sum, mlm_correct, ops.sum(weights), sop_loss_sum, sop_correct, sop_count]
    )
    return loss, sums


def sum_names(objective: str = "mlm") -> tuple[str, ...]:
    """The names of the summed statistics of `objective` (`mlm` or `rtd`), in order."""
    return SUM_NAMES + (RTD_SUM_NAMES if objective == "rtd" else ())


def objective_loss(outputs: dict, batch: dict, denominators, rtd_weight=RTD_WEIGHT):
    """`pretraining_loss` with `denominators` (masked-token weight, sequences), and for outputs
    with `rtd_logits` (`AlbertElectraModel`'s) plus `rtd_weight` x the replaced-token loss over the
    third denominator (the global real-token count); sums in `sum_names`' order."""
    loss, sums = pretraining_loss(outputs, batch, denominators[0], denominators[1])
    if "rtd_logits" not in outputs:
        return loss, sums
    rtd = rtd_sums(outputs["rtd_logits"], outputs["rtd_labels"], batch["input_mask"])
    loss = loss + rtd_weight * rtd[0] / denominators[2]
    return loss, ops.concatenate([sums, ops.stack(rtd)])


def metrics_from_sums(sums, rtd_weight: float = RTD_WEIGHT) -> dict:
    """Means from summed statistics: masked_lm_{loss,accuracy}, perplexity, sop_{loss,accuracy},
    loss; with the RTD sums also rtd_loss and replaced_token_accuracy, and loss counts
    `rtd_weight` x rtd_loss."""
    values = [float(x) for x in np.asarray(sums, dtype=np.float64)]
    s = dict(zip(sum_names("rtd" if len(values) > len(SUM_NAMES) else "mlm"), values))
    mlm_weight, sop_count = max(s["mlm_weight"], 1e-9), max(s["sop_count"], 1e-9)
    mlm_loss = s["mlm_loss_sum"] / mlm_weight
    sop_loss = s["sop_loss_sum"] / sop_count
    metrics = {
        "loss": mlm_loss + sop_loss,
        "masked_lm_loss": mlm_loss,
        "masked_lm_accuracy": s["mlm_correct"] / mlm_weight,
        "perplexity": math.exp(min(mlm_loss, 50.0)),
        "sop_loss": sop_loss,
        "sop_accuracy": s["sop_correct"] / sop_count,
    }
    if "rtd_count" in s:
        metrics.update(rtd_metrics(s))
        metrics["loss"] += rtd_weight * metrics["rtd_loss"]
    return metrics


def eval_step_fn(model):
    """A compiled function batch -> sums (tf.function on TensorFlow, jit of stateless_call on
    JAX); an `AlbertElectraModel` is scored on fresh replacements (its sampler's state is not
    advanced on JAX)."""
    model_inputs = inputs_for(model)
    denominators = (1.0, 1.0, 1.0)
    if keras.config.backend() == "jax":
        import jax  # backend-specific: only the JAX backend has it loaded

        @jax.jit
        def stateless(trainable, non_trainable, batch):
            outputs, _ = model.stateless_call(
                trainable, non_trainable, model_inputs(batch), training=False
            )
            return objective_loss(outputs, batch, denominators)[1]

        def step(batch):
            batch = {k: np.asarray(v) for k, v in batch.items()}
            return stateless(
                [v.value for v in model.trainable_variables],
                [v.value for v in model.non_trainable_variables],
                batch,
            )

        return step
    import tensorflow as tf  # heavy, backend-specific: only the TensorFlow backend needs it

    @tf.function(autograph=False)
    def step(batch):
        outputs = model(model_inputs(batch), training=False)
        return objective_loss(outputs, batch, denominators)[1]

    return step


def evaluate_batches(
    model, batches, step=None, source: str = "held-out data", rtd_weight: float = RTD_WEIGHT
) -> dict:
    """Metrics of `model` over an iterable of batches (dicts of the TFRecord features).

    Raises StageError naming `source` when there is nothing to score (no records, or no masked
    token): metrics of nothing would read as loss 0 and perplexity 1.
    """
    step = step or eval_step_fn(model)
    total = np.zeros(len(SUM_NAMES), np.float64)
    for batch in batches:
        sums = np.asarray(step(batch), np.float64)
        total = sums + (total if len(total) == len(sums) else 0.0)
    sums = dict(zip(SUM_NAMES, total))
    if not sums["sop_count"] or not sums["mlm_weight"]:
        what = "records" if not sums["sop_count"] else "masked tokens"
        raise StageError(f"{source}: no {what} to evaluate (an empty held-out shard?)")
    return metrics_from_sums(total, rtd_weight)


def evaluate_pretraining(
    model_or_path, data_dir: str, batch_size: int = 64, max_batches: int | None = None
) -> dict:
    """Held-out masked-LM and SOP metrics of a model (or a path `load_pretrained` accepts) on the
    held-out split of `data_dir` (pretrain_records.split_files: the held-out documents' shard named
    in metadata.json, else the last shard, or every 20th record of a single shard).

    Returns dict(masked_lm_accuracy, masked_lm_loss, perplexity, sop_accuracy, sop_loss, loss).
    """
    model = model_or_path
    if isinstance(model_or_path, str):
        with naming(model_or_path):  # e.g. Keras refusing an unsafe .keras file
            model = load_pretrained(model_or_path)
    spec = pretrain_records.inspect_data(data_dir)
    _, heldout_files, _ = pretrain_records.split_files(spec)
    counts = pretrain_records.check_shards(heldout_files, model.config.vocab_size)
    pretrain_records.check_heldout_not_empty(spec, counts)
    batches = pretrain_input.heldout_batches(spec, batch_size, max_batches=max_batches)
    return evaluate_batches(model, batches, source=", ".join(heldout_files))
