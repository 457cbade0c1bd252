"""When a stage task is retried: transient failures (I/O, connection, preemption) with exponential
backoff; never bad input or configuration, never the environment refusing a write, never a bug.
"""

from __future__ import annotations

from typing import Any

from prefect.client.schemas.objects import TaskRun
from prefect.states import State
from prefect.tasks import Task, exponential_backoff

from albert.errors import WRITE_FAILURES, ConfigError, StageError

RETRIES = 2
RETRY_BACKOFF_SECONDS = 2.0

_PERMANENT_OS_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)
_TRANSIENT_ERROR_NAMES = frozenset(
    {
        # Google Cloud client libraries (GCS, Dataflow): the service is briefly unavailable.
        "google.api_core.exceptions.ServiceUnavailable",
        "google.api_core.exceptions.TooManyRequests",
        "google.api_core.exceptions.InternalServerError",
        "google.api_core.exceptions.DeadlineExceeded",
        # TensorFlow: a worker or TPU was preempted / a collective was aborted.
        "tensorflow.python.framework.errors_impl.UnavailableError",
        "tensorflow.python.framework.errors_impl.AbortedError",
        "tensorflow.python.framework.errors_impl.DeadlineExceededError",
    }
)


def is_transient_error(error: BaseException) -> bool:
    """Whether retrying may help: I/O and connection errors, timeouts, preemption; not bad input."""
    if isinstance(error, (StageError, ConfigError, _PERMANENT_OS_ERRORS)):
        return False
    if isinstance(error, OSError) and error.errno in WRITE_FAILURES:  # a full disk, read-only
        return False  # file system, quota: a retry seconds later meets the same refusal
    if isinstance(error, OSError):  # includes ConnectionError, TimeoutError, BrokenPipeError, EIO
        return True
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in type(error).__mro__}
    return not names.isdisjoint(_TRANSIENT_ERROR_NAMES)


def retry_if_transient(task: Task[..., Any], task_run: TaskRun, state: State) -> bool:
    """Prefect `retry_condition_fn`: retry a failed stage only when its error is transient."""
    try:
        state.result(raise_on_failure=True)
    except BaseException as error:  # noqa: BLE001  (classified, never swallowed: it stays failed)
        return is_transient_error(error)
    return False


def retry_options() -> dict[str, Any]:
    """The retry settings of a stage task (`prefect.task(**retry_options())`): up to `RETRIES`
    retries of a transient failure, `RETRY_BACKOFF_SECONDS` apart and doubling."""
    return {
        "retries": RETRIES,
        "retry_delay_seconds": exponential_backoff(RETRY_BACKOFF_SECONDS),
        "retry_condition_fn": retry_if_transient,
    }
