"""A finished base run directory (segment, vocab, tfrecords, pretrain of albert-nano), built by the
stages themselves without a flow: what a model line starts from (flows.line.base.make_line)."""

from __future__ import annotations

from pathlib import Path


def build_base(root: Path, corpus: Path, steps: int = 2) -> Path:
    """`root` made a base run on `corpus` (a `test_flows_pipeline.write_corpus` file): vocabulary of
    60 pieces, 64-token TFRecords with held-out documents, `steps` of albert-nano at batch 8."""
    from model.pretrain import PretrainConfig
    from model.pretrain import run as pretrain
    from pipelines import segment, tfrecords, vocab

    segment.run(
        segment.SegmentConfig(
            input=[str(corpus)], output=str(root / "segment"), format="text", num_shards=2
        )
    )
    vocab.run(
        vocab.VocabConfig(input=str(root / "segment"), output=str(root / "vocab"), vocab_size=60)
    )
    spm = str(root / "vocab" / "spiece.model")
    tfrecords.run(
        tfrecords.TFRecordsConfig(
            input=str(root / "segment"),
            spm_model=spm,
            output=str(root / "tfrecords"),
            max_seq_length=64,
            max_predictions_per_seq=10,
            dupe_factor=2,
            num_shards=2,
        )
    )
    pretrain(
        PretrainConfig(
            data=str(root / "tfrecords"),
            output=str(root / "pretrain"),
            preset="albert-nano",
            spm_model=spm,
            steps=steps,
            batch_size=8,
            warmup_steps=0,
            jit_compile=False,
            progress=False,
        )
    )
    return root
