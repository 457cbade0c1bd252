"""Fine-tune ALBERT on a GLUE task, SQuAD v1.1/v2.0 or RACE with Keras `fit`.

    python -m model.finetune --task sst2 --init export/model.keras --spm-model spiece.model \
        --data-dir glue/SST-2 --output runs/sst2

AdamW with linear warmup and linear decay; per-task defaults (learning rate, batch size, classifier
dropout, steps, warmup, sequence length) from Table 14 of the ALBERT paper; the dev metric is
computed every `eval_every` steps, training stops after `patience` evaluations without improvement
and the best weights are kept. Writes `OUTPUT/results.json`, a predictions file
(`predictions.tsv` for GLUE, `predictions.json` + `null_odds.json` for SQuAD, `predictions.jsonl`
for RACE) and the fine-tuned `model.keras`. MNLI is scored on both dev sets (`dev_sets`: MNLI-m,
MNLI-mm; the matched one selects the model). The strategies of Sun et al. (2019) are flags:
`--truncation`, `--features`, `--layer-decay`, `--learning-rate`, `--multitask TASK=DIR`, and
`--further-pretrain-steps`, which runs the tfrecords and pretrain stages and so is run by
`albert finetune` (flows.finetune) (see docs/finetune.md).

The configuration is checked before Keras (and its backend) is imported: a bad flag costs no
TensorFlow start-up.
"""

from __future__ import annotations

from albert.stage import stage_main
from model.finetune.config import FinetuneConfig


def run(config: FinetuneConfig) -> dict:
    """`model.finetune.stage.run`, imported once the config is valid."""
    from model.finetune.stage import run as finetune  # heavy: Keras and its backend

    return finetune(config)


def main(argv=None, prog="python -m model.finetune") -> int:
    return stage_main(FinetuneConfig, run, argv, prog=prog, description=__doc__)
