"""Segment's cleaning step in the Beam job, on a small web-like mix of real prose and junk:
removals by rule, redaction, repair, the audit and the report's section, one worker against two."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import shared_path
from segment_testdata import source_paragraphs

from albert.errors import ConfigError
from flows.report.data_quality import quality_section
from pipelines.quality.audit import night_figures
from pipelines.quality.config import AUDIT_FILE
from pipelines.segment import stage as segment
from pipelines.segment.stage import SegmentConfig

pytestmark = [pytest.mark.backend_free, pytest.mark.shared_data]

GERMAN = (
    "Die Stadt liegt am Ufer des Flusses und ist seit dem Mittelalter ein wichtiger Handelsplatz. "
    "Im neunzehnten Jahrhundert wuchs sie schnell, als die Eisenbahn die Region mit den großen "
    "Häfen im Norden verband. Heute leben hier mehr Menschen als je zuvor, und die Altstadt mit "
    "ihren engen Gassen zieht jedes Jahr viele Besucher an. Das Rathaus wurde nach dem Krieg "
    "wieder aufgebaut und beherbergt heute auch ein kleines Museum, das die Geschichte der Stadt "
    "und ihrer Bewohner erzählt."
)
COOKIE = "We use cookies to improve your experience. By continuing you accept our cookie policy."
NAVIGATION = "Home | News | Sport | Weather | Contact | About us | Careers | Help"
SHOP = "Mail: orders@shop.example.com"
EMAIL, PHONE, VERSE, LOOPBACK = "jane.doe@example.org", "+44 20 7946 0958", "John 3:16", "127.0.0.1"


def mix(books: Path) -> list[str]:
    """Texts of the mix: English prose (Austen's and Chesterton's paragraphs), German prose, a
    page that is all boilerplate, keyword spam, prose wrapped in a cookie notice and a navigation
    bar, prose with an e-mail address and a phone number beside decoys, and mojibake."""
    austen = source_paragraphs((books / "austen-persuasion.txt").read_text(encoding="utf-8"))
    prose = [" ".join(austen[index : index + 3]) for index in range(0, 18, 3)]
    return [
        *prose[:4],
        GERMAN,
        f"{COOKIE}\n{NAVIGATION}\nAccept all\nRead more\n© 2024 All rights reserved.\n{SHOP}",
        "\n".join(["cheap shoes buy online best price free shipping discount"] * 30),
        "\n".join([NAVIGATION, prose[0], COOKIE]),
        (
            f"{prose[4]} Write to {EMAIL} or call {PHONE}; the reading is {VERSE}, the host "
            f"{LOOPBACK}."
        ),
        prose[5].replace("'", "’").encode("utf-8").decode("cp1252", errors="replace")
        + " Café crème.".encode().decode("cp1252"),
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, list[tuple[dict, dict[str, bytes]]]]:
    root = tmp_path_factory.mktemp("quality")
    records = root / "mix.jsonl"
    texts = mix(shared_path("books"))
    records.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    results = []
    for workers in (1, 2):
        out = root / f"w{workers}"
        flags = ["--direct_running_mode=multi_threading", f"--direct_num_workers={workers}"]
        config = SegmentConfig(input=[str(records)], output=str(out), language=["en"], num_shards=2)
        stats = segment.run(config, flags)
        files = {path.name: path.read_bytes() for path in sorted(out.iterdir())}
        results.append((stats, files))
    return root, results


def test_cleaning_removes_redacts_repairs_and_audits_the_same_for_one_and_two_workers(runs):
    _, ((stats, files), (stats_two, files_two)) = runs
    assert (stats, files) == (stats_two, files_two)
    quality = stats["quality"]
    audit = [json.loads(line) for line in files[AUDIT_FILE].decode().splitlines()]
    removed = {record["document"]: record for record in audit}  # ids: line numbers
    assert sorted(removed) == ["mix.jsonl#5", "mix.jsonl#6", "mix.jsonl#7"]
    assert removed["mix.jsonl#5"]["rule"] == "language.not_target"
    assert removed["mix.jsonl#5"]["language"] == "de"
    assert removed["mix.jsonl#6"]["rule"] == "boilerplate.all_lines"
    assert "orders@" not in removed["mix.jsonl#6"]["text"]  # the audit holds no personal data
    assert "Mail: <EMAIL>" in removed["mix.jsonl#6"]["text"]
    assert removed["mix.jsonl#7"]["rule"].startswith("gopher_repetition.")
    assert removed["mix.jsonl#7"]["value"] > removed["mix.jsonl#7"]["threshold"]
    assert quality["documents_removed"] == stats["skipped"]["quality"] == 3
    assert sum(quality["removed"].values()) == 3 and quality["lines_removed"]
    assert quality["languages"] == {"en": 9, "de": 1}
    assert quality["pii"] == {"email": 1, "phone": 1}
    assert quality["repaired"] == 1
    assert night_figures(stats)["removed"] == quality["removed"]  # a model line's version.json
    assert sorted(quality["examples"]) == sorted(quality["removed"])
    text = b"".join(body for name, body in files.items() if name.endswith(".txt")).decode()
    assert EMAIL not in text and PHONE not in text
    assert VERSE in text and LOOPBACK in text
    assert COOKIE not in text and NAVIGATION not in text
    assert "Café crème." in text and "â€" not in text
    assert stats["skipped"]["duplicate_document"] == 1  # the prose once its boilerplate is gone
    assert stats["documents_out"] == 6 and json.loads(files["stats.json"]) == stats
    section = quality_section(stats)
    assert "Cleaning** removed 3 of the 10 documents it judged" in section
    assert "boilerplate.all_lines" in section and "en 90.0%" in section


def test_cleaning_switched_off_keeps_what_it_would_remove(tmp_path):
    records = tmp_path / "mix.jsonl"
    records.write_text(
        "".join(json.dumps({"text": text}) + "\n" for text in mix(shared_path("books")))
    )
    config = SegmentConfig(input=[str(records)], output=str(tmp_path / "o"), quality=False)
    stats = segment.run(config)
    assert stats["quality"]["settings"] is None and stats["skipped"]["quality"] == 0
    assert not (tmp_path / "o" / AUDIT_FILE).exists()
    text = "".join(path.read_text() for path in sorted((tmp_path / "o").glob("*.txt")))
    assert EMAIL in text and GERMAN.split(". ")[0] in text
    assert "â€" in text


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--language", "xx"], "xx"),
        (["--quality-thresholds", "gopher_quality.min_doc_words=-5"], "min_doc_words"),
        (["--quality-rules-off", "gopher_qualty"], "gopher_qualty"),
        (["--quality-thresholds", "fineweb.nothing=1"], "fineweb.nothing"),
        (["--no-quality", "--language", "en"], "language"),
    ],
)
def test_a_bad_cleaning_setting_is_one_line_and_exit_2_before_any_work(
    tmp_path, capsys, flags, named
):
    argv = ["--input", str(tmp_path / "none.txt"), "--output", str(tmp_path / "o"), *flags]
    assert segment.main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and named in error, error
    assert not (tmp_path / "o").exists()


def test_the_pii_flag_takes_three_values():
    with pytest.raises(ConfigError, match="pii"):
        from albert.config import build_config

        build_config(SegmentConfig, {"input": ["x"], "output": "o", "pii": "mask"})
