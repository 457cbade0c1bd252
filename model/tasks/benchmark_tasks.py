"""The 12 benchmark tasks, one registration each: GLUE's nine, SQuAD v1.1 and v2.0, RACE. Their
defaults are Table 14 of the ALBERT paper; their metrics are the official ones
(`model.tasks.metrics`, imported when a task is scored: SciPy and scikit-learn stay out of the
encoding workers). Adding a benchmark task is one registration here."""

from __future__ import annotations

from albert.glue_tsv import LABELS, layout_for
from albert.race_json import ANSWER_LETTERS
from model.tasks import formats
from model.tasks.registry import TASKS
from model.tasks.task import Hyperparameters, Task


def accuracy(predictions, labels):
    from model.tasks import metrics

    return {"accuracy": metrics.accuracy(predictions, labels)}


def mcc_and_accuracy(predictions, labels):
    from model.tasks import metrics

    return {
        "mcc": metrics.matthews_corrcoef(predictions, labels),
        "accuracy": metrics.accuracy(predictions, labels),
    }


def f1_and_accuracy(predictions, labels):
    from model.tasks import metrics

    f1, acc = metrics.binary_f1(predictions, labels), metrics.accuracy(predictions, labels)
    return {"f1": f1, "accuracy": acc, "acc_and_f1": (f1 + acc) / 2}


def correlations(predictions, labels):
    from model.tasks import metrics

    p, s = metrics.pearson(predictions, labels), metrics.spearman(predictions, labels)
    return {"pearson": p, "spearman": s, "corr": (p + s) / 2}


def glue(name, directory, defaults, metrics, primary, dev=("dev.tsv",), dev_names=(), aliases=()):
    """A GLUE task: its labels as its files write them (`albert.glue_tsv.LABELS`; none: STS-B's
    score), a pair where its dev rows have a second text."""
    labels = LABELS[name]
    return TASKS.register(
        Task(
            name=name,
            kind="regression" if labels is None else "classification",
            num_labels=1 if labels is None else len(labels),
            defaults=defaults,
            metrics=metrics,
            primary_metric=primary,
            format=formats.GLUE,
            train_file="train.tsv",
            dev_files=dev,
            directory=directory,
            dev_names=dev_names,
            labels=None if labels is None else tuple(labels),
            texts=1 if layout_for(name, "dev").text_b is None else 2,
        ),
        aliases,
    )


def squad(version, defaults, aliases, unanswerable=False):
    """SQuAD v1.1 or v2.0 (`unanswerable`: questions without an answer): scored on its decoded
    answers by the official scripts (`model.finetune.squad`)."""
    return TASKS.register(
        Task(
            name=f"squad{version[0]}",
            kind="span",
            num_labels=2,
            defaults=defaults,
            metrics=None,
            primary_metric="f1",
            format=formats.SQUAD,
            train_file=f"train-v{version}.json",
            dev_files=(f"dev-v{version}.json",),
            directory="squad",
            unanswerable=unanswerable,
        ),
        aliases,
    )


H = Hyperparameters  # (learning rate, batch, classifier dropout, steps, warmup, length)
glue("cola", "CoLA", H(1e-5, 16, 0.0, 5336, 320, 512), mcc_and_accuracy, "mcc")
glue("sst2", "SST-2", H(1e-5, 32, 0.0, 20935, 1256, 512), accuracy, "accuracy", aliases=("sst",))
glue("mrpc", "MRPC", H(2e-5, 32, 0.0, 800, 200, 512), f1_and_accuracy, "f1")
glue("stsb", "STS-B", H(5e-5, 16, 0.0, 3598, 214, 512), correlations, "pearson", aliases=("sts",))
glue("qqp", "QQP", H(5e-5, 128, 0.1, 14000, 1000, 512), f1_and_accuracy, "f1")
glue(
    "mnli",
    "MNLI",
    H(3e-5, 128, 0.0, 10000, 1000, 512),
    accuracy,
    "accuracy",
    ("dev_matched.tsv", "dev_mismatched.tsv"),
    ("MNLI-m", "MNLI-mm"),
    aliases=("mnli-m",),
)
glue("qnli", "QNLI", H(1e-5, 32, 0.0, 33112, 1986, 512), accuracy, "accuracy")
glue("rte", "RTE", H(3e-5, 32, 0.1, 800, 200, 512), accuracy, "accuracy")
glue("wnli", "WNLI", H(2e-5, 16, 0.1, 2000, 250, 512), accuracy, "accuracy")
squad("1.1", H(5e-5, 48, 0.0, 3649, 365, 384), aliases=("squad", "squadv1", "squad11"))
squad("2.0", H(3e-5, 48, 0.0, 8144, 814, 512), aliases=("squadv2", "squad20"), unanswerable=True)
TASKS.register(
    Task(
        name="race",
        kind="multiple_choice",
        num_labels=4,
        defaults=H(1e-5, 32, 0.1, 12000, 1000, 512),
        metrics=None,  # accuracy overall and per level (model.finetune.race)
        primary_metric="accuracy",
        format=formats.RACE,
        train_file="train",
        dev_files=("dev",),
        directory="RACE",
        labels=tuple(ANSWER_LETTERS[:4]),
    )
)
