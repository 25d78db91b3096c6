"""The index of published runs, results/README.md, generated from the run folders: the run of
record, then one short table per kind of run, newest first (`render`, `refresh`). What a row says
of each kind is `bench.publish.index_cells`; CPU runs are never listed."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pandas as pd

from bench.publish import retired
from bench.publish.index_cells import COMPARISON, ROW, Cells, axis, batches, line
from bench.store import paths, results
from bench.store.run_env import RunEnv
from bench.store.tree import (
    HISTORY_DIR,
    NOTES,
    SESSIONS_DIR,
    UNKNOWN,
    Run,
    Tree,
    damaged_folders,
    run_at,
    run_folders,
    saves,
    subfolders,
)
from bench.text import tables

INDEX = "README.md"
PROJECT_README = "README.md"
"""The project's README, beside the results folder; its headline marker names the run of record."""
HEADLINE_MARKER = re.compile(r"^<!-- ampbench:headline (\S+)", re.M)
SAVES = "pytest-benchmark"
"""The section of pytest-benchmark saves, beside the kinds of run folder."""
SECTIONS = {
    # kind (`bench.store.schema.KINDS`): (heading, header of the column counting what passed)
    "timing": ("Timing runs", "cases ok"),
    "maxbatch": ("Largest-batch runs", "modes ok"),
    "numerics": ("Numerics studies", "jobs ok"),
    "quality": ("Time-to-quality studies", "runs ok"),
    COMPARISON: ("A/B comparisons", "rounds ok"),
    SAVES: ("pytest-benchmark saves", "benchmarks"),
    UNKNOWN: ("Other run folders", "ok"),
}
LIMIT_MB, FILE_LIMIT_MB = 30, 5
"""What the files git tracks under results/ may weigh in all, and each, in MB (10**6 bytes, as
`du -cb` counts them): every clone carries them."""
RULE = (
    f"The rule of this folder: the files git tracks here weigh at most {LIMIT_MB} MB in all "
    f"and {FILE_LIMIT_MB} MB each (`./run_bench.sh index --check` holds them to it; logs and "
    "tables are kept gzip-compressed), and it holds results and their notes, never code: the "
    "scripts that made or derived them live in [scripts/](../scripts/) and write here."
)
"""The preamble's rule of results/, stated where the index begins."""
RECORD = "**run of record**"


# --- a row's cells --------------------------------------------------------------------------


def _link(text: str, target: Path, base: Path) -> str:
    return f"[{text}]({target.relative_to(base).as_posix()})"


def _date(stamp: object) -> str | None:
    return pd.Timestamp(stamp).strftime("%Y-%m-%d %H:%M") if stamp else None


def _commit(sha: object, dirty: object = False) -> str | None:
    if not sha or sha == "unknown":
        return None
    return f"`{str(sha)[:7]}`" + (" (dirty)" if dirty else "")


def _gpu(env: RunEnv, used: int) -> str:
    if env.get("device") == "cpu":
        return "CPU"
    return str(env.get("gpu")) + (f" ×{used}" if used > 1 else "")


def row(run: Run, base: Path, tree: Tree, record: Path | None = None) -> dict[str, str | None]:
    """The index's row of one run folder; links are relative to `base` (the index's folder)."""
    report = run.path / results.REPORT
    cells = ROW[run.kind](run) if run.kind in ROW else Cells(1, None, None, None)
    link = _link("report", report, base) if tree.has(report) else unreported(run, base)
    if record is not None and run.path.resolve() == record:
        link += f", {RECORD}"
    return {
        "date (UTC)": _date(run.env.get("started")),
        "GPU": _gpu(run.env, cells.gpus),
        "commit": _commit(run.env.get("commit"), run.env.get("dirty")),
        "model": cells.model,
        "grid": cells.grid,
        SECTIONS[run.kind][1]: cells.passed,
        "report": link,
    }


# --- pytest-benchmark saves ------------------------------------------------------------------


def _save_row(path: Path, data: dict, base: Path) -> dict[str, object]:
    extra = [b.get("extra_info", {}) for b in data["benchmarks"]]

    def values(key: str) -> list:
        return sorted({e[key] for e in extra if e.get(key) is not None}, key=str)

    axes = [
        axis(values("mode"), "mode"),
        batches(values("batch_size")),
        axis(values("optimizer"), "optimizer"),
    ]
    return {
        "date (UTC)": _date(data.get("datetime")),
        "GPU": ", ".join(map(str, values("gpu"))) or None,
        "commit": _commit(data.get("commit_info", {}).get("id")),
        "model": ",".join(map(str, values("preset"))) or None,
        "grid": line(axes),
        SECTIONS[SAVES][1]: len(data["benchmarks"]),
        "save": _link(path.name.split("_")[0], path, base),  # the number `compare` takes
    }


# --- the page --------------------------------------------------------------------------------


def run_of_record(readme: Path, tree: Tree) -> Path | None:
    """The run folder the first `<!-- ampbench:headline FOLDER -->` of `readme` names, resolved;
    None without such a README, marker or run folder in `tree`."""
    try:
        found = HEADLINE_MARKER.search(readme.read_text())
    except OSError:
        return None
    if found is None:
        return None
    folder = readme.parent / found[1]
    return folder.resolve() if tree.has(folder / results.ENV) else None


def _other_files(tree: Tree, listed: set[Path]) -> list[Path]:
    """Files the tables do not list: loose files here and in folders that hold no run."""
    out = [
        p
        for p in sorted(tree.root.iterdir())
        if p.is_file() and p.name not in (INDEX, retired.RETIRED)
    ]
    for sub in subfolders(tree):
        if run_at(sub, tree) is None:
            out += [p for p in sorted(sub.iterdir()) if p.is_file() and p not in listed]
    return [p for p in out if tree.has(p) and not p.name.startswith(".")]


EARLIER = "Earlier folders"


def _earlier(results_dir: Path, tree: Tree) -> list[str]:
    """The folders that left results/, newest first, each with the last commit that held it
    (`bench.publish.retired`: from retired.json, never from git, so a shallow clone renders
    the same)."""
    if not tree.has(results_dir / retired.RETIRED):
        return []
    gone = retired.read(results_dir)
    if not gone:
        return []
    rows = [
        {"folder": f"`{name}`", "last commit": f"`{sha[:7]}`"}
        for name, sha in sorted(gone.items(), reverse=True)
    ]
    return [
        f"## {EARLIER}",
        "",
        "Folders that left results/ once nothing published cited them; git keeps each at its "
        "last commit (`git checkout COMMIT -- results/FOLDER` brings one back). "
        f"{_link(retired.RETIRED, results_dir / retired.RETIRED, results_dir)} lists them, "
        "kept from git's history by `./run_bench.sh index`.",
        "",
        tables.markdown(pd.DataFrame(rows)),
        "",
    ]


def render(
    results_dir: Path = paths.RESULTS, *, readme: Path | None = None, tree: Tree | None = None
) -> str:
    """The whole index of `results_dir` as markdown; `readme` names the run of record (default:
    README.md beside `results_dir`), `tree` which files count (default: all on disk)."""
    base = results_dir
    tree = tree or Tree(results_dir)
    for run in damaged_folders(results_dir, tree=tree):
        print(f"ampbench: warning: {run.env['damage']}; left out of the index", file=sys.stderr)
    runs = run_folders(results_dir, tree=tree, nested=True)[::-1]  # newest first
    readme = readme or results_dir.parent / PROJECT_README
    record = run_of_record(readme, tree)
    out = [
        "# Runs",
        "",
        "<!-- Generated by `./run_bench.sh index` from the run folders; a run into results/ "
        "rewrites it when it ends. Do not edit by hand. -->",
        "",
        RULE,
        "",
    ]
    if record is not None and not any(r.path.resolve() == record for r in runs):
        record = None  # the README names a run the index leaves out (a CPU run)
    if record is not None:
        run = next(r for r in runs if r.path.resolve() == record)
        out += [
            f"The run of record, whose headline [{readme.name}]"
            f"({Path(os.path.relpath(readme, base)).as_posix()}) quotes: "
            f"{_link(run.path.name, run.path / results.REPORT, base)}.",
            "",
        ]
    intro = (
        "Newest first. Each run folder's `report.md` gives the exact command, what passed and "
        "what did not, and every figure."
        if runs
        else "No run folder yet: `./run_bench.sh promote RUN` publishes one here."
    )
    notes = results_dir / SESSIONS_DIR / NOTES
    if tree.has(notes):
        intro += (
            f" Why each run was made, and the sessions' logs: {_link('sessions/', notes, base)}."
        )
    out += [intro, ""]
    for kind, (heading, _) in SECTIONS.items():
        rows = [row(r, base, tree, record) for r in runs if r.kind == kind]
        if rows:
            out += [f"## {heading}", "", tables.markdown(pd.DataFrame(rows)), ""]
    found = [s for sub in subfolders(tree) if not run_at(sub, tree) for s in saves(sub, tree)]
    if found:
        newest = sorted(found, key=lambda s: str(s[1].get("datetime")), reverse=True)
        rows = [_save_row(path, data, base) for path, data in newest]
        out += [f"## {SECTIONS[SAVES][0]}", "", tables.markdown(pd.DataFrame(rows)), ""]
    history = sorted(p for p in (results_dir / HISTORY_DIR).glob("*.md") if tree.has(p))
    if history:
        links = ", ".join(_link(p.stem, p, base) for p in history)
        out += [f"Each case's step time across the timing runs of one GPU model: {links}.", ""]
    out += _earlier(results_dir, tree)
    other = _other_files(tree, {p for p, _ in found})
    if other:
        out += ["Other files: " + ", ".join(_link(p.name, p, base) for p in other) + ".", ""]
    return "\n".join(out)


def write(results_dir: Path = paths.RESULTS) -> Path:
    """Rewrite `results_dir`/README.md; returns its path."""
    path = results_dir / INDEX
    tmp = results_dir / f".{INDEX}.tmp"
    tmp.write_text(render(results_dir))
    tmp.replace(path)  # whole or not at all: a reader never sees half an index
    return path


def refresh(run_dir: Path) -> Path | None:
    """After a run ends: rewrite the project's index when `run_dir` lies in its results/;
    returns the index's path, or None when it was left alone or could not be written."""
    if not paths.in_results(run_dir):
        return None
    try:
        path = write(paths.RESULTS)
    except Exception as exc:  # the run is complete on disk; a failed index must not undo that
        print(f"ampbench: warning: results/{INDEX} not updated: {exc}", file=sys.stderr)
        return None
    print(f"ampbench: updated {paths.shown(path)}", file=sys.stderr, flush=True)
    return path


def unreported(run: Run, base: Path) -> str:
    """The report cell of a run folder without a report (a run in progress, or killed)."""
    return f"`{run.path.relative_to(base).as_posix()}` (no report)"
