"""Step time and peak memory across revisions, per GPU model (`python -m bench history`): writes
results/history/<gpu-slug>.md and its figures, each case judged against the revision before by
`bench.verdicts.history_points`."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on GPU boxes or CI
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from bench.faults import UsageError
from bench.ground.catalog import colour as mode_colour
from bench.store import paths, results
from bench.store.folders import gpu_slug
from bench.store.tree import HISTORY_DIR
from bench.text import figures, tables
from bench.verdicts import (
    defaults,  # the verdicts' MIN_EFFECT and CONFIDENCE
    memory,
)
from bench.verdicts.history_points import collect, gpu_models

VERDICT_MARKERS = {
    # verdict: (marker, size, legend text)
    "slower": ("^", 11, "slower than the revision before"),
    "faster": ("v", 9, "faster than the revision before"),
    "same": ("o", 5, f"same (within ±{defaults.MIN_EFFECT:.0%})"),
    "unclear": ("o", 7, "unclear or too few rounds (hollow)"),
    "missing": ("x", 7, "missing (did not pass in one revision)"),
    "first": ("s", 5, "first revision of the case"),
}
LINESTYLES = ("-", "--", ":", "-.")
MEMORY_MARKERS = {"more memory": ("^", 11), "less memory": ("v", 9)}
"""Memory verdicts the memory figure marks (marker, size); the others are plain points."""


def _case_axes(points: pd.DataFrame) -> list[str]:
    """The axes that tell one mode's cases apart in this history (batch size always)."""
    return [
        a for a in results.axes() if a != "mode" and (a == "batch_size" or points[a].nunique() > 1)
    ]


def _cell(p: pd.Series) -> str:
    """The step time and its verdict, then the peak memory and its verdict where measured."""
    return _time_cell(p) + _memory_cell(p)


def _memory_cell(p: pd.Series) -> str:
    peak = p.get("peak_alloc_gib", float("nan"))
    if pd.isna(peak):
        return ""
    verdict = p.get("memory_verdict", "first")
    if verdict in ("first", "not measured"):
        return f"; {peak:#.4g} GiB"
    word = f"**{verdict}**" if verdict in ("more memory", "less memory") else verdict
    change = p.get("memory_change_pct", float("nan"))
    moved = f" {change:+.3g}%" if verdict in ("more memory", "less memory") else ""
    return f"; {peak:#.4g} GiB ({word}{moved})"


def _time_cell(p: pd.Series) -> str:
    if pd.isna(p["median_ms"]):  # it passed in no run of the revision
        return p["status"]
    text = f"{p['median_ms']:#.4g}"
    if p["status"] != "ok":  # it passed in some runs of the revision only
        text += f" ({p['status']} in a run)"
    if p["verdict"] == "first":
        return text
    if p["too_few"]:
        return f"{text} (unclear: too few rounds)"
    word = f"**{p['verdict']}**" if p["verdict"] in ("slower", "faster") else p["verdict"]
    ratio = f" {p['ratio']:.3f}×" if pd.notna(p["ratio"]) else ""
    return f"{text} ({word}{ratio})"


def _method(points: pd.DataFrame) -> list[str]:
    """What decided the verdicts, and what the rounds could not carry."""
    judged = points[~points["verdict"].isin(["first", "missing"])]
    few = int(judged["too_few"].astype(bool).sum())
    # Rounds of one process matter where they were enough for a verdict.
    one_process = int((judged["one_process"].astype(bool) & ~judged["too_few"].astype(bool)).sum())
    counts = points["verdict"].value_counts()
    lines = [
        "Each case's median step time (ms, over all its steps) in every revision of this GPU "
        "model in results/: a revision is the timing runs of one commit (and one torch), "
        "ordered by the date of the commit (a run of unknown or uncommitted code is one alone, "
        "dated by its start). In brackets: the verdict against the previous revision that has "
        "the case and its ratio (this revision over that one; below 1 is faster), judged as "
        "`ampbench compare` judges two sides (comparing.md): each run one round, a revision of "
        "one run its passes (`run --rounds`) or else its timed windows; the ratio of the "
        "rounds' geometric means, a t-test on the log rounds (spreads moderated across the "
        "cases of one mode) with Holm's correction across the cases of the revision, the "
        f"smallest effect {defaults.MIN_EFFECT:.0%} at {defaults.CONFIDENCE:.0%} confidence. Cases "
        "are matched on every axis.",
        "",
        "Verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".",
        "",
    ]
    if few:
        lines += [
            f"**Too few rounds**: {few} of the {len(judged)} verdicts had too few rounds for "
            f"any test at {defaults.CONFIDENCE:.0%} to tell the two revisions apart (one round a "
            "side shows nothing of its spread): they are `unclear`, whatever their ratio. More "
            "runs of a commit (`run --rounds 7`, or `ampbench ab`) give each revision more rounds.",
            "",
        ]
    if one_process:
        lines += [
            f"**Rounds of one process**: {one_process} verdicts rest on the timed windows of "
            "a run, which follow each other within seconds; they show that process's own "
            "spread, not how far two runs of the same code differ, so a difference between the "
            "two runs larger than that reads as a real one.",
            "",
        ]
    return lines


def render(
    revisions: pd.DataFrame,
    points: pd.DataFrame,
    gpu: str,
    *,
    results_dir: Path = paths.RESULTS,
    figure: str | None = None,
) -> str:
    """The history's markdown: the method, the regressions, the revisions' runs and one table
    per mode, its links relative to `results_dir`/history/."""
    folder = results_dir / HISTORY_DIR
    each = revisions.explode("folders")
    run_rows = pd.DataFrame(
        {
            "revision": each["label"],
            "folder": [
                f"[{p.name}]({Path(os.path.relpath(p / results.REPORT, folder)).as_posix()})"
                for p in each["folders"]
            ],
            "date": [
                f"{d:%Y-%m-%d %H:%M} ({by})"
                for d, by in zip(each["date"], each["dated_by"], strict=True)
            ],
            "commit": each["commit"],
            "torch": each["torch"],
        }
    )
    slower = points[points["verdict"] == "slower"]
    out = [
        f"# Step time across revisions: {gpu}",
        "",
        "<!-- Generated by `python -m bench history`; do not edit. -->",
        "",
        *_method(points),
    ]
    judged = points[points["verdict"].isin(["slower", "faster", "same", "unclear"])]
    if slower.empty and len(judged) and judged["too_few"].astype(bool).all():
        # No test could have found a slowdown: say so, not that there is none.
        out += ["**Not known whether any case is slower**: no verdict had rounds enough.", ""]
    elif slower.empty:
        out += ["**No case is slower than in the revision before it.**", ""]
    else:
        out += ["**Slower than the revision before** (regressions to look at):", ""]
        out += [
            f"- `{p.case_id}`: {p.label} against {p.previous}, {p.ratio:.3f}×"
            for p in slower.itertuples()
        ]
        out.append("")
    out += _memory_lines(points)
    out += ["## Runs", "", tables.markdown(run_rows), ""]
    if figure:
        out += [f"![median step time per revision]({figure})", ""]
        if _has_memory(points):
            out += [f"![peak memory per revision]({memory_figure(figure)})", ""]
    axes = _case_axes(points)
    labels = list(revisions["label"])
    for mode, g in points.groupby("mode", sort=False):
        g = g.assign(cell=g.apply(_cell, axis=1))
        wide = g.pivot_table(index=axes, columns="label", values="cell", aggfunc="first", sort=True)
        wide = wide.reindex(columns=[lab for lab in labels if lab in wide.columns]).fillna("")
        out += [f"## {mode}", "", tables.markdown(wide.reset_index()), ""]
    return "\n".join(out)


def _has_memory(points: pd.DataFrame) -> bool:
    return "peak_alloc_gib" in points and bool(points["peak_alloc_gib"].notna().any())


def memory_figure(figure: str) -> str:
    """The memory figure's file name beside the time figure's: `GPU.png` -> `GPU-memory.png`."""
    stem, dot, ext = figure.rpartition(".")
    return f"{stem}-memory{dot}{ext}"


def _memory_lines(points: pd.DataFrame) -> list[str]:
    """How the memory verdicts were made, and the cases that use more memory than before."""
    if not _has_memory(points):
        return []
    more = points[points["memory_verdict"] == "more memory"]
    counts = points["memory_verdict"].value_counts()
    lines = [
        "Peak memory: after each step time, the case's peak allocated memory (GiB, the median "
        "over the revision's runs) and its memory verdict against the same previous revision, "
        f"as `ampbench compare` judges it (comparing.md): {memory.DEFAULT.text()} is the same "
        "memory. Memory verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".",
        "",
    ]
    if more.empty:
        return [*lines, "**No case uses more memory than in the revision before it.**", ""]
    lines += ["**More memory than the revision before**:", ""]
    lines += [
        f"- `{p.case_id}`: {p.label} against {p.previous}, {p.memory_change_pct:+.3g}%"
        for p in more.itertuples()
    ]
    return [*lines, ""]


def _revision_axis(ax: Axes, revisions: pd.DataFrame) -> None:
    ax.set_xticks(
        range(len(revisions)),
        [f"{r.label}\n{r.commit}" for r in revisions.itertuples()],
        fontsize=7,
    )
    ax.set_xlabel("revision (by commit date) and commit")


def plot_memory(revisions: pd.DataFrame, points: pd.DataFrame, gpu: str, path: Path) -> None:
    """One panel per mode: each case's peak allocated memory per revision, marked by verdict."""
    modes = list(dict.fromkeys(points["mode"]))
    axes_names = _case_axes(points)
    title = f"Peak allocated memory per case across revisions: {gpu}"
    fig, grid = figures.panels(len(modes), title, width=7.5, height=3.6, extra=0.6)
    x_of = {label: i for i, label in enumerate(revisions["label"])}
    for ax, mode in zip(grid, modes, strict=True):
        colour = mode_colour(mode)
        g = points[(points["mode"] == mode) & points["peak_alloc_gib"].notna()]
        for i, (_, case) in enumerate(g.groupby(axes_names, sort=True)):
            xs = [x_of[lab] for lab in case["label"]]
            ax.plot(xs, case["peak_alloc_gib"], color=colour, linewidth=1, marker="o",
                    markersize=4, linestyle=LINESTYLES[i % len(LINESTYLES)])  # fmt: skip
            for x, gib, verdict in zip(xs, case["peak_alloc_gib"], case["memory_verdict"],
                                       strict=True):  # fmt: skip
                if verdict in MEMORY_MARKERS:
                    marker, size = MEMORY_MARKERS[verdict]
                    ax.plot([x], [gib], marker=marker, markersize=size, color=colour,
                            markeredgecolor="black", linestyle="")  # fmt: skip
        _revision_axis(ax, revisions)
        ax.set_ylabel("peak allocated GiB")
        ax.set_title(f"{mode}: ▲ more memory, ▼ less memory than before", fontsize=10)
    figures.save(fig, path, dpi=100)


def plot(revisions: pd.DataFrame, points: pd.DataFrame, gpu: str, path: Path) -> None:
    """One panel per mode: each case's median step time per revision (log), marked by verdict."""
    modes = list(dict.fromkeys(points["mode"]))
    axes_names = _case_axes(points)
    title = f"Median step time per case across revisions: {gpu}"
    fig, grid = figures.panels(len(modes), title, width=7.5, height=4.2, extra=0.9)
    x_of = {label: i for i, label in enumerate(revisions["label"])}
    shown: set[str] = set()
    for ax, mode in zip(grid, modes, strict=True):
        colour = mode_colour(mode)
        g = points[points["mode"] == mode]
        for i, (key, case) in enumerate(g.groupby(axes_names, sort=True)):
            key = key if isinstance(key, tuple) else (key,)
            name = ", ".join(
                f"{v}" if a != "batch_size" else f"b{v}"
                for a, v in zip(axes_names, key, strict=True)
            )
            case = case[case["median_ms"].notna()]
            xs = [x_of[lab] for lab in case["label"]]
            style = LINESTYLES[i % len(LINESTYLES)]
            ax.plot(xs, case["median_ms"], color=colour, linestyle=style, linewidth=1)
            # Named at its last point: a legend of a dozen line styles is not read at a glance.
            if xs:
                ax.annotate(
                    name,
                    (xs[-1], case["median_ms"].iloc[-1]),
                    xytext=(8, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7,
                    color=colour,
                )
            for x, ms, verdict in zip(xs, case["median_ms"], case["verdict"], strict=True):
                marker, size, _ = VERDICT_MARKERS[verdict]
                ax.plot(
                    [x],
                    [ms],
                    marker=marker,
                    markersize=size,
                    markerfacecolor="none" if verdict == "unclear" else colour,
                    markeredgecolor="black" if verdict in ("slower", "faster") else colour,
                    linestyle="",
                )
                shown.add(verdict)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.tick_params(axis="y", which="minor", labelsize=6)
        _revision_axis(ax, revisions)
        ax.set_xlim(-0.5, len(revisions) + 0.3)  # room for the names at the right
        ax.set_ylabel("median step time (ms, log scale)")
        ax.set_title(f"{mode} ({', '.join(axes_names).replace('_', ' ')})", fontsize=10)
    handles = [
        Line2D(
            [],
            [],
            marker=m,
            markersize=s,
            color="0.4",
            markeredgecolor="black",
            linestyle="",
            label=t,
            markerfacecolor="none" if v == "unclear" else "0.4",
        )
        for v, (m, s, t) in VERDICT_MARKERS.items()
        if v in shown
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    figures.save(fig, path, dpi=100)


def write(results_dir: Path = paths.RESULTS, gpu: str | None = None) -> list[Path]:
    """results/history/<gpu-slug>.md and figures for `gpu` (else each GPU model); the .md files."""
    gpus = [gpu] if gpu else [g for g in gpu_models(results_dir) if g != "cpu"]
    if not gpus:
        raise UsageError(f"no timing run of a GPU in {results_dir}")
    folder = results_dir / HISTORY_DIR
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:  # a read-only results folder: said before any work
        raise UsageError(f"cannot make {folder} ({exc.strerror})") from exc
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{folder} is not writable")
    written = []
    for name in gpus:
        revisions, points = collect(results_dir, name)
        slug = gpu_slug(name)
        plot(revisions, points, name, folder / f"{slug}.png")
        if _has_memory(points):
            plot_memory(revisions, points, name, folder / memory_figure(f"{slug}.png"))
        md = folder / f"{slug}.md"
        md.write_text(
            render(revisions, points, name, results_dir=results_dir, figure=f"{slug}.png")
        )
        written.append(md)
    return written
