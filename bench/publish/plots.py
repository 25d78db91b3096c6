"""Figures of a timing run, drawn with matplotlib from its DataFrame alone: throughput.png,
phases.png, floor.png and memory.png, a panel per combination of the other swept axes, each mode
in its card's colour (`bench.ground.catalog`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on GPU boxes or CI
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import EngFormatter

from bench.ground.catalog import colour as mode_colour
from bench.ground.catalog import speedup_baselines
from bench.store import results
from bench.text import figures
from bench.text.tables import finite

FILES = {name: f"{name}.png" for name in ("throughput", "phases", "floor", "memory")}
"""Figure name -> file name in the run folder."""
PHASE_STYLES = {"fwd": (1.0, ""), "bwd": (0.6, "//"), "step": (0.3, "xx")}
"""Each timed phase (`bench.store.results.PHASES`) -> (opacity, hatch) of its part of a bar."""
PHASE_PARTS = {
    # column: (legend name, opacity, hatch)
    f"{phase}_ms": (name, *PHASE_STYLES[phase])
    for phase, name in results.PHASES.items()
}
WHOLE_STEP = ("whole step (phases fused, timed together)", 0.8, "..")
MEMORY_PARTS = {
    "param_gib": ("parameters", 1.0, ""),
    "grad_gib": ("gradients", 0.6, "//"),
    "optim_state_gib": ("optimizer state", 0.35, "xx"),
    "act_gib": ("saved by forward", 0.15, ".."),
}
DPI = 100
BAR_EDGE = {"edgecolor": "black", "linewidth": 0.4}


def panel_axes(df: pd.DataFrame) -> list[str]:
    """The axes other than mode and batch size that vary: a panel per combination of values."""
    return [
        a
        for a in results.axes()
        if a not in ("mode", "batch_size") and a in df and df[a].nunique(dropna=False) > 1
    ]


def _panels(df: pd.DataFrame, *, by_batch: bool = False) -> list[tuple[str, pd.DataFrame]]:
    """(title, rows) per panel: per combination of varying axes (`by_batch`: per batch first)."""
    keys = (["batch_size"] if by_batch else []) + panel_axes(df)
    if not keys:
        return [("", df)]
    if by_batch:
        df = df.sort_values("batch_size", kind="stable")
    out = []
    # In the run's order (eager before the variants, the grid's optimizer order), not sorted.
    for values, group in df.groupby(keys, sort=False):
        named = zip(keys, values if isinstance(values, tuple) else (values,), strict=True)
        out.append((", ".join(f"{k.replace('_', ' ')} {v}" for k, v in named), group))
    return out


def _save(fig: Figure, handles: list, path: Path) -> None:
    """One legend for the whole figure, below the panels (the title is above them); written."""
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), fontsize=8)
    figures.save(fig, path, dpi=DPI)


def _mode_handles(modes: list[str]) -> list[Patch]:
    return [Patch(facecolor=mode_colour(m), label=m) for m in modes]


def _parts_handles(parts: list[tuple[str, float, str]], marker: str | None) -> list:
    """The stacked parts in a neutral grey (the colour of a bar says its mode, as its tick does)."""
    handles: list = [
        Patch(facecolor=(0.45, 0.45, 0.45, alpha), hatch=hatch, edgecolor="black", label=name)
        for name, alpha, hatch in parts
    ]
    if marker:
        handles.append(
            Line2D([], [], marker="<", color="black", linestyle="", markersize=6, label=marker)
        )
    return handles


def _modes(df: pd.DataFrame) -> list[str]:
    """Modes in the order the run lists them (the mode table's order, as the tables show)."""
    return list(dict.fromkeys(df["mode"]))


def _grouped_bars(
    ax: Axes, g: pd.DataFrame, column: str, label: Callable[[pd.Series], str] | None = None
) -> None:
    """One bar per mode within each batch-size group, `label(row)` above each."""
    sizes = sorted(g["batch_size"].unique())
    modes = _modes(g)
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        for j, bs in enumerate(sizes):
            rows = g[(g["mode"] == mode) & (g["batch_size"] == bs)]
            if rows.empty or not finite(rows[column].iloc[0]):
                continue
            r = rows.iloc[0]
            x = j + (i - (len(modes) - 1) / 2) * width
            ax.bar(x, r[column], width, color=mode_colour(mode))
            text = label(r) if label else ""
            if text:
                ax.text(x, r[column], text, ha="center", va="bottom", fontsize=6.5)
    ax.set_xticks(range(len(sizes)), [str(b) for b in sizes])
    ax.set_xlabel("batch size")


def _speedups(r: pd.Series) -> str:
    return "\n".join(
        f"{r[column]:.3g}× {base}"
        for base, column in results.SPEEDUP_COLUMNS.items()
        if r["mode"] != base and finite(r.get(column))
    )


def throughput(df: pd.DataFrame, path: Path) -> None:
    """Samples/s per mode, grouped by batch size, with the speedups over the speedup baselines."""
    panels = _panels(df)
    # One panel to a row: each bar needs the width of its speedups written above it.
    fig, axes = figures.panels(
        len(panels),
        "Throughput per mode (median step); above each bar its speedup over "
        + " and ".join(speedup_baselines()),
        width=12.0,
        height=4.2,
        cols=1,
        sharey=True,  # panels compare at a glance: one scale for all
    )
    top = 1.25 * float(df["samples_per_s"].max())  # room for the speedups above the bars
    for ax, (title, g) in zip(axes, panels, strict=True):
        _grouped_bars(ax, g, "samples_per_s", _speedups)
        ax.set_ylabel("samples/s")
        ax.yaxis.set_major_formatter(EngFormatter(sep=" "))
        if finite(top) and top > 0:  # none measured (a loop that gave no batch size): no bars
            ax.set_ylim(0, top)
        ax.set_title(title, fontsize=10)
    _save(fig, _mode_handles(_modes(df)), path)


def floor_share(df: pd.DataFrame, path: Path) -> None:
    """pct_of_floor per mode and batch size; 100% would be the floor itself."""
    panels = _panels(df)
    fig, axes = figures.panels(
        len(panels), "Share of floor: the floor from measured ceilings over the step time"
    )
    top = max(100.0, float(df["pct_of_floor"].max()))
    for ax, (title, g) in zip(axes, panels, strict=True):
        _grouped_bars(ax, g, "pct_of_floor", lambda r: f"{r['pct_of_floor']:.1f}%")
        ax.axhline(100, color="black", linewidth=0.8, linestyle="--")
        ax.set_ylabel("% of floor (100 = at the floor)")
        ax.set_ylim(0, top * 1.15)
        ax.set_title(title, fontsize=10)
    _save(fig, _mode_handles(_modes(df)), path)


def _stack(
    ax: Axes,
    x: float,
    r: pd.Series,
    parts: dict[str, tuple[str, float, str]],
) -> float:
    """Stack the row's finite `parts` at `x` in the mode's colour; returns the top."""
    bottom = 0.0
    for key, (_, alpha, hatch) in parts.items():
        value = r.get(key)
        if not finite(value):
            continue
        ax.bar(x, value, 0.6, bottom=bottom, color=mode_colour(r["mode"]), alpha=alpha, **BAR_EDGE)
        ax.bar(x, value, 0.6, bottom=bottom, fill=False, hatch=hatch, **BAR_EDGE)
        bottom += value
    return bottom


def _mark(ax: Axes, x: int, value: float) -> None:
    """A reference value (the floor, the measured peak) as a marker beside the bar at `x`."""
    ax.plot([x + 0.36], [value], marker="<", color="black", markersize=6)


def _finish_panel(ax: Axes, modes: list[str], ylabel: str, title: str) -> None:
    """One panel of stacked bars per mode: mode-coloured ticks, labels, room above the bars."""
    ax.set_xticks(range(len(modes)), modes, rotation=20, fontsize=7)
    for tick, mode in zip(ax.get_xticklabels(), modes, strict=True):
        tick.set_color(mode_colour(mode))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.margins(y=0.15)
    ax.set_ylim(bottom=0)


def phases(df: pd.DataFrame, path: Path) -> None:
    """Forward, backward and optimizer ms per mode, stacked, with the floor beside each bar."""
    panels = _panels(df, by_batch=True)
    fig, axes = figures.panels(
        len(panels), "Time per phase (median ms), with the floor from measured ceilings"
    )
    fused = False
    for ax, (title, g) in zip(axes, panels, strict=True):
        modes = _modes(g)
        for i, mode in enumerate(modes):
            r = g[g["mode"] == mode].iloc[0]
            if any(finite(r.get(k)) for k in PHASE_PARTS):
                top = _stack(ax, i, r, PHASE_PARTS)
            else:  # the variant fused the phases: only the whole step was timed
                top = _stack(ax, i, r, {"total_ms": WHOLE_STEP})
                fused = True
            if finite(r.get("floor_ms")):
                _mark(ax, i, r["floor_ms"])
            ax.text(i, top, f"{top:.3g}", ha="center", va="bottom", fontsize=7)
        _finish_panel(ax, modes, "ms per step", title)
    parts = [*PHASE_PARTS.values(), *([WHOLE_STEP] if fused else [])]
    _save(fig, _parts_handles(parts, "floor (measured ceilings)"), path)


def memory(df: pd.DataFrame, path: Path) -> None:
    """Memory per mode, stacked by part, with the measured peak where the device reports one."""
    panels = _panels(df, by_batch=True)
    peaks = bool(df["peak_alloc_gib"].map(finite).any())
    title = "Memory per mode (GiB) by what holds it" + (
        ", with the measured peak" if peaks else "; peak not measured on this device"
    )
    fig, axes = figures.panels(len(panels), title)
    for ax, (name, g) in zip(axes, panels, strict=True):
        modes = _modes(g)
        for i, mode in enumerate(modes):
            r = g[g["mode"] == mode].iloc[0]
            top = _stack(ax, i, r, MEMORY_PARTS)
            if finite(r.get("peak_alloc_gib")):
                _mark(ax, i, r["peak_alloc_gib"])
            if top > 0:  # a folder older than the breakdown has only the peak
                ax.text(i, top, f"{top:.3g}", ha="center", va="bottom", fontsize=7)
        _finish_panel(ax, modes, "GiB (2^30 bytes)", name)
    drawn = [p for k, p in MEMORY_PARTS.items() if k in df and df[k].map(finite).any()]
    _save(fig, _parts_handles(drawn, "measured peak" if peaks else None), path)


DRAW = {"throughput": throughput, "phases": phases, "floor": floor_share, "memory": memory}


def write_all(df: pd.DataFrame, run_dir: Path) -> dict[str, str]:
    """Every figure of a run from its passing rows; returns {figure: file name} of those drawn.
    A figure an earlier rendering left is removed: it must not outlive the rows it showed."""
    ok = df[df["status"] == "ok"]
    for name, file in FILES.items():
        if ok.empty:
            (run_dir / file).unlink(missing_ok=True)
        else:
            DRAW[name](ok, run_dir / file)
    return {} if ok.empty else dict(FILES)
