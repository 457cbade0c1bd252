"""What went wrong, in one line: StageError for bad input, and the mapping of any failure to
`PATH: REASON` and an exit code (2: bad input, configuration or environment; 1: a bug of ours).

The bottom of the `albert/` chain (errors <- fs <- locks <- outputs): it imports nothing of ours.
Our own checks raise StageError (bad input) or ConfigError (a bad setting); a library error with a
known meaning is turned into StageError where it is raised (`naming`), or is an OSError that names
the file the operating system refused (not found, permission denied, disk full ...). Anything else,
a ValueError from our code included, is an internal error: exit 1, never the user's fault.
"""

from __future__ import annotations

import contextlib
import errno
import re
from collections.abc import Iterator

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1
EXIT_INTERRUPTED = 75
"""A run stopped by SIGTERM or SIGINT after saving its work (sysexits' EX_TEMPFAIL: the same
command, run again, continues it). Distinct from a failure (1, 2) and from a death by a signal
(128 + N), so that a scheduler's restart policy can tell a preemption from an error."""


class StageError(RuntimeError):
    """Bad input or a failed stage; the message names the file or record and the reason."""


class NothingNew(StageError):
    """Segment left no document, and some were near-copies of its reference corpus
    (`--near-dup-reference`): the input holds nothing the reference does not (a model line's night
    answers 'nothing new')."""


class Interrupted(BaseException):
    """A run stopped by a signal once its work was saved; the message says where (e.g. `SIGTERM at
    step 37: saved OUTPUT/checkpoints/ckpt-000000037`). A BaseException, as KeyboardInterrupt is:
    no `except Exception` takes it for a failure (retries, error reports)."""


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message names each offending field."""


USER_ERRORS: tuple[type[BaseException], ...] = (StageError, ConfigError)
"""Errors that mean bad input or configuration (exit 2), with an OSError that names its file."""

WRITE_FAILURES = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
}
"""The environment's refusals of a write (errno -> reason): bad environment (exit 2), never ours,
wherever they are raised (a write, flush or close without a path, a background thread)."""

_BEAM_STEP = re.compile(r"\s*\[while running '[^']*'\]")
# a library's colours (Keras: bold names), also as a KeyError's repr spells them
_TERMINAL_CODE = re.compile(r"(?:\x1b|\\x1b)\[[0-9;]*[A-Za-z]")
_OUR_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(StageError|ConfigError): (.+)$", re.MULTILINE)


def _strip_beam_steps(text: str) -> str:
    """`text` without Beam's `[while running ...]` steps and terminal codes."""
    return _TERMINAL_CODE.sub("", _BEAM_STEP.sub("", text)).strip()


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error` and the errors it was raised from / during, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )


def refused_write(error: BaseException) -> OSError | None:
    """The environment's refusal of a write in `error`'s chain (`WRITE_FAILURES`), the one naming
    its path first."""
    refused = [e for e in _chain(error) if isinstance(e, OSError) and e.errno in WRITE_FAILURES]
    named = [e for e in refused if e.filename is not None]
    return (named or refused or [None])[0]


def describe_error(error: BaseException) -> tuple[str, int]:
    """(one-line `PATH: REASON`, exit code) of a failure, whatever raised it.

    The innermost StageError/ConfigError wins, whether it is in the exception chain or only in the
    text of an error a Beam worker sent back; an OSError naming its file is the environment's
    answer about that file, and a refused write (disk full, permission denied, read-only file
    system: `WRITE_FAILURES`) anywhere in the chain is too (`naming_writes` adds the path where
    the write did not name it); any other error is internal: its type and its message's first line.
    """
    ours = [e for e in _chain(error) if isinstance(e, USER_ERRORS)]
    text = str(ours[-1] if ours else error)
    quoted = _OUR_ERROR_LINE.findall(text)
    if quoted:  # a worker's traceback as text: its last StageError line is the root cause
        return _strip_beam_steps(quoted[-1][1]), EXIT_USER_ERROR
    if ours:
        return _strip_beam_steps(text), EXIT_USER_ERROR
    refused = refused_write(error)
    if refused is not None:
        where = refused.filename if refused.filename is not None else "a write"
        return f"{where}: {refused.strerror or WRITE_FAILURES[refused.errno]}", EXIT_USER_ERROR
    if isinstance(error, OSError) and error.filename is not None:
        reason = error.strerror or _first_line(_strip_beam_steps(str(error)))
        return f"{error.filename}: {reason}", EXIT_USER_ERROR
    reason = _first_line(_strip_beam_steps(text)) or "(no message)"
    return f"internal error: {type(error).__name__}: {reason}", EXIT_INTERNAL_ERROR


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """Turn a library's ValueError/OSError while reading `path` into StageError `PATH: REASON`."""
    try:
        yield
    except StageError:
        raise
    except (ValueError, OSError) as error:
        reason = _first_line(str(error)) or type(error).__name__
        raise StageError(
            reason if reason.startswith(f"{path}:") else f"{path}: {reason}"
        ) from error


@contextlib.contextmanager
def naming_writes(path: str) -> Iterator[None]:
    """A write under `path` that the environment refuses without naming a file (a write, flush or
    close: disk full, permission denied, read-only file system) is raised naming `path`, also
    where it is the cause of another error (a Beam step's, a background thread's)."""
    try:
        yield
    except Exception as error:  # the refusal, or an error raised from it (Beam, a thread)
        for cause in _chain(error):
            if isinstance(cause, OSError) and cause.errno in WRITE_FAILURES:
                cause.filename = path if cause.filename is None else cause.filename
        raise
