"""Domain-classifier data selection: train on labelled samples, score with Beam RunInference,
select."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from albert.config import ConfigError, build_config
from tests.fixtures.tasks.tiny_vocab import train_tiny_spm

# pipelines.select is imported by each test: Beam's RunInference imports torch where it is
# installed (5 CPU-s), which every xdist worker would pay when it collects this module.

SPORT = [
    "The broncos won the super bowl.",
    "Carolina played the game again.",
    "Our team won 50 points today.",
]
HOME = [
    "The cat sees a red ball.",
    "My sister paints the blue house.",
    "A small bird finds an apple.",
]


def write_corpus(path: Path, documents: list[list[str]]) -> str:
    path.write_text("".join("\n".join(doc) + "\n\n" for doc in documents))
    return str(path)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("domain")
    spm_model = train_tiny_spm(root)
    target = write_corpus(
        root / "target.txt", [[SPORT[i % 3], SPORT[(i + 1) % 3]] for i in range(30)]
    )
    source = write_corpus(
        root / "source.txt", [[HOME[i % 3], HOME[(i + 2) % 3]] for i in range(30)]
    )
    (root / "corpus").mkdir()
    docs = [[SPORT[i % 3]] if i % 3 == 0 else [HOME[i % 3]] for i in range(12)]  # 4 sport documents
    write_corpus(root / "corpus" / "part-0.txt", docs[:6])
    write_corpus(root / "corpus" / "part-1.txt", docs[6:])
    return root, spm_model, target, source


def selected_documents(output: Path) -> list[str]:
    text = "".join(p.read_text() for p in sorted(output.glob("selected-*.txt")))
    return [doc for doc in text.split("\n\n") if doc.strip()]


def test_top_k_selects_the_target_domain_deterministically(corpus, tmp_path):
    from pipelines.select.stage import DomainSelectConfig, run

    root, spm_model, target, source = corpus
    config = DomainSelectConfig(
        input=str(root / "corpus"),
        output=str(tmp_path / "sel"),
        spm_model=spm_model,
        target_samples=target,
        source_samples=source,
        top_k=4,
        epochs=5,  # enough for these two plain domains (held-out accuracy 1.0)
        num_shards=2,
    )
    summary = run(config)
    assert summary["documents"] == 12 and summary["selected"] == 4
    assert summary["classifier_training"]["heldout_accuracy"] == 1.0
    chosen = selected_documents(tmp_path / "sel")
    assert sorted(chosen) == sorted([SPORT[0]] * 4)
    scores = [
        line.split("\t")
        for p in sorted((tmp_path / "sel").glob("scores-*.tsv"))
        for line in p.read_text().splitlines()
    ]
    assert len(scores) == 12 and {k.split(":")[0] for k, _ in scores} == {
        "part-0.txt",
        "part-1.txt",
    }
    assert json.loads((tmp_path / "sel" / "selection.json").read_text())["selected"] == 4
    # the saved classifier, two workers, threshold selection: the same documents, byte-identical
    # shards
    again = DomainSelectConfig(
        input=str(root / "corpus"),
        output=str(tmp_path / "sel2"),
        spm_model=spm_model,
        classifier=str(tmp_path / "sel" / "classifier.keras"),
        threshold=0.5,
        num_shards=2,
    )
    run(again, ["--direct_num_workers=2", "--direct_running_mode=multi_threading"])
    for shard in sorted((tmp_path / "sel").glob("selected-*.txt")):
        assert (tmp_path / "sel2" / shard.name).read_bytes() == shard.read_bytes()


def test_config_needs_one_rule_and_a_classifier():
    from pipelines.select.stage import DomainSelectConfig

    with pytest.raises(ConfigError, match="exactly one of top_k and threshold"):
        build_config(
            DomainSelectConfig, {"input": "i", "output": "o", "spm_model": "s", "classifier": "c"}
        )
    with pytest.raises(ConfigError, match="--classifier, or --target-samples"):
        build_config(
            DomainSelectConfig, {"input": "i", "output": "o", "spm_model": "s", "top_k": 3}
        )
