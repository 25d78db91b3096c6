"""Warnings of other packages that ampbench's own output leaves out, in one list (`KNOWN`), and
the switch that shows them again: the environment variable AMPBENCH_DEBUG=1.

Each is a known message of torch or torchao that tells a user of ampbench nothing they can act
on (a hint about a setting a mode sets on purpose, a deprecation inside the package itself), and
that would otherwise print once per step or hundreds of times per test session. A warning not
listed here shows as Python shows it. Installed by the command line at start (`bench.cli.main`,
which torchrun's ranks run too), by the numerics study's worker processes, and by the tests'
conftest (`pytest_filters`, for the pytest-benchmark suite). Needs no torch.
"""

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
