"""Warnings of other packages that ampbench's output leaves out (`KNOWN`: each tells a user
nothing to act on, and would print once per step), and AMPBENCH_DEBUG=1 to show them again.
Needs no torch."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

DEBUG_VAR = "AMPBENCH_DEBUG"
"""Environment variable: `1` shows every warning, these included."""


@dataclass(frozen=True)
class Known:
    category: type[Warning]
    message: str
    """A regular expression matched at the start of the message."""
    module: str
    """A regular expression matched at the start of the module the warning is attributed to (for
    a warning raised while Python compiles a file, its path without `.py`)."""


KNOWN = (
    # Inductor's hint when it compiles a float32 matmul with TF32 off: the fp32 mode keeps TF32
    # off on purpose (the tf32 mode is the one that turns it on).
    Known(
        UserWarning,
        r"TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled",
        r"torch\._inductor",
    ),
    # Inductor's autotuning reads storages through the deprecated TypedStorage.
    Known(UserWarning, r"TypedStorage is deprecated", r"torch"),
    # torch's own modules use script_method as they are imported.
    Known(DeprecationWarning, r"`torch\.jit\.script_method` is deprecated", r"torch"),
    # torchao's Float8Linear asks for the autocast dtype the old way, at every forward.
    Known(DeprecationWarning, r"torch\.get_autocast_gpu_dtype\(\) is deprecated", r"torchao"),
    # Escape sequences in torchao's docstrings, when Python first compiles its files.
    Known(SyntaxWarning, r"invalid escape sequence", r".*torchao"),
)


def debug() -> bool:
    """Whether AMPBENCH_DEBUG=1 asks for every warning."""
    return os.environ.get(DEBUG_VAR, "") == "1"


def quiet() -> None:
    """Leave the `KNOWN` warnings out of this process's output, unless AMPBENCH_DEBUG=1."""
    if debug():
        return
    for k in KNOWN:
        warnings.filterwarnings("ignore", message=k.message, category=k.category, module=k.module)


def pytest_filters() -> list[str]:
    """The `KNOWN` warnings as pytest's `filterwarnings` lines (pytest resets Python's filters
    in each test, so a test session takes them this way); none with AMPBENCH_DEBUG=1."""
    if debug():
        return []
    return [f"ignore:{k.message}:{k.category.__name__}:{k.module}" for k in KNOWN]
