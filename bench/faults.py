"""How ampbench names what went wrong: bad input (one line, exit status 2) and a case's fault
(a status in its row, its full traceback kept in the folder, and the run goes on; under
`--debug` the fault is raised instead)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path


class UsageError(Exception):
    """Bad input or an unusable folder: reported as one line naming the value, exit status 2."""


class Unsupported(Exception):
    """A combination this machine cannot run, found only when it was tried (a backend without a
    dtype's collectives): the case's row is `unsupported`, its error the message."""


class Nonfinite(RuntimeError):
    """An expected numerical outcome found while running (no step that applied its update to
    time, say): the row's status is `nonfinite`, its error the message."""


def error_summary(exc: BaseException, limit: int = 500) -> str:
    """`Type: first line of the message`, the one line a row or a log keeps of an exception;
    for `Unsupported`, the message alone (the reason, as every unsupported row gives it)."""
    first_line = (str(exc).splitlines() or [""])[0]
    if isinstance(exc, (Unsupported, Nonfinite)):
        return first_line[:limit]
    return f"{type(exc).__name__}: {first_line}"[:limit]


def fault_status(exc: BaseException) -> str:
    """`oom` for an out-of-memory error on any device, `timeout` for a collective that timed
    out (gloo raises `RuntimeError: ... Timed out waiting ...`; NCCL's watchdog reports a
    `DistBackendError` naming the timeout), `unsupported` for `Unsupported`, `nonfinite` for
    `Nonfinite`, `error` for anything else.

    A CPU allocation failure surfaces as a plain `RuntimeError` ("DefaultCPUAllocator: can't
    allocate memory") or as Python's `MemoryError`; CUDA's as `torch.cuda.OutOfMemoryError`.
    """
    import torch  # here, not at the top: report code imports this module without torch

    if isinstance(exc, Unsupported):
        return "unsupported"
    if isinstance(exc, Nonfinite):
        return "nonfinite"
    if isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)):
        return "oom"
    text = str(exc)
    if isinstance(exc, RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text.lower()
    ):
        return "oom"
    if isinstance(exc, RuntimeError) and ("timed out" in text.lower() or "timeout" in text.lower()):
        return "timeout"
    return "error"


DEBUG_VAR = "AMPBENCH_DEBUG"
"""Environment variable set (to 1) by `--debug` for the command's run, worker processes and
ranks included: a case's exception is raised rather than recorded (`fault`), and whatever would
filter third-party warnings leaves them shown (`debugging`)."""


def debugging() -> bool:
    """Whether `--debug` (or AMPBENCH_DEBUG=1 in the environment) is on."""
    return os.environ.get(DEBUG_VAR, "") not in ("", "0")


@contextlib.contextmanager
def debug(on: bool) -> Iterator[None]:
    """`--debug` for the duration of one command: AMPBENCH_DEBUG=1 while it runs (inherited by
    the processes it starts), as it was afterwards."""
    if not on:
        yield
        return
    before = os.environ.get(DEBUG_VAR)
    os.environ[DEBUG_VAR] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DEBUG_VAR, None)
        else:
            os.environ[DEBUG_VAR] = before


TRACEBACK_TEXT = "traceback_text"
"""A row's key for its fault's full traceback while the row is in memory; the job that writes the
row saves the text in its folder and puts the file's path in the row's `traceback` column
instead (`bench.store.errors.keep`)."""

EXPECTED = ("oom", "unsupported", "nonfinite")
"""Statuses that are findings rather than bugs: `--debug` records them as usual (a largest-batch
search stops at an out-of-memory error by design)."""


def fault(exc: BaseException, *, prefix: str = "") -> dict[str, str]:
    """The columns an exception gives the row of the case (trial, job, audited mode) it ended:
    `status`, `error` (one line, after `prefix`) and its full traceback (`TRACEBACK_TEXT`). The
    one place a caught fault becomes data: under `--debug` an exception whose status is not
    `EXPECTED` is raised again here, so that it ends the command with its traceback (and pdb's
    post-mortem sees its frames)."""
    status = fault_status(exc)
    if debugging() and status not in EXPECTED:
        raise exc
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"status": status, "error": prefix + error_summary(exc), TRACEBACK_TEXT: text}


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM: `Terminated`) during a job: the message says what was kept and the
    command that goes on; `folder` is the folder the job was writing (its command renders what
    is there), `status` the exit status (130 after Ctrl-C, 143 after SIGTERM)."""

    def __init__(self, message: str, *, folder: Path | None = None, status: int = 130) -> None:
        super().__init__(message)
        self.folder, self.status = folder, status


class Terminated(KeyboardInterrupt):
    """SIGTERM (an outer `timeout`, a scheduler ending the job), raised in the main thread by
    the handler `stop_on_sigterm` installs: a KeyboardInterrupt, so that a job stops as on
    Ctrl-C, keeping what it finished."""


def how_stopped(exc: KeyboardInterrupt) -> tuple[str, int]:
    """What stopped a job, in words, and the exit status it ends with: SIGTERM (143) or Ctrl-C
    (130)."""
    return ("stopped (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted", 130)


def stop_on_sigterm() -> object:
    """From now on SIGTERM raises `Terminated` in this process (the command line installs it at
    start; a launcher that must pass the signal on sets its own meanwhile). Returns the handler
    it replaced, for `signal.signal` to put back; None, changing nothing, outside the main
    thread (where Python cannot set one)."""

    def handler(signum: int, frame: object) -> None:
        raise Terminated

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, handler)


def by_reason(reasons: dict[str, str]) -> str:
    """Names grouped by why they cannot run: `fp8-tensorwise, fp8-rowwise: float8 matmuls need
    a CUDA GPU ...; bf16-pure-sr: needs torchao ...`."""
    return "; ".join(
        f"{', '.join(n for n, r in reasons.items() if r == reason)}: {reason}"
        for reason in dict.fromkeys(reasons.values())
    )
