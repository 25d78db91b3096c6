"""The numerics report's figures, from its tables; one whose table is empty is not drawn."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on GPU boxes or CI
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bench.ground.catalog import colour as mode_colour
from bench.ground.catalog import fp16_pair, reference
from bench.numerics.analysis.runs import sparse_parameters
from bench.numerics.analysis.summary import SMOOTH_STEPS, smoothed
from bench.numerics.measure import fp16
from bench.numerics.measure.tables import POOLED
from bench.text import figures

LINESTYLES = ("-", "--", ":", "-.")
"""Runs of one mode (batch sizes, seeds) share its colour and differ by line style."""


def _save(fig: plt.Figure, path: Path) -> None:
    fig.tight_layout()
    figures.save(fig, path, dpi=110)


def histogram(hist: pd.DataFrame, path: Path) -> None:
    """log2|g| of fp32's activation gradients per checkpoint, float16's limits marked."""
    if hist.empty:
        return
    scaled, _ = fp16_pair()  # the census trajectory's mode, whose scale the histogram shows
    steps = sorted(hist["step"].unique())
    # Folders older than the module column hold the pooled gradients only ("").
    pooled = hist["module"].isin(["", POOLED])
    panels = [("every observed output", hist[pooled])]
    for module, rows in hist[~pooled].groupby("module", sort=False):
        panels.append((f"logits ({module} output)", rows))
    fig, axes = plt.subplots(
        len(steps), len(panels), figsize=(9 * len(panels), 3.2 * len(steps)), squeeze=False
    )
    for row, step in zip(axes, steps, strict=True):
        for ax, (what, rows) in zip(row, panels, strict=True):
            h = rows[(rows["step"] == step) & (rows["bin"] != "zero")]
            zero = rows[(rows["step"] == step) & (rows["bin"] == "zero")]["share"].sum()
            scale = float(h["loss_scale"].iloc[0]) if len(h) else 1.0
            shift = math.log2(scale)
            ax.bar(
                h["log2_lo"],
                h["share"],
                width=1.0,
                align="edge",
                color=mode_colour(reference()),
                label="fp32 reference, unscaled",
            )
            ax.step(
                h["log2_lo"] + shift,
                h["share"],
                where="post",
                color=mode_colour(scaled),
                label=f"× loss scale {scale:g} ({scaled}'s GradScaler)",
            )
            for x, label, style in (
                (fp16.SMALLEST_SUBNORMAL_LOG2, "2^-24 fp16 min subnormal", ":"),
                (fp16.SMALLEST_NORMAL_LOG2, "2^-14 fp16 min normal", "--"),
                (math.log2(fp16.MAX), "65504 fp16 max", "-."),
            ):
                ax.axvline(x, color="k", linestyle=style, linewidth=1, label=label)
            title = (
                f"batch {int(h['batch_size'].iloc[0])}, step {step}" if len(h) else f"step {step}"
            )
            suffix = f": {what}" if len(panels) > 1 else ""
            ax.set_title(f"{title}{suffix}: {zero:.1%} of values are exactly zero (not shown)")
            ax.set_xlabel("log2 |gradient|")
            ax.set_ylabel("share of values")
            ax.legend(fontsize=7, loc="upper left")
    _save(fig, path)


def loss_curves(steps: pd.DataFrame, horizon: int, path: Path) -> None:
    """Training loss (rolling mean, averaged over seeds) per mode, one panel per batch size."""
    if steps.empty:
        return
    sizes = sorted(steps["batch_size"].unique())
    fig, axes = plt.subplots(1, len(sizes), figsize=(6.5 * len(sizes), 4), squeeze=False)
    for ax, bs in zip(axes[0], sizes, strict=True):
        d = steps[(steps["batch_size"] == bs) & (steps["step"] < horizon)].copy()
        d["smooth"] = smoothed(d)
        for mode, g in d.groupby("mode", sort=False):
            mean = g.groupby("step")["smooth"].mean()
            ax.plot(mean.index, mean.to_numpy(), label=mode, color=mode_colour(mode), linewidth=1.2)
        ax.set_yscale("log")
        ax.set_title(f"batch {bs}: training loss ({SMOOTH_STEPS}-step mean, mean over seeds)")
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy")
        ax.legend(fontsize=8)
    _save(fig, path)


def scale(steps: pd.DataFrame, path: Path) -> None:
    """GradScaler's scale per step of every run that scales the loss."""
    if steps.empty:
        return
    d = steps.dropna(subset=["scale"])  # a mode that does not scale has no scale
    fig, ax = plt.subplots(figsize=(9, 3.5))
    for i, ((mode, bs, seed), g) in enumerate(d.groupby(["mode", "batch_size", "seed"])):
        ax.plot(
            g["step"],
            g["scale"],
            label=f"{mode}, batch {bs}, seed {seed}",
            color=mode_colour(mode),
            linestyle=LINESTYLES[i % len(LINESTYLES)],
            linewidth=1.2,
        )
    ax.set_yscale("log", base=2)
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale")
    ax.set_title(
        "GradScaler scale per step (halves after a skipped step, doubles after 2000 clean)"
    )
    if len(d):
        ax.legend(fontsize=8)
    _save(fig, path)


TRACE_PANELS = (
    ("grad_zero_share", "max", "share of param.grad exactly zero (max over parameters)", "linear"),
    ("exp_avg_sq_median", "min", "median Adam exp_avg_sq (min over parameters)", "log"),
    ("update_rms_ratio", "max", "RMS(update) / RMS(weights) (max over parameters)", "log"),
    ("loss", "first", "training loss at the traced step", "log"),
)
"""The rows of the traces figure: column, how the parameters are folded, title, y scale."""


def traces(tr: pd.DataFrame, path: Path) -> None:
    """The traces (`TRACE_PANELS`) per batch size, a colour per mode, a style per seed."""
    if tr.empty:
        return
    tr = tr[~tr["module"].isin(sparse_parameters(tr))]
    sizes = sorted(tr["batch_size"].unique())
    fig, axes = plt.subplots(
        len(TRACE_PANELS),
        len(sizes),
        figsize=(6.5 * len(sizes), 2.6 * len(TRACE_PANELS)),
        squeeze=False,
        sharex="col",
    )
    for col, bs in enumerate(sizes):
        d = tr[tr["batch_size"] == bs]
        for (mode, seed), g in d.groupby(["mode", "seed"], sort=False):
            seeds = sorted(d[d["mode"] == mode]["seed"].unique())
            style = LINESTYLES[seeds.index(seed) % len(LINESTYLES)]
            for row, (column, fold, _, _) in enumerate(TRACE_PANELS):
                values = g.groupby("step")[column].agg(fold)
                axes[row, col].plot(
                    values.index,
                    values.to_numpy(float),
                    color=mode_colour(mode),
                    linestyle=style,
                    linewidth=1.0,
                    label=f"{mode}, seed {seed}",
                )
        for row, (_, _, title, yscale) in enumerate(TRACE_PANELS):
            ax = axes[row, col]
            # A panel with nothing above zero (a second moment that stays 0) has no log scale.
            positive = any((np.asarray(ln.get_ydata(), float) > 0).any() for ln in ax.get_lines())
            ax.set_yscale(yscale if yscale != "log" or positive else "linear")
            ax.set_title(f"batch {bs}: {title}", fontsize=9)
        axes[-1, col].set_xlabel("step")
        # Two columns past 16 runs: a one-column legend that long spills over the panel below.
        runs = d.groupby(["mode", "seed"]).ngroups
        axes[0, col].legend(fontsize=7, ncol=2 if runs > 16 else 1)
    _save(fig, path)
