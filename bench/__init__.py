"""ampbench: a benchmark harness for PyTorch mixed-precision training.

`bench.load(run_dir)` returns a run's rows as a pandas DataFrame; `python -m bench --help` lists
the commands.
"""

from __future__ import annotations

__all__ = ["load", "load_samples"]


def __getattr__(name: str) -> object:
    # Imported on first use, not here: bench.results imports bench.case and, through it, torch,
    # and the torch-free parts of the package (a numerics report) must import without it.
    if name in __all__:
        from bench import results

        return getattr(results, name)
    raise AttributeError(f"module 'bench' has no attribute {name!r}")
