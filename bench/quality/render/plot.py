"""A time-to-quality study's loss curves (`bench.quality.render.report`): held-out and
training loss, mean over seeds, per mode, with the target. Matplotlib, no torch."""

from __future__ import annotations

from pathlib import Path

from matplotlib import ticker
from matplotlib.figure import Figure

from bench.ground import catalog
from bench.text import figures


def plot(s: dict, path: Path) -> None:
    curves = s["tables"]["curves"]
    fig = Figure(figsize=(10, 4.2))
    held, train = fig.subplots(1, 2)
    for mode, g in curves.groupby("mode", sort=False):
        mean = g.groupby("step")[["heldout_loss", "train_loss"]].mean()
        colour = catalog.CARDS[mode].colour if mode in catalog.CARDS else None
        held.plot(mean.index, mean["heldout_loss"], label=mode, color=colour)
        train.plot(mean.index, mean["train_loss"], label=mode, color=colour)
    for ax, title in ((held, "held-out loss"), (train, "training loss (running mean)")):
        ax.set_title(f"{title}, mean over seeds")
        ax.set_xlabel("step")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ticker.ScalarFormatter())  # 1.5, not 1.5×10⁰
        ax.yaxis.set_minor_formatter(ticker.ScalarFormatter())
    if s["target"] is not None:
        held.axhline(s["target"], color="black", linestyle=":", label="target")
    held.legend(fontsize=8)
    fig.tight_layout()
    figures.save(fig, path, dpi=100)
