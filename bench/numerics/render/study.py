"""A numerics study's folder rendered (figures and report.md, no torch)."""

from __future__ import annotations

from pathlib import Path

from bench.numerics.measure import tables
from bench.numerics.render import plots, report


def render(run_dir: Path) -> Path:
    """The figures and report.md of a finished study; returns the report's path."""
    tables.compact(run_dir)
    t = tables.load(run_dir)
    steps = t["steps"]
    plots.histogram(t["histogram"], run_dir / "histogram.png")
    if not steps.empty:
        cfg = t["env"].get("numerics_config", {})
        horizon = int(cfg["steps"]) if "steps" in cfg else int(steps["step"].max()) + 1
        plots.loss_curves(steps, horizon, run_dir / "loss_curves.png")
        plots.scale(steps, run_dir / "scale.png")
    plots.traces(t["traces"], run_dir / "traces.png")
    path = run_dir / tables.REPORT
    path.write_text(report.render(t))
    return path
