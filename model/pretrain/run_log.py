"""The run's records: metrics.jsonl (rewritten whole, atomically), TensorBoard scalars, the
progress bar."""

from __future__ import annotations

import json
import logging
import sys

from albert.fs import join, open_file
from albert.outputs import write_atomic
from model.pretrain.tensorboard_events import ScalarWriter

logger = logging.getLogger(__name__)


class MetricsLog:
    """metrics.jsonl: one JSON record per line, rewritten whole at each record, never appended.

    Each write goes through `write_atomic` (a rename on disks, one upload on object stores),
    so gs:// keeps every record and a kill leaves the previous complete file. On resume it keeps the
    first `kept` records (those written before the checkpoint being resumed; None: those up to
    `resume_step`), so a resumed run ends with the same records as one never interrupted. A line
    that does not parse (a torn write by an older version) is dropped with a warning.
    """

    def __init__(self, path: str, kept: int | None = 0, resume_step: int = 0):
        self.path = path
        lines = self.read(path)
        if kept is None:  # a checkpoint from before record counts were kept: by step
            self.lines = [line for line in lines if json.loads(line).get("step", 0) <= resume_step]
        else:
            self.lines = lines[:kept]

    @staticmethod
    def read(path: str) -> list[str]:
        try:
            with open_file(path, "r") as handle:
                lines = [line.strip() for line in handle if line.strip()]
        except FileNotFoundError:
            return []
        kept = []
        for number, line in enumerate(lines, start=1):
            try:
                json.loads(line)
            except ValueError:
                logger.warning(
                    "%s: line %d is not complete JSON (an interrupted write); dropped", path, number
                )
                continue
            kept.append(line)
        return kept

    def __len__(self) -> int:
        return len(self.lines)

    def append(self, record: dict) -> None:
        self.lines.append(json.dumps(record, sort_keys=True))
        write_atomic(self.path, "".join(line + "\n" for line in self.lines).encode())


class RunLog:
    """metrics.jsonl (MetricsLog) + TensorBoard scalars + progress bar + the caller's
    `on_metrics` (chief only)."""

    def __init__(
        self,
        output: str,
        total_steps: int,
        kept_records: int | None,
        resume_step: int,
        enabled: bool,
        progress: bool,
        on_metrics,
    ):
        self.enabled, self.on_metrics = enabled, on_metrics
        self.path = join(output, "metrics.jsonl")
        self.metrics = None
        self.writer = None
        self.progbar, self.plain = None, False
        if not enabled:
            return
        self.metrics = MetricsLog(self.path, kept_records, resume_step)

        self.writer = ScalarWriter(join(output, "tensorboard"))
        # a terminal gets Keras' bar; a log file or pipe gets plain lines (no terminal codes)
        self.total_steps, self.plain = total_steps, progress and not sys.stdout.isatty()
        if progress and not self.plain:
            import keras  # heavy: Keras loads its backend; this module stays importable without it

            self.progbar = keras.utils.Progbar(
                total_steps, stateful_metrics=["loss", "mlm_acc", "sop_acc", "steps/s"]
            )

    def __len__(self) -> int:
        return len(self.metrics) if self.metrics is not None else 0

    def record(self, record: dict) -> None:
        if not self.enabled:
            return
        self.metrics.append(record)
        self.writer.write(
            record["step"],
            {
                f"{record['split']}/{name}": value
                for name, value in record.items()
                if name not in ("step", "split") and isinstance(value, (int, float))
            },
        )
        if self.on_metrics is not None:
            self.on_metrics(dict(record))

    def progress(self, step: int, metrics: dict, steps_per_second: float) -> None:
        if self.plain:
            logger.info(
                "step %d/%s: loss %.4f, mlm_acc %.4f, sop_acc %.4f, %.1f steps/s",
                step,
                self.total_steps or "?",
                metrics["loss"],
                metrics["masked_lm_accuracy"],
                metrics["sop_accuracy"],
                steps_per_second,
            )
        if self.progbar is not None:
            self.progbar.update(
                step,
                [
                    ("loss", metrics["loss"]),
                    ("mlm_acc", metrics["masked_lm_accuracy"]),
                    ("sop_acc", metrics["sop_accuracy"]),
                    ("steps/s", steps_per_second),
                ],
            )
