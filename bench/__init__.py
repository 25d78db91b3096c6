"""ampbench: a benchmark harness for PyTorch mixed-precision training.

`bench.load(run_dir)` returns a run's rows as a pandas DataFrame; `python -m bench --help` lists
the commands.
"""

from bench.results import load, load_samples

__all__ = ["load", "load_samples"]
