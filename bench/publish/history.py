"""Step time across runs, per GPU model: `python -m bench history [--gpu NAME]`.

For one GPU model, every timing run in results/ (`bench.publish.runs.run_folders`), ordered by the
date of the commit it ran (env.json's `started` where the commit is unknown or not in this
repository's history; runs of one commit by their start). For each case, matched across runs by
`case_id`: its median step time (`total_ms`) in each run, and a verdict against the previous run
that has the case, computed by `bench.publish.compare.verdict` from the two runs' raw per-step
samples: `faster`, `slower`, `same` or `unclear` (`missing` where the case did not pass in one
of them, `first` in the first run that has it). A regression is then a `slower` in the table and
a large up-pointing marker in the figure.

Writes results/history/<gpu-slug>.md and .png (the slug as run folder names spell the GPU:
`bench.store.folders.gpu_slug`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on GPU boxes or CI
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from bench.faults import UsageError
from bench.measure import stats
from bench.publish import compare, figures, tables
from bench.publish.runs import HISTORY_DIR, run_folders
from bench.recipes.catalog import colour as mode_colour
from bench.store import paths, results
from bench.store.folders import gpu_slug

TIMING = "timing"
"""The kind of folder a history reads (`bench.store.schema.KINDS`)."""
VERDICT_MARKERS = {
    # verdict: (marker, size, legend text)
    "slower": ("^", 11, "slower than the run before"),
    "faster": ("v", 9, "faster than the run before"),
    "same": ("o", 5, "same (within ±2%)"),
    "unclear": ("o", 7, "unclear (hollow)"),
    "missing": ("x", 7, "missing (did not pass in one run)"),
    "first": ("s", 5, "first run of the case"),
}
LINESTYLES = ("-", "--", ":", "-.")


def commit_date(sha: str | None, root: Path = paths.ROOT) -> str | None:
    """The committer date of `sha` in this repository (ISO 8601), or None when unknown."""
    if not sha:
        return None
    try:
        out = subprocess.run(
            ["git", "-c", "safe.directory=*", "show", "-s", "--format=%cI", sha],
            capture_output=True,
            text=True,
            timeout=20,
            cwd=root,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def gpu_models(results_dir: Path = paths.RESULTS) -> list[str]:
    """The GPU models of the timing runs in `results_dir` (`cpu` for CPU runs)."""
    found = run_folders(results_dir)
    return sorted({str(r.env.get("gpu")) for r in found if r.kind == TIMING})


def _runs(results_dir: Path, gpu: str) -> pd.DataFrame:
    """The timing runs of one GPU model, in history order, with the date that orders them."""
    found = [r for r in run_folders(results_dir) if r.kind == TIMING and r.env.get("gpu") == gpu]
    if not found:
        known = ", ".join(gpu_models(results_dir)) or "none"
        raise UsageError(
            f"--gpu {gpu!r}: no timing run of that GPU in {results_dir} (there: {known})"
        )
    out = []
    for r in found:
        committed = commit_date(r.env.get("commit"))
        started = str(r.env.get("started", ""))
        out.append(
            {
                "path": r.path,
                "run": r.path.name,
                "commit": (r.env.get("commit") or "")[:7] or "unknown",
                "torch": r.env.get("torch"),
                "date": pd.Timestamp(committed or started),
                "dated_by": "commit" if committed else "start",
                "started": started,
            }
        )
    table = pd.DataFrame(out).sort_values(["date", "started"], kind="stable").reset_index(drop=True)
    table["label"] = [f"R{i + 1}" for i in range(len(table))]
    return table


def collect(
    results_dir: Path, gpu: str, *, min_effect: float = stats.MIN_EFFECT
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, points): the runs in history order, and one point per run and case with its
    median step time and its verdict against the previous run that has the case."""
    runs = _runs(results_dir, gpu)
    points = []
    last: dict[str, tuple[str, np.ndarray | None]] = {}  # case_id -> (run label, ok samples)
    for run in runs.itertuples():
        rows = results.load(run.path)
        samples = results.load_samples(run.path)
        totals = {
            case_id: g.sort_values("step")["ms"].to_numpy()
            for case_id, g in samples[samples["phase"] == "total"].groupby("case_id")
        }
        for r in rows.to_dict("records"):
            cur = totals.get(r["case_id"]) if r["status"] == "ok" else None
            point = {
                "label": run.label,
                "run": run.run,
                **{a: r[a] for a in results.axes()},
                "case_id": r["case_id"],
                "status": r["status"],
                "median_ms": r["total_ms"] if r["status"] == "ok" else np.nan,
                "previous": "",
                "ratio": np.nan,
                "verdict": "first",
            }
            if r["case_id"] in last:
                prev_label, prev = last[r["case_id"]]
                point["previous"] = prev_label
                usable = prev is not None and cur is not None and len(prev) > 1 and len(cur) > 1
                if usable:
                    v = compare.verdict(prev, cur, min_effect=min_effect)
                    point["ratio"], point["verdict"] = v["ratio"], v["verdict"]
                else:
                    point["verdict"] = "missing"
            last[r["case_id"]] = (run.label, cur)
            points.append(point)
    return runs, pd.DataFrame(points)


def _case_axes(points: pd.DataFrame) -> list[str]:
    """The axes that tell one mode's cases apart in this history (batch size always)."""
    return [
        a for a in results.axes() if a != "mode" and (a == "batch_size" or points[a].nunique() > 1)
    ]


def _cell(p: pd.Series) -> str:
    if p["status"] != "ok":
        return p["status"]
    text = f"{p['median_ms']:#.4g}"
    if p["verdict"] == "first":
        return text
    word = f"**{p['verdict']}**" if p["verdict"] in ("slower", "faster") else p["verdict"]
    ratio = f" {p['ratio']:.3f}×" if pd.notna(p["ratio"]) else ""
    return f"{text} ({word}{ratio})"


def render(
    runs: pd.DataFrame,
    points: pd.DataFrame,
    gpu: str,
    *,
    results_dir: Path = paths.RESULTS,
    figure: str | None = None,
) -> str:
    """The history's markdown: the runs, the regressions, and one table per mode. Links are
    relative to `results_dir`/history/, where it is written."""
    folder = results_dir / HISTORY_DIR
    run_rows = pd.DataFrame(
        {
            "run": runs["label"],
            "folder": [
                f"[{p.name}]({Path(os.path.relpath(p / results.REPORT, folder)).as_posix()})"
                for p in runs["path"]
            ],
            "date": [
                f"{d:%Y-%m-%d %H:%M} ({by})"
                for d, by in zip(runs["date"], runs["dated_by"], strict=True)
            ],
            "commit": runs["commit"],
            "torch": runs["torch"],
        }
    )
    counts = points["verdict"].value_counts()
    slower = points[points["verdict"] == "slower"]
    out = [
        f"# Step time across runs: {gpu}",
        "",
        "<!-- Generated by `python -m bench history`; do not edit. -->",
        "",
        "Each case's median step time (ms, `total_ms`) in every timing run of this GPU model in "
        "results/, runs ordered by the date of their commit (or their start where the commit is "
        "unknown). In brackets: the verdict against the previous run that has the case and the "
        "ratio of medians (this run over that one; below 1 is faster), from the raw per-step "
        "samples (`bench compare`'s test: bootstrap interval and Mann-Whitney U, smallest "
        "effect 2%). Cases are matched by `case_id`.",
        "",
        "Verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".",
        "",
    ]
    if slower.empty:
        out += ["**No case is slower than in the run before it.**", ""]
    else:
        out += ["**Slower than the run before** (regressions to look at):", ""]
        out += [
            f"- `{p.case_id}`: {p.label} against {p.previous}, {p.ratio:.3f}×"
            for p in slower.itertuples()
        ]
        out.append("")
    out += ["## Runs", "", tables.markdown(run_rows), ""]
    if figure:
        out += [f"![median step time per run]({figure})", ""]
    axes = _case_axes(points)
    labels = list(runs["label"])
    for mode, g in points.groupby("mode", sort=False):
        g = g.assign(cell=g.apply(_cell, axis=1))
        wide = g.pivot_table(index=axes, columns="label", values="cell", aggfunc="first", sort=True)
        wide = wide.reindex(columns=[lab for lab in labels if lab in wide.columns]).fillna("")
        out += [f"## {mode}", "", tables.markdown(wide.reset_index()), ""]
    return "\n".join(out)


def plot(runs: pd.DataFrame, points: pd.DataFrame, gpu: str, path: Path) -> None:
    """One panel per mode: each case's median step time per run (log scale), its verdict
    against the run before as the marker."""
    modes = list(dict.fromkeys(points["mode"]))
    axes_names = _case_axes(points)
    cols = min(len(modes), 2)
    rows = -(-len(modes) // cols)
    fig, grid = plt.subplots(
        rows, cols, figsize=(7.5 * cols, 4.2 * rows + 0.9), squeeze=False, layout="constrained"
    )
    for ax in grid.flat[len(modes) :]:
        ax.set_visible(False)
    x_of = {label: i for i, label in enumerate(runs["label"])}
    shown: set[str] = set()
    for ax, mode in zip(grid.flat, modes, strict=False):
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
            ax.plot(
                xs,
                case["median_ms"],
                color=colour,
                linestyle=LINESTYLES[i % len(LINESTYLES)],
                linewidth=1,
            )
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
        ax.set_xticks(
            range(len(runs)), [f"{r.label}\n{r.commit}" for r in runs.itertuples()], fontsize=7
        )
        ax.set_xlim(-0.5, len(runs) + 0.3)  # room for the names at the right
        ax.set_xlabel("run (by commit date) and commit")
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
    fig.suptitle(f"Median step time per case across runs: {gpu}", fontsize=11)
    figures.save(fig, path, dpi=100)
    plt.close(fig)


def write(results_dir: Path = paths.RESULTS, gpu: str | None = None) -> list[Path]:
    """results/history/<gpu-slug>.md and .png for `gpu`, or for every GPU model (not the CPU)
    with a timing run when `gpu` is None; returns the markdown files written."""
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
        runs, points = collect(results_dir, name)
        slug = gpu_slug(name)
        plot(runs, points, name, folder / f"{slug}.png")
        md = folder / f"{slug}.md"
        md.write_text(render(runs, points, name, results_dir=results_dir, figure=f"{slug}.png"))
        written.append(md)
    return written
