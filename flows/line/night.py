"""One night of a model line (flows.line.records), inside the line's flow (flows.line.flow):

1. the input files whose content (sha256) the line has not taken yet; none: say so and stop;
2. segment -> [select] -> tfrecords of those files with the line's vocabulary, whole documents held
   out by their text's hash alone (so a document's side never depends on the rest of the corpus);
3. the replay mix (model.input.replay, a cached stage): the new sequences, a share of earlier
   nights' and of the base's general ones, and the in-domain held-out set so far;
4. further pretraining from `current` for --epochs passes over the mix (or --steps);
5. the candidate and `current` scored on the in-domain held-out set and on the general one and,
   with `--gate-task TASK=DIR`, each fine-tuned alike on that task (`gate-parent`,
   `gate-candidate`: the same settings and seed) and scored on its dev set;
6. the gate (flows.line.gate), the new version (promoted or refused, with the reason), the report.

The line's lock is held throughout. Each night works in LINE/nights/<parent>-<digest of its files>:
every stage is a cached task there and training resumes from its checkpoints, so a killed night
run again continues where it stopped; nothing of it is visible in the line until the version is
committed.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping
from typing import Any

from prefect.states import Completed, State

from albert.errors import ConfigError, NothingNew, StageError
from albert.fs import join, listing_digest
from albert.hashing import derive_seed
from albert.locks import output_lock
from flows.domain_config import data_configs
from flows.engine import tasks
from flows.line.base import git_revision, make_base_version, make_line, night_config, utc_now
from flows.line.check import require_sound, sound_settings
from flows.line.config import LineConfig
from flows.line.files import copy_tree, file_size
from flows.line.gate import Decision, decide
from flows.line.gate_task import gate_configs, gate_task_record, night_scores, task_gate
from flows.line.inputs import NOTHING_NEW, novelty
from flows.line.near_dup import keep_signatures, lineage_references, with_lineage
from flows.line.records import (
    NIGHTS,
    PROMOTED,
    REFUSED,
    ModelLine,
    ancestry,
    next_version,
    written_night,
)
from flows.line.report import write_line_report
from flows.report.render import TrainingProgress
from flows.run_plan import cpu_seconds, run_plan
from model.input.replay import ReplayConfig
from model.input.replay import run as replay_mix
from pipelines.quality.audit import night_figures


@tasks.registered_task("replay")
def replay(config: ReplayConfig) -> dict:
    """Tonight's TFRecords + replayed earlier and general sequences + the in-domain held-out set
    so far (model.input.replay)."""
    return replay_mix(config)


def run_night(
    config: LineConfig, digests: Mapping[str, str], beam_args: list[str] | None = None
) -> State:
    """The night on `config.line` (made from --base first if it does not exist) over the input
    files' `digests` (path -> sha256, `input_digests`); a Completed state whose message is the
    night's one-line outcome and whose data is the summary."""
    line = ModelLine(config.line)
    with output_lock(line.url):
        if not line.exists():
            make_line(config, line)
        remove_leftovers(line)
        if line.current() is None:  # killed while making its first version
            make_base_version(config, line, sound_settings(line))
        require_sound(line)
        settings = line.settings()
        if config.base is not None and config.base != settings["base"]["path"]:
            raise ConfigError(
                f"LineConfig.base: {line.url} was made from {settings['base']['path']}, "
                f"not {config.base} (leave --base out, or use another --line)"
            )
        general = settings["general"]["data"]
        if listing_digest(general) != settings["general"]["listing"]:
            raise StageError(
                f"{general}: the general TFRecords changed since the line {line.url} was made "
                "(line.json records their files and sizes); its general scores and replay need "
                "them as they were"
            )
        return night(config, line, settings, digests, list(beam_args or []))


def remove_leftovers(line: ModelLine) -> None:
    """What killed commits left in the line, removed (and said); call it holding the line's
    lock."""
    removed = line.remove_leftovers()
    if removed:
        print(f"{line.url}: removed what killed commits left: {', '.join(removed)}")


def night(
    config: LineConfig,
    line: ModelLine,
    settings: dict,
    digests: Mapping[str, str],
    beam_args: list[str],
) -> State:
    """The night's steps (the module's docstring), holding the line's lock."""
    start, cpu_start = time.monotonic(), cpu_seconds()
    records, current = line.records(), line.current()
    fresh, nothing_new = novelty(config, line, digests)
    if nothing_new:
        write_line_report(line, refresh_only=True)
        return finish(nothing_new, {"line": line.url, "status": NOTHING_NEW, "current": current})
    written = written_night(records, current, fresh.values())
    if written is not None and records[written]["status"] == PROMOTED:
        line.set_current(written)
        write_line_report(line)
        message = f"{line.url}: {written} was written by a killed night; current is now {written}"
        return finish(message, {"line": line.url, "status": PROMOTED, "current": written})
    name = next_version(records, line.pruned())
    work = line.path(NIGHTS, f"{current}-{_digest(fresh.values())[:12]}")
    print(f"{line.url}: {name} from {current} on {len(fresh)} new file(s); working in {work}")
    run = night_config(config, settings, work)
    spm = line.spm_model(current)
    storage = run.result_storage()
    configs = data_configs(run, sorted(fresh), spm)
    lineage = lineage_references(line.path, records, current)
    configs["segment"] = with_lineage(configs["segment"], lineage)
    beam = {"beam_args": beam_args}
    selection = [(tasks.domain_select, "select", beam)] if "select" in configs else []
    plan = [(tasks.segment, "segment", beam), *selection, (tasks.tfrecords, "tfrecords", beam)]
    try:
        outcomes = run_plan(plan, configs, storage)
    except NothingNew as seen:  # every document a near-copy of what the lineage has read
        write_line_report(line, refresh_only=True)
        message = f"{line.url}: nothing new in {len(fresh)} new file(s): {seen}; nothing done"
        return finish(message, {"line": line.url, "status": NOTHING_NEW, "current": current})
    earlier = ancestry(records, current)
    configs["replay"] = replay_config(config, line, records, earlier, settings, run)
    outcomes |= run_plan([(replay, "replay", {})], configs, storage)
    mix = outcomes["replay"].result
    if not mix["heldout_sequences"]:
        message = (
            f"{line.url}: no held-out in-domain documents yet (none of the {len(fresh)} new "
            f"file(s)' documents hashed into --heldout-fraction {run.heldout_fraction:g}); the "
            "gate needs some: nothing done, the files stay new"
        )
        return finish(message, {"line": line.url, "status": "nothing to score", "current": current})
    steps = config.steps or math.ceil(config.epochs * mix["sequences"] / config.batch_size)
    run = run.model_copy(update={"steps": steps})
    parent_model, candidate = line.model(current, records[current]), run.trained_model()
    configs["pretrain"] = run.pretrain_config(spm, init=parent_model, data=run.stage_dir("replay"))
    scores = {
        "parent-domain": (parent_model, run.stage_dir("replay")),
        "candidate-domain": (candidate, run.stage_dir("replay")),
        "parent-general": (parent_model, settings["general"]["data"]),
        "candidate-general": (candidate, settings["general"]["data"]),
    }
    for score, (model, data) in scores.items():
        configs[score] = run.held_out_eval_config(model, score).model_copy(update={"data": data})
    fine_tunes = gate_configs(config, run, spm, {"parent": parent_model, "candidate": candidate})
    configs |= fine_tunes
    progress = TrainingProgress("albert-model-line", steps)
    plan = [(tasks.pretrain, "pretrain", {"on_metrics": progress})] + [
        (tasks.heldout.with_options(name=score), score, {}) for score in scores
    ]
    plan += [(tasks.finetune.with_options(name=name), name, {}) for name in fine_tunes]
    outcomes |= run_plan(plan, configs, storage)
    candidate_scores, parent_scores = (
        night_scores(outcomes, "candidate"),
        night_scores(outcomes, "parent"),
    )
    decision = decide(
        candidate_scores,
        parent_scores,
        min_improvement=config.min_improvement,
        max_forgetting=config.max_forgetting,
        task=task_gate(config, outcomes),
    )
    record = night_record(
        config, records, current, fresh, outcomes, decision, work, start, cpu_start
    )

    def fill(directory: str) -> None:
        copy_tree(join(run.stage_dir("pretrain"), "export"), join(directory, "export"))
        copy_tree(join(line.path(current), "vocab"), join(directory, "vocab"))
        copy_tree(run.stage_dir("tfrecords"), join(directory, "data"), _bookkeeping)
        keep_signatures(run.stage_dir("segment"), directory)
        copy_tree(
            join(run.stage_dir("pretrain"), "metrics.jsonl"),
            join(directory, "training", "metrics.jsonl"),
        )

    line.commit(name, record, fill, promote=decision.promoted)
    write_line_report(line)
    if decision.promoted:
        message = f"{line.url}: {name} promoted, current is now {name}: {decision.reason}"
    else:
        message = f"{line.url}: {name} not promoted, current stays {current}: {decision.reason}"
    return finish(
        message,
        {
            "line": line.url,
            "status": record["status"],
            "version": name,
            "current": name if decision.promoted else current,
            "reason": decision.reason,
            "scores": candidate_scores,
            "parent_scores": parent_scores,
            "trained_on": record["trained_on"],
        },
    )


def night_record(
    config: LineConfig,
    records: dict,
    current: str,
    fresh: dict[str, str],
    outcomes: dict,
    decision: Decision,
    work: str,
    start: float,
    cpu_start: float,
) -> dict[str, Any]:
    """A night's version.json: its parent, status and reason, when, the code's revision, the new
    files, their digests and cleaning's figures, the TFRecords it adds to the line, what it trained
    on, the candidate's and its parent's scores, the gate, the settings, the stages and time."""
    mix = outcomes["replay"].result
    return {
        "parent": current,
        "status": PROMOTED if decision.promoted else REFUSED,
        "reason": decision.reason,
        "created": utc_now(),
        "git": git_revision(),
        "export": "export/model.keras",
        "corpus": {
            "files": [
                {"path": path, "sha256": digest, "bytes": file_size(path)}
                for path, digest in sorted(fresh.items())
            ],
            "documents": outcomes["tfrecords"].result["counts"].get("documents"),
            "heldout_documents": outcomes["tfrecords"].result["heldout"].get("documents"),
            "near_duplicates_of_lineage": (
                outcomes["segment"].result.get("near_duplicates") or {}
            ).get("of_reference"),
            "quality": night_figures(outcomes["segment"].result),
        },
        "data": {
            "shards": [f"data/{name}" for name in mix["new_shards"]],
            "counts": mix["new_counts"],
            "heldout": [f"data/{f}" for f in outcomes["tfrecords"].result["heldout"]["files"]],
        },
        "trained_on": {
            **{k: mix[k] for k in ("new", "replay_domain", "replay_general", "sequences")},
            "steps": outcomes["pretrain"].result.get("steps"),
            "batch_size": config.batch_size,
        },
        "scores": night_scores(outcomes, "candidate"),
        "parent_scores": night_scores(outcomes, "parent"),
        "heldout": {
            "domain_documents": sum(
                (records[v].get("corpus") or {}).get("heldout_documents") or 0
                for v in ancestry(records, current)
            )
            or outcomes["tfrecords"].result["heldout"].get("documents"),
            "domain_sequences": mix["heldout_sequences"],
        },
        "gate": {
            "min_improvement": config.min_improvement,
            "max_forgetting": config.max_forgetting,
            "domain_change": decision.domain_change,
            "general_change": decision.general_change,
            **gate_task_record(config, outcomes, decision),
        },
        "settings": config.model_dump(mode="json"),
        "night": {
            "work_dir": work,
            "stages": {k: {"seconds": o.seconds, "cached": o.cached} for k, o in outcomes.items()},
            "wall_seconds": time.monotonic() - start,
            "cpu_seconds": cpu_seconds() - cpu_start,
        },
    }


def finish(message: str, summary: dict[str, Any]) -> State:
    print(message, flush=True)
    return Completed(message=message, data={**summary, "message": message})


def replay_config(
    config: LineConfig,
    line: ModelLine,
    records: dict,
    earlier: list[str],
    settings: dict,
    run: LineConfig,
) -> ReplayConfig:
    """The mix of tonight's TFRecords with the earlier nights of current's lineage and the base's
    general data, seeded from the seed and the parent's number."""
    data = [(v, (records[v].get("data") or {})) for v in reversed(earlier)]
    general = settings["general"]
    return ReplayConfig(
        data=run.stage_dir("tfrecords"),
        domain_shards=[line.path(v, s) for v, d in data for s in d.get("shards", ())],
        domain_counts=[c for _, d in data for c in d.get("counts", ())],
        general_shards=general["shards"],
        general_counts=general["counts"],
        heldout=[line.path(v, s) for v, d in data for s in d.get("heldout", ())],
        domain_share=config.domain_replay,
        general_share=config.general_replay,
        seed=derive_seed(config.seed, len(earlier)),
        output=run.stage_dir("replay"),
    )


def _bookkeeping(name: str) -> bool:
    return name.rsplit("/", 1)[-1].startswith(".")


def _digest(values) -> str:
    return hashlib.sha256("\n".join(sorted(values)).encode()).hexdigest()
