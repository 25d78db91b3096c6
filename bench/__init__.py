"""ampbench: a benchmark harness for PyTorch mixed-precision training. `bench.load(run_dir)`
gives a run's rows as a DataFrame; `bench.probe(model, optimizer)` measures a user's own loop."""

from __future__ import annotations

__all__ = ["load", "load_samples", "probe"]


def __getattr__(name: str) -> object:
    # `bench.load` imports pandas when first used, not with the package: the command line
    # (`python -m bench --help`) imports this package and must answer at once.
    if name == "probe":
        from bench.ownloop.probe import probe  # torch: on first use, not with the package

        return probe
    if name in __all__:
        from bench.store import results  # pandas: on first use, not with the package

        return getattr(results, name)
    raise AttributeError(f"module 'bench' has no attribute {name!r}")
