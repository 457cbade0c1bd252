"""The figures of benchmarks/quality.py: each side's outcomes on the quality mix scored by kind
(target en: clean English kept, other languages and junk removed, boilerplate lines removed around
kept prose, personal data redacted and decoys left, mojibake repaired; target de: clean German
kept, the rest removed), the rules that removed good text, and our side against the goals."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

CITATION = re.compile(r"\[[^\[\]]{1,40}\]")
GOOD_ENGLISH = ("clean_en", "wrapped_en", "pii_en", "mojibake_en", "prose_en")
HALVES = {False: "tuning", True: "held_out"}
GOALS = {  # (figure, least share) for our side, from the issue
    "en": (
        ("clean_en_kept", 0.98),
        ("other_languages_removed", 0.99),
        ("clean_kept", 0.99),
        ("prose_kept_least_kind", 0.98),
        ("junk_removed", 0.99),
        ("junk_removed_least_kind", 0.95),
        ("pii_redacted", 0.99),
        ("decoys_intact", 0.98),
        ("mojibake_repaired", 0.95),
    ),
    "de": (
        ("clean_de_kept", 0.98),
        ("clean_kept", 0.99),
        ("prose_kept_least_kind", 0.98),
        ("rest_removed", 0.99),
    ),
}


def bare(line: str) -> str:
    """A line without citation markers ([1], [citation needed]) and with single spaces: a line
    counts as kept where only its markers were removed."""
    return " ".join(CITATION.sub("", line).split())


def share(flags) -> float | None:
    flags = list(flags)
    return round(sum(flags) / len(flags), 4) if flags else None


def shares_by(pairs) -> dict:
    """{group: share of True} of (group, flag) pairs."""
    groups: dict[str, list[bool]] = defaultdict(list)
    for group, flag in pairs:
        groups[group].append(flag)
    return {group: share(flags) for group, flags in sorted(groups.items())}


def prose_scores(pairs, kind: str, clean: tuple[str, ...]) -> dict:
    """The real prose's figures of one language: kept in all (the `clean` kinds with the
    prose), per kind of prose, per kind and half (tuning, held out), the least kind, the
    documents the reference model kept."""
    prose = [(d, o) for d, o in pairs if d.kind == kind]
    by_half = shares_by((f"{d.sub}.{HALVES[d.held_out]}", o.kept) for d, o in prose)
    by_kind = shares_by((d.sub, o.kept) for d, o in prose)
    return {
        "clean_kept": share(o.kept for d, o in pairs if d.kind in (*clean, kind)),
        "prose_kept_by_kind": by_kind,
        "prose_kept_by_kind_and_half": by_half,
        "prose_kept_least_kind": min(by_kind.values()) if by_kind else None,
        "kept_by_reference_model": shares_by((d.kind, o.kept_by_reference) for d, o in pairs),
    }


def halves(pairs, kind: str) -> dict:
    """{half: share removed} of the documents of `kind`."""
    return shares_by((HALVES[d.held_out], not o.kept) for d, o in pairs if d.kind == kind)


def english_scores(docs, outcomes, references) -> dict:
    """The target-en figures; `references`: {doc id: the side's outcome on the original text}
    of the mojibake documents (repaired: the same output as the original's, where the side keeps
    the original)."""
    pairs = list(zip(docs, outcomes, strict=True))
    kept = lambda kind: [(d.sub, o.kept) for d, o in pairs if d.kind == kind]
    junk = [(d.sub, not o.kept) for d, o in pairs if d.kind == "junk"]
    foreign = [
        (d.sub, not o.kept) for d, o in pairs if d.kind in ("foreign", "clean_de", "prose_de")
    ]
    wrapped = [(d, o) for d, o in pairs if d.kind == "wrapped_en" and o.kept]
    planted = [(d, "\n".join(o.lines)) for d, o in pairs if d.kind == "pii_en" and o.kept]
    mojibake = [(d, o) for d, o in pairs if d.kind == "mojibake_en"]
    by_junk = shares_by(junk)
    return {
        "clean_en_kept": share(flag for _, flag in kept("clean_en")),
        "clean_en_kept_by_source": shares_by(kept("clean_en")),
        "good_en_kept": share(o.kept for d, o in pairs if d.kind in GOOD_ENGLISH),
        "other_languages_removed": share(flag for _, flag in foreign),
        "other_languages_kept": sorted({lang for lang, flag in foreign if not flag}),
        "junk_removed": share(flag for _, flag in junk),
        "junk_removed_least_kind": min(by_junk.values()),
        "junk_removed_by_kind": by_junk,
        "junk_removed_by_half": halves(pairs, "junk"),
        **prose_scores(pairs, "prose_en", ("clean_en",)),
        "wrapped_kept": share(flag for _, flag in kept("wrapped_en")),
        "wrapped_prose_lines_kept": share(
            bare(p) in {bare(line) for line in o.lines} for d, o in wrapped for p in d.prose
        ),
        "wrapped_boilerplate_lines_removed": share(
            bare(b) not in {bare(line) for line in o.lines}
            for d, o in wrapped
            for b in d.boilerplate
        ),
        "pii_docs_kept": share(flag for _, flag in kept("pii_en")),
        "pii_redacted": share(value not in text for d, text in planted for _, value in d.pii),
        "pii_redacted_by_kind": shares_by(
            (kind, value not in text) for d, text in planted for kind, value in d.pii
        ),
        "decoys_intact": share(value in text for d, text in planted for _, value in d.decoys),
        "decoys_intact_by_kind": shares_by(
            (kind, value in text) for d, text in planted for kind, value in d.decoys
        ),
        "mojibake_kept": share(o.kept for _, o in mojibake),
        "mojibake_repaired": share(
            o.kept and o.lines == references[d.id].lines
            for d, o in mojibake
            if references[d.id].kept
        ),
    }


def german_scores(docs, outcomes) -> dict:
    pairs = list(zip(docs, outcomes, strict=True))
    rest = [(d.kind, not o.kept) for d, o in pairs if d.kind not in ("clean_de", "prose_de")]
    return {
        "clean_de_kept": share(o.kept for d, o in pairs if d.kind == "clean_de"),
        **prose_scores(pairs, "prose_de", ("clean_de",)),
        "rest_removed": share(flag for _, flag in rest),
        "rest_removed_by_kind": shares_by(rest),
    }


def removals(docs, outcomes, kinds) -> dict:
    """{rule: documents} removed among the documents of `kinds` (what removed good text)."""
    return dict(
        Counter(
            o.rule for d, o in zip(docs, outcomes, strict=True) if d.kind in kinds and not o.kept
        )
    )


def goals(lines: dict) -> dict:
    """Ours against each goal: {figure: [value, goal, met]} (the CPU the reference model adds: at
    most the goal)."""
    verdicts = {}
    for target, items in GOALS.items():
        for figure, least in items:
            value = lines["ours", target][figure]
            verdicts[f"{target}.{figure}"] = [value, least, value is not None and value >= least]
    if ("datatrove", "en") in lines:
        ratio = lines["ours", "en"]["docs_per_cpu_s"] / lines["datatrove", "en"]["docs_per_cpu_s"]
        verdicts["en.docs_per_cpu_s_vs_datatrove"] = [round(ratio, 2), 1.5, ratio >= 1.5]
    for target in GOALS:
        added = lines["ours", target]["cpu_s"] / lines["ours_rules_only", target]["cpu_s"] - 1
        verdicts[f"{target}.cpu_added_by_reference_model"] = [round(added, 3), 0.3, added <= 0.3]
    return verdicts
