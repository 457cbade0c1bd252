"""The replaced-token detection term of ELECTRA's loss (`model.network.electra`) and its metrics.

Per real token (`input_mask`), the sigmoid cross-entropy of the discriminator's logit against
"replaced"; summed as `RTD_SUM_NAMES` (after `model.evaluation.heldout.SUM_NAMES`), so the sums add
across batches, replicas and workers like the masked-LM and SOP ones. The training loss adds
`rtd_weight` (ELECTRA's lambda, 50) times the RTD loss normalised by the global real-token count.
"""

from __future__ import annotations

RTD_SUM_NAMES = ("rtd_loss_sum", "rtd_correct", "rtd_count")
RTD_WEIGHT = 50.0
TOKEN_DENOMINATOR_EPSILON = 1e-5  # an all-padding batch divides by this, not by 0


def rtd_sums(logits, labels, input_mask):
    """`(loss_sum, correct, count)` float32 over the real tokens of `logits`, `labels` (1.0 =
    replaced) and `input_mask`, all `[B, T]`; a logit of 0 counts as "original"."""
    from keras import ops  # heavy: Keras loads its backend; the constants need none

    logits = ops.cast(logits, "float32")
    labels = ops.cast(labels, "float32")
    mask = ops.cast(input_mask, "float32")
    nll = ops.relu(logits) - logits * labels + ops.log1p(ops.exp(-ops.abs(logits)))
    hits = ops.cast(ops.equal(ops.cast(ops.greater(logits, 0.0), "float32"), labels), "float32")
    return ops.sum(nll * mask), ops.sum(hits * mask), ops.sum(mask)


def rtd_metrics(sums: dict) -> dict:
    """`rtd_loss` and `replaced_token_accuracy` (over every real token) from summed statistics."""
    count = max(sums["rtd_count"], 1e-9)
    return {
        "rtd_loss": sums["rtd_loss_sum"] / count,
        "replaced_token_accuracy": sums["rtd_correct"] / count,
    }
