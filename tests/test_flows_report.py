"""The run report: curated headline and tables from the stages' files, readable plots, and the
rendered HTML looked at in a real headless browser (every image loads)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import image_widths

from flows.pipeline.report import run_report_markdown
from flows.report.render import render_html
from flows.report.text import downstream_table, duration, number, per_class_tables

pytestmark = pytest.mark.backend_free

# what segment, vocab and tfrecords return (= their stats.json, vocab_stats.json, metadata.json)
SUMMARIES = {
    "segment": {
        "files_read": 1,
        "documents_in": 206,
        "documents_out": 97,
        "characters_in": 5733844,
        "characters_out": 2525116,
        "sentences_out": 18234,
        "paragraphs_duplicate": 0,
        "bad_files": [],
        "skipped": {
            "redirect": 99,
            "disambiguation": 8,
            "empty": 1,
            "namespace": 1,
            "too_short": 0,
        },
    },
    "vocab": {
        "vocab_size": 8000,
        "sample_sentences": 17318,
        "corpus_sentences": 18234,
        "unk_rate": 0.000165,
        "pieces_per_word": 1.506,
        "training_seconds": 14.6,
    },
    "tfrecords": {
        "counts": {
            "documents": 97,
            "instances": 8559,
            "document_tokens": 594947,
            "tokens": 1059604,
        },
        "dupe_factor": 2,
        "max_seq_length": 128,
        "max_predictions_per_seq": 20,
        "mean_tokens_per_instance": 123.8,
        "mean_predictions_per_instance": 18.4,
        "sop_label_balance": 0.498,
        "masking": "static",
        "ngram": 3,
        "masked_ngram_histogram": [0.597, 0.26, 0.143],
        "options": {"output": "x"},
        "truncation": {
            "max_seq_length": 128,
            "passes": 2,
            "corpus_tokens": 1189894,
            "dropped_tokens": 130888,
            "dropped_fraction": 0.11,
        },
        "heldout": {
            "documents": 4,
            "instances": 548,
            "document_list": "heldout-documents-00000-of-00001.txt",
        },
    },
}


def write_stage_files(run_dir: Path) -> None:
    """Stage outputs shaped as the stages write them (figures from a demo run)."""
    for stage in ("segment", "vocab", "tfrecords", "pretrain", "heldout"):
        (run_dir / stage).mkdir(parents=True)
    for stage, name in (
        ("segment", "stats.json"),
        ("vocab", "vocab_stats.json"),
        ("tfrecords", "metadata.json"),
    ):
        (run_dir / stage / name).write_text(json.dumps(SUMMARIES[stage]))
    (run_dir / "tfrecords" / "heldout-documents-00000-of-00001.txt").write_text(
        "00ab\tpart-00000.txt:3\n"
    )
    records = [
        {
            "step": s,
            "split": "train",
            "loss": 9 - s / 100,
            "masked_lm_accuracy": s / 2000,
            "sop_accuracy": 0.5 + s / 4000,
            "learning_rate": 1e-3,
        }
        for s in range(10, 301, 10)
    ]
    records += [{"step": 300, "split": "heldout", "masked_lm_accuracy": 0.14, "sop_accuracy": 0.55}]
    (run_dir / "pretrain" / "metrics.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n"
    )
    (run_dir / "heldout" / "metrics.json").write_text(json.dumps({"masked_lm_accuracy": 0.14}))


FACTS = {
    "inputs": "1 file (`enwiki.xml.bz2`; the demo corpus)",
    "documents": 97,
    "sentences": 18234,
    "tokens": 594947,
    "vocab_size": 8000,
    "preset": "albert-tiny",
    "parameters": 4_170_000,
    "steps": 300,
    "batch_size": 32,
    "max_seq_length": 128,
    "sequences_per_second": 151.2,
    "export": "run/pretrain/export/model.keras",
    "export_hf": "run/pretrain/export/hf",
    "heldout_documents": 4,
    "heldout_sequences": 548,
    "evaluation": {
        "masked_lm_accuracy": 0.1412,
        "sop_accuracy": 0.552,
        "perplexity": 412.0,
        "sop_loss": 0.69,
    },
    "baseline": {"masked_lm_accuracy": 0.0612, "sop_accuracy": 0.5, "piece": "▁the"},
    "stages": {
        "segment": {"seconds": 19.0, "cached": False},
        "vocab": {"seconds": 18.8, "cached": True},
        "tfrecords": {"seconds": 18.0, "cached": False},
        "pretrain": {"seconds": 150.2, "cached": False},
        "heldout": {"seconds": 9.1, "cached": False},
    },
    "wall_seconds": 281.0,
    "cpu_seconds": 430.0,
    "next_command": "albert finetune --task sst2 …",
    "downstream": [
        {
            "task": "mrpc",
            "metric": "f1",
            "pretrained": {"f1": 0.81},
            "random": {"f1": 0.8},
            "steps": 300,
            "pretrained_output": "finetune-mrpc",
            "random_output": "finetune-mrpc-random",
        }
    ],
    "summaries": SUMMARIES,
}


def test_numbers_and_durations_read_as_a_person_writes_them():
    assert (
        number(2525116) == "2,525,116"
        and number(12_000_000) == "12 M"
        and number(0.18234) == "0.182"
    )
    assert number(None) == "–" and duration(19.04) == "19.0 s" and duration(252) == "4 min 12 s"
    assert "| mrpc | F1 | **0.81** | 0.8 | +0.010 | 300 |" in downstream_table(FACTS["downstream"])


def test_a_users_task_has_its_per_class_table():
    scores = {"precision": 0.5, "recall": 1.0, "f1": 0.667, "support": 3}
    result = {
        "task": "tickets",
        "pretrained_details": {"per_class": {"billing": scores}},
        "random_details": {"per_class": {"billing": {**scores, "f1": 0.2}}},
    }
    (text,) = per_class_tables([result, FACTS["downstream"][0]])
    assert text.startswith("**tickets, per class (dev set):**")
    assert "| billing | **0.667** | 0.2 | 0.5 | 1 | 3 |" in text


def test_report_headline_tables_and_images_load_in_a_browser(tmp_path):
    run_dir = tmp_path / "demo"
    write_stage_files(run_dir)
    markdown = run_report_markdown(run_dir, FACTS)
    head = markdown.split("## ", 1)[0]
    assert "**0.141**" in head and "0.0612" in head and "`▁the`" in head and "0.5 (chance)" in head
    assert "97 documents, 18,234 sentences, 594,947 tokens" in head and "4 whole documents" in head
    assert "4 min 41 s wall, 7 min 10 s CPU" in head and "vocab 18.8 s (cached)" in head
    assert (
        "albert-tiny, 4.17 M parameters" in head
        and "albert finetune --task sst2" in head
        and "| mrpc | F1 |" in head
    )
    assert "options" not in markdown and "counts." not in markdown  # curated, no raw key dumps
    assert "[tfrecords/metadata.json](tfrecords/metadata.json)" in markdown
    assert (
        "| corpus text cut by the sequence length | 11% of the tokens (130,888 of 1,189,894 "
        "over 2 pass(es)) do not fit in sequences of 128 tokens"
    ) in markdown  # not a warning
    assert "[tfrecords/heldout-documents-00000-of-00001.txt]" in markdown
    page = run_dir / "report.html"
    page.write_text(render_html(markdown, "demo"), encoding="utf-8")
    assert "<table>" in page.read_text()
    images = image_widths(page)
    assert len(images) == 3, images  # skipped reasons, masked spans, training curves
    assert all(width > 0 for _, width in images), images


DOMAIN_FACTS = {  # figures of the run: a 4.3 MB file of chapters, 2 minutes on 2 cores
    **{
        k: FACTS[k]
        for k in ("preset", "parameters", "batch_size", "max_seq_length", "sequences_per_second")
    },
    "base": "runs/enwiki-sample/pretrain/export/model.keras",
    "base_spm": "runs/enwiki-sample/vocab/spiece.model",
    "inputs": "1 file (`scripture.txt`)",
    "documents": 1189,
    "sentences": 31102,
    "tokens": 1_020_000,
    "vocab_size": 8000,
    "steps": 200,
    "export": "domain/pretrain/export/model.keras",
    "export_hf": "domain/pretrain/export/hf",
    "heldout_documents": 119,
    "heldout_sequences": 1600,
    "heldout_note": None,
    "selection": {
        "documents": 60,
        "selected": 25,
        "top_k": 25,
        "threshold": None,
        "classifier": "domain/select/classifier.keras",
    },
    "evaluation": {
        "base": {"masked_lm_accuracy": 0.099, "perplexity": 467.0, "sop_accuracy": 0.51},
        "adapted": {"masked_lm_accuracy": 0.121, "perplexity": 259.0, "sop_accuracy": 0.56},
    },
    "baseline": {"masked_lm_accuracy": 0.0612, "sop_accuracy": 0.5, "piece": "▁the"},
    "stages": {
        name: {"seconds": 10.0, "cached": name == "segment"}
        for name in (
            "segment",
            "select",
            "tfrecords",
            "heldout-before",
            "pretrain",
            "heldout-after",
        )
    },
    "wall_seconds": 121.0,
    "cpu_seconds": 230.0,
    "next_command": "albert finetune --task sst2 …",
}
DOMAIN_FACTS["summaries"] = {
    "segment": SUMMARIES["segment"],
    "tfrecords": SUMMARIES["tfrecords"],
    "select": DOMAIN_FACTS["selection"],
}


def test_domain_report_headline_before_after_and_images_load_in_a_browser(tmp_path):
    from flows.domain.report import change, domain_report_markdown, format_headline_line

    run_dir = tmp_path / "domain"
    write_stage_files(run_dir)
    markdown = domain_report_markdown(run_dir, DOMAIN_FACTS)
    head = markdown.split("## ", 1)[0]
    assert (
        "| masked-LM accuracy | 0.099 | **0.121** | +0.022 | 0.0612 (always the most frequent "
        "piece, `▁the`) |"
    ) in head
    assert "| masked-LM perplexity | 467 | **259** | -208 |" in head and "0.5 (chance)" in head
    assert change(2103.0, 953.0) == "-1,150" and change(0.0334, 0.0334) == "0"
    assert change(None, 1.0) == "–"
    assert "the base model `runs/enwiki-sample/pretrain/export/model.keras`" in head
    assert "1 file (`scripture.txt`) → 1,189 documents" in head and "25 of 60 documents" in head
    assert "`domain/pretrain/export/model.keras`" in head
    assert "119 whole documents of the new corpus that further pretraining never saw" in head
    assert "2 min 1 s wall" in head and "segment 10.0 s (cached)" in head
    assert "albert finetune" in head
    assert "options" not in markdown and "counts." not in markdown and "items]" not in markdown
    assert (
        "| corpus text cut by the sequence length | 11% of the tokens (130,888 of 1,189,894 "
        "over 2 pass(es)) do not fit in sequences of 128 tokens"
    ) in markdown  # not a warning
    assert "## Held-out in-domain evaluation: before and after — 20.0 s" in markdown
    assert format_headline_line(DOMAIN_FACTS) == (
        "held-out in-domain documents: masked-LM accuracy 0.099 -> 0.121 (baseline 0.0612), "
        "perplexity 467 -> 259"
    )
    few = run_dir.parent / "few"
    write_stage_files(few)
    note = (
        "the corpus yields 2 documents, fewer than --heldout-min-documents 8: 1 held out "
        "whole, 1 trained on"
    )
    few_report = domain_report_markdown(
        few, {**DOMAIN_FACTS, "heldout_note": note, "heldout_documents": 1}
    )
    assert note in few_report.split("## ")[0] and "1 whole document of the new corpus" in few_report
    page = run_dir / "report.html"
    page.write_text(render_html(markdown, "domain"), encoding="utf-8")
    images = image_widths(page)
    assert len(images) == 4, images  # skip reasons, masked spans, training curves, before/after
    assert all(width > 0 for _, width in images), images


def test_a_users_task_has_its_confusion_matrix_picture(tmp_path):
    from flows.pipeline.report import confusion_pictures

    details = {"per_class": {"a": {}, "b": {}}, "confusion_matrix": [[3, 1], [0, 2]]}
    result = {"task": "tickets", "pretrained_details": details}
    assert confusion_pictures(tmp_path, [result, FACTS["downstream"][0]]) == [
        "![tickets confusion matrix](plots/confusion-tickets.png)"
    ]
    assert (tmp_path / "plots" / "confusion-tickets.png").read_bytes()[:4] == b"\x89PNG"
