"""`albert finetune`: the fine-tuning stage (`model.finetune`) with its further-pretraining step.

Further pretraining (Sun et al. 2019, section 5.3; `--further-pretrain-steps N`) continues
pretraining `--init` on the task's own training text before fine-tuning: the text is written as a
segmented corpus (a document per text, one sentence a line as the segment stage splits them, a
sentence cut at about half a sequence's characters, so that a long text on one line, a news
article, is drawn on in full rather than cut at the sequence length; a blank line between
documents), the tfrecords stage
makes masked SOP records of it, and the pretrain stage trains N steps from the checkpoint. The work
directory is OUTPUT.further/ (corpus/, tfrecords/, pretrain/); the fine-tuning then starts from
OUTPUT.further/pretrain/export/model.keras. It lives here, with the flows, because it chains stages
of two layers (`pipelines.tfrecords`, `model.pretrain`); `model/` imports neither `pipelines/` nor
`flows/`. The flows' finetune task (`--downstream`) runs this same `run`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from albert.fs import join, makedirs, open_file
from albert.outputs import check_writable
from albert.stage import stage_main
from model.finetune import cli as finetune_cli
from model.finetune.config import FinetuneConfig, Hyperparameters

if TYPE_CHECKING:  # Keras: loaded by `run`, once the config is valid (as `model.finetune.cli`)
    from model.finetune.kind import TaskData


def task_corpus(texts: Sequence[Sequence[str | None]], path: str, max_sentence_chars: int) -> int:
    """Write `texts` (the lines of each training document) as a segmented corpus for
    `pipelines.tfrecords`, each line split into its sentences (`SentenceSplitter`: BlingFire, a
    sentence over `max_sentence_chars` cut at spaces); return the number of documents."""
    from pipelines.common.text_cleaning import SentenceSplitter  # heavy: BlingFire

    splitter = SentenceSplitter(max_sentence_chars)
    documents = 0
    with open_file(path, "w") as handle:
        for text in texts:
            lines = [s for line in text if line and line.strip() for s in splitter.split(line)]
            if lines:
                handle.write("\n".join(lines) + "\n\n")
                documents += 1
    return documents


def further_pretrain(config: FinetuneConfig, data: TaskData, hp: Hyperparameters) -> dict:
    """Continue pretraining `config.init` on the task's own text (see the module docstring); the
    result's `init` is the further-pretrained model to fine-tune."""
    from model.pretrain import PretrainConfig  # heavy: only further pretraining trains
    from model.pretrain import run as pretrain  # heavy: only further pretraining trains
    from pipelines.tfrecords.stage import TFRecordsConfig  # heavy (Beam): only this path needs it
    from pipelines.tfrecords.stage import run as make_tfrecords

    work = config.output.rstrip("/") + ".further"
    corpus_dir, records, run_dir = (join(work, p) for p in ("corpus", "tfrecords", "pretrain"))
    makedirs(corpus_dir)
    length = min(hp.max_seq_length, 128)
    # About half an instance: English averages some 4 characters a piece.
    documents = task_corpus(data.train_texts, join(corpus_dir, "task.txt"), 2 * length)
    make_tfrecords(
        TFRecordsConfig(
            input=corpus_dir,
            spm_model=config.spm_model,
            output=records,
            max_seq_length=length,
            max_predictions_per_seq=max(2, length * 20 // 128),
            dupe_factor=5,
            seed=config.seed,
            num_shards=1,
        )
    )
    summary = pretrain(
        PretrainConfig(
            data=records,
            output=run_dir,
            preset=config.preset,
            spm_model=config.spm_model,
            init=None if config.init == "random" else config.init,
            steps=config.further_pretrain_steps,
            batch_size=min(32, hp.batch_size),
            learning_rate=5e-5,
            warmup_steps=config.further_pretrain_steps // 10,
            optimizer="adamw",
            seed=config.seed,
            eval_every=0,
            eval_batches=2,
            checkpoint_every=min(config.further_pretrain_steps, config.checkpoint_every),
            progress=False,
            jit_compile=False,
            input_workers=config.input_workers,
        )
    )
    return {
        "documents": documents,
        "steps": config.further_pretrain_steps,
        "init": summary["export"]["keras"],
        "pretrain": {k: v for k, v in summary.items() if k != "export"},
    }


def run(config: FinetuneConfig) -> dict:
    """`model.finetune.run`, with `--further-pretrain-steps` run by `further_pretrain`; its output
    checked writable first (not after training)."""
    check_writable(config.output, "FinetuneConfig.output")
    from model.finetune import stage as finetune_stage  # heavy: Keras and its backend

    return finetune_stage.run(config, further_pretrain=further_pretrain)


def main(argv=None, prog="python -m flows.finetune") -> int:
    return stage_main(FinetuneConfig, run, argv, prog=prog, description=finetune_cli.__doc__)


if __name__ == "__main__":
    sys.exit(main())
