"""The index of published runs: results/README.md, generated from the run folders.

`./run_bench.sh index` rewrites it, and so do `promote` (`bench.publish.promote`, which publishes a
run
from runs/) and every run (timing, numerics, largest batch) that ends in the project's own results/
(`refresh`; a run into another folder, as the tests make, leaves it alone). CPU runs are smoke
tests, never listed. It is a page to scan, not to read: a line naming the run of record (the run
whose headline the project's README.md quotes, `<!-- ampbench:headline FOLDER -->`), then one short
table per kind of run (timing runs, largest-batch runs, numerics studies, pytest-benchmark saves),
newest first. A row says when and where the run ran, at which commit, a short description of its
grid, how many of its cases passed, and links its report, which holds everything else.

What a folder cannot tell (why a run was made, what happened on the machine) is written by hand in
results/sessions/NOTES.md, beside the session logs; the index links that folder in one line and
never changes it.

`./run_bench.sh index --check` (`check`) says whether results/README.md is what the run folders
that git tracks say: a user's own run, finished or not, is not one of them, so it cannot make the
check fail unless it has been written into the index.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path

import pandas as pd

from bench.publish import tables
from bench.store import paths, results

INDEX = "README.md"
PROJECT_README = "README.md"
"""The project's README, beside the results folder; its headline marker names the run of record."""
HEADLINE_MARKER = re.compile(r"^<!-- ampbench:headline (\S+)", re.M)
SESSIONS_DIR, NOTES = "sessions", "NOTES.md"
"""Session logs and the hand-written notes on the runs (results/sessions/NOTES.md)."""
HISTORY_DIR = "history"
"""Where `bench history` writes (results/history/); linked in one line."""
TIMING, NUMERICS, MAXBATCH, SAVES = "timing", "numerics", "maxbatch", "pytest-benchmark"
DAMAGED = "damaged"
"""The kind of a folder whose env.json cannot be read: warned about, and left out."""
CONFIG_KEYS = {"maxbatch_config": MAXBATCH, "numerics_config": NUMERICS, "config": TIMING}
"""env.json key -> kind of run; the first present wins (a timing run's short numerics study,
in RUN/numerics/, carries both, but is part of its run and not listed on its own)."""
SECTIONS = {
    # kind: (heading, header of the column counting what passed)
    TIMING: ("Timing runs", "cases ok"),
    MAXBATCH: ("Largest-batch runs", "modes ok"),
    NUMERICS: ("Numerics studies", "jobs ok"),
    SAVES: ("pytest-benchmark saves", "benchmarks"),
    "unknown": ("Other run folders", "ok"),
}
GRID_WIDTH = 60
"""Most characters of a row's grid description; a longer one shows counts instead of values."""
RECORD = "**run of record**"
STRESS = {
    # a numerics study's stress flag: (its default, how a grid shows another value)
    "loss_mult": (1.0, "loss ×{}"),
    "reduction": ("mean", "{} reduction"),
    "init_scale": (1.0, "init ×{}"),
}


@dataclass(frozen=True)
class Run:
    """A run folder: where it is, what kind of run made it, and its env.json."""

    path: Path
    kind: str
    env: dict


def kind_of(env: dict) -> str:
    return next((kind for key, kind in CONFIG_KEYS.items() if key in env), "unknown")


@dataclass(frozen=True)
class Tree:
    """What the index sees of a results folder: every file on disk, or (`files` given) only those
    files, as `check` uses it with the files git tracks."""

    root: Path
    files: frozenset[Path] | None = None

    def has(self, path: Path) -> bool:
        if not path.exists():
            return False
        if self.files is None:
            return True
        return path in self.files or any(path in f.parents for f in self.files)


def _run_at(path: Path, tree: Tree) -> Run | None:
    """The run in folder `path`, or None where it holds no env.json. A damaged env.json makes a
    run of kind `DAMAGED` whose env holds the one line that names the damage (`render` says it
    and lists the rest): one bad folder must not cost the index of every other."""
    if not tree.has(path / results.ENV):
        return None
    try:
        env = results.read_env(path)
    except results.CorruptFolder as exc:
        return Run(path=path, kind=DAMAGED, env={"damage": str(exc)})
    return Run(path=path, kind=kind_of(env), env=env)


def _subfolders(tree: Tree) -> list[Path]:
    """Folders of `tree` other than the history and the sessions, which hold no runs."""
    skip = {HISTORY_DIR, SESSIONS_DIR}
    return sorted(
        p for p in tree.root.iterdir() if p.is_dir() and p.name not in skip and tree.has(p)
    )


def run_folders(results_dir: Path = paths.RESULTS, *, tree: Tree | None = None) -> list[Run]:
    """Every run folder directly in `results_dir` or one level below (results/lr-sweep/RUN),
    oldest first. A CPU run (env.json's `device` is `cpu`) is a smoke test of the harness, not a
    result: it is left out, even where `promote --allow-cpu` copied it in. So is a folder whose
    env.json is damaged (`damaged_folders`)."""
    found = [r for r in _folders(results_dir, tree) if r.kind != DAMAGED]
    found = [r for r in found if r.env.get("device") != "cpu"]
    return sorted(found, key=lambda r: (str(r.env.get("started", "")), r.path.name))


def damaged_folders(results_dir: Path = paths.RESULTS, *, tree: Tree | None = None) -> list[Run]:
    """The run folders that `run_folders` leaves out because their env.json is damaged."""
    return [r for r in _folders(results_dir, tree) if r.kind == DAMAGED]


def _folders(results_dir: Path, tree: Tree | None) -> list[Run]:
    tree = tree or Tree(results_dir)
    found = []
    for child in _subfolders(tree):
        run = _run_at(child, tree)
        if run is not None:
            found.append(run)
        else:
            found += [r for r in (_run_at(p, tree) for p in sorted(child.iterdir())) if r]
    return found


# --- a row's cells --------------------------------------------------------------------------


def _link(text: str, target: Path, base: Path) -> str:
    return f"[{text}]({target.relative_to(base).as_posix()})"


def _date(stamp: object) -> str | None:
    return pd.Timestamp(stamp).strftime("%Y-%m-%d %H:%M") if stamp else None


def _commit(sha: object, dirty: object = False) -> str | None:
    if not sha or sha == "unknown":
        return None
    return f"`{str(sha)[:7]}`" + (" (dirty)" if dirty else "")


def _gpu(env: dict, used: int) -> str:
    if env.get("device") == "cpu":
        return "CPU"
    return str(env.get("gpu")) + (f" ×{used}" if used > 1 else "")


def _lr(x: float) -> str:
    """A learning rate as people write it: 3e-4, 1e-3."""
    mantissa, exponent = f"{x:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


@dataclass(frozen=True)
class Axis:
    """One axis of a grid description, as its values (`fp32,bf16-amp`) or, where the line is too
    long, as a count (`2 modes`)."""

    values: str
    count: str


def _axis(values: list, noun: str, *, label: str = "") -> Axis | None:
    """An axis of `values`; None when there are none (a folder older than the axis)."""
    if not values:
        return None
    shown = f"{label}{','.join(map(str, values))}"
    return Axis(shown, f"{len(values)} {noun}s" if len(values) > 1 else shown)


def _batches(values: list) -> Axis | None:
    """Batch sizes, or their range where there are more than two."""
    if not values:
        return None
    shown = f"batch {','.join(map(str, values))}"
    return Axis(shown, f"batch {min(values)}–{max(values)}" if len(values) > 2 else shown)


def grid(axes: list[Axis | None], *, extras: tuple[str, ...] = ()) -> str:
    """`a × b × c, extra, extra` in at most GRID_WIDTH characters: the longest axis shown by its
    values gives way to its count until the line fits; a line that still does not fit is cut
    with `…` (the report holds the whole grid)."""
    axes = [a for a in axes if a is not None]
    forms = [a.values for a in axes]

    def text() -> str:
        return ", ".join([" × ".join(forms), *extras])

    while len(text()) > GRID_WIDTH:
        longer = [i for i, a in enumerate(axes) if len(a.count) < len(forms[i])]
        if not longer:
            break
        i = max(longer, key=lambda i: len(forms[i]))
        forms[i] = axes[i].count
    line = text()
    return line if len(line) <= GRID_WIDTH else line[: GRID_WIDTH - 1] + "…"


def _preset(cfg: dict) -> str:
    """The preset whose sizes a run used, else the sizes themselves."""
    if cfg.get("preset"):
        return str(cfg["preset"])
    from bench.workloads.mlp import PRESETS  # here: the model module imports torch

    sizes = tuple(cfg.get(k) for k in ("input_size", "hidden_size", "num_classes"))
    for name, size in PRESETS.items():
        if sizes == (size.input_size, size.hidden_size, size.num_classes):
            return name
    return "×".join(map(str, sizes))


def _finished(env: dict, cell: str) -> str:
    return cell if "ended" in env else f"{cell} (unfinished)"


def _csv_rows(path: Path) -> int:
    """Rows of a CSV file; 0 when it is missing or empty (a table with no rows may have no
    header either)."""
    try:
        return len(pd.read_csv(path))
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return 0


# --- one row per kind of run ------------------------------------------------------------------


@dataclass(frozen=True)
class Cells:
    """What a row says that depends on the kind of run."""

    gpus: int
    """GPUs the run used: a timing run's ranks, a study's workers."""
    model: str | None
    grid: str | None
    passed: str | None
    """`ok/total` of what the run is made of (cases, jobs, modes), `(unfinished)` after it when
    the run did not end."""


def _timing(run: Run) -> Cells:
    cfg = run.env.get("config", {})
    rows = results.read_rows(run.path / results.ROWS)
    last = {r["case_id"]: r["status"] for r in rows}  # a resumed case's last row wins
    total = run.env.get("expected_cases") or len(last)
    ok = sum(status == "ok" for status in last.values())
    axes = [
        _axis(cfg.get("modes", []), "mode"),
        _batches(cfg.get("batch_sizes", [])),
        _axis(cfg.get("optimizers", []), "optimizer"),
    ]
    for key, noun, default in (
        ("variants", "variant", "eager"),
        ("parallels", "parallelism", "none"),
    ):
        values = cfg.get(key, [default])
        if values != [default]:
            axes.append(_axis(values, noun))
    ranks = int(cfg.get("world_size", 1))
    return Cells(ranks, _preset(cfg), grid(axes), _finished(run.env, f"{ok}/{total}"))


def _numerics(run: Run) -> Cells:
    cfg = run.env.get("numerics_config", {})
    modes, batches, seeds = (cfg.get(k, []) for k in ("modes", "conv_batch_sizes", "seeds"))
    # The study's jobs, as `NumericsConfig.jobs` plans them: one census trajectory per census
    # batch size, one convergence run per batch size, mode and seed.
    total = len(cfg.get("census_batch_sizes", [])) + len(batches) * len(modes) * len(seeds)
    if "ended" in run.env:
        ok = total - _csv_rows(run.path / "failed.csv")
    else:  # each finished job is kept in jobs/ until the study ends
        ok = len(list((run.path / "jobs").glob("*.json")))
    stress = tuple(
        text.format(cfg[k])
        for k, (default, text) in STRESS.items()
        if cfg.get(k, default) != default
    )
    axes = [
        _axis(modes, "mode"),
        _batches(batches),
        # One seed is a study's usual (the census runs the first): only several are news.
        _axis(seeds, "seed", label="seeds ") if len(seeds) > 1 else None,
        Axis(f"{cfg.get('steps')} steps", f"{cfg.get('steps')} steps"),
    ]
    extras = (f"lr {_lr(cfg['lr'])}",) if "lr" in cfg else ()
    workers = int(cfg.get("workers") or 1)
    return Cells(
        workers,
        _preset(cfg),
        grid(axes, extras=extras + stress),
        _finished(run.env, f"{ok}/{total}"),
    )


def _maxbatch(run: Run) -> Cells:
    cfg = run.env.get("maxbatch_config", {})
    variants = cfg.get("variants", ["eager"])
    trials = results.read_jsonl(run.path / "trials.jsonl")
    found = {(t.get("mode"), t.get("variant", "eager")) for t in trials if t["status"] == "ok"}
    total = len(cfg.get("modes", [])) * len(variants)
    axes = [_axis(cfg.get("modes", []), "mode"), _axis([cfg.get("optimizer")], "optimizer")]
    if variants != ["eager"]:
        axes.append(_axis(variants, "variant"))
    extras = (f"batch {cfg.get('start')} up to {cfg.get('limit')}",)
    passed = _finished(run.env, f"{len(found)}/{total}")
    return Cells(1, _preset(cfg), grid(axes, extras=extras), passed)


ROW: dict[str, Callable[[Run], Cells]] = {
    TIMING: _timing,
    NUMERICS: _numerics,
    MAXBATCH: _maxbatch,
}


def row(run: Run, base: Path, tree: Tree, record: Path | None = None) -> dict[str, str | None]:
    """The index's row of one run folder; links are relative to `base` (the index's folder)."""
    report = run.path / results.REPORT
    cells = ROW[run.kind](run) if run.kind in ROW else Cells(1, None, None, None)
    link = _link("report", report, base) if tree.has(report) else _unreported(run, base)
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


def _saves(folder: Path, tree: Tree) -> list[tuple[Path, dict]]:
    """pytest-benchmark saves under `folder` (one machine folder deep)."""
    out = []
    for path in sorted(folder.glob("*/*.json")) + sorted(folder.glob("*.json")):
        if not tree.has(path):
            continue
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and {"benchmarks", "machine_info"} <= data.keys():
            out.append((path, data))
    return out


def _save_row(path: Path, data: dict, base: Path) -> dict[str, object]:
    extra = [b.get("extra_info", {}) for b in data["benchmarks"]]

    def values(key: str) -> list:
        return sorted({e[key] for e in extra if e.get(key) is not None}, key=str)

    axes = [
        _axis(values("mode"), "mode"),
        _batches(values("batch_size")),
        _axis(values("optimizer"), "optimizer"),
    ]
    return {
        "date (UTC)": _date(data.get("datetime")),
        "GPU": ", ".join(map(str, values("gpu"))) or None,
        "commit": _commit(data.get("commit_info", {}).get("id")),
        "model": ",".join(map(str, values("preset"))) or None,
        "grid": grid(axes),
        SECTIONS[SAVES][1]: len(data["benchmarks"]),
        "save": _link(path.name.split("_")[0], path, base),  # the number `compare` takes
    }


# --- the page --------------------------------------------------------------------------------


def run_of_record(readme: Path, tree: Tree) -> Path | None:
    """The run folder named by the first `<!-- ampbench:headline FOLDER -->` of `readme` (FOLDER
    relative to the README's folder), resolved; None when there is no README, no such marker, or
    no such run folder in `tree`."""
    try:
        found = HEADLINE_MARKER.search(readme.read_text())
    except OSError:
        return None
    if found is None:
        return None
    folder = readme.parent / found[1]
    return folder.resolve() if tree.has(folder / results.ENV) else None


def _other_files(tree: Tree, saves: set[Path]) -> list[Path]:
    """Files the tables do not list: loose files here and in folders that hold no run."""
    out = [p for p in sorted(tree.root.iterdir()) if p.is_file() and p.name != INDEX]
    for sub in _subfolders(tree):
        if _run_at(sub, tree) is None:
            out += [p for p in sorted(sub.iterdir()) if p.is_file() and p not in saves]
    return [p for p in out if tree.has(p) and not p.name.startswith(".")]


def render(
    results_dir: Path = paths.RESULTS, *, readme: Path | None = None, tree: Tree | None = None
) -> str:
    """The whole index of `results_dir`, as markdown. `readme`: the file whose headline marker
    names the run of record (default: README.md beside `results_dir`); `tree`: which files count
    (default: every file on disk)."""
    base = results_dir
    tree = tree or Tree(results_dir)
    for run in damaged_folders(results_dir, tree=tree):
        print(f"ampbench: warning: {run.env['damage']}; left out of the index", file=sys.stderr)
    runs = run_folders(results_dir, tree=tree)[::-1]  # newest first
    readme = readme or results_dir.parent / PROJECT_README
    record = run_of_record(readme, tree)
    out = [
        "# Runs",
        "",
        "<!-- Generated by `./run_bench.sh index` from the run folders; a run into results/ "
        "rewrites it when it ends. Do not edit by hand. -->",
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
    saves = [s for sub in _subfolders(tree) if not _run_at(sub, tree) for s in _saves(sub, tree)]
    if saves:
        newest = sorted(saves, key=lambda s: str(s[1].get("datetime")), reverse=True)
        rows = [_save_row(path, data, base) for path, data in newest]
        out += [f"## {SECTIONS[SAVES][0]}", "", tables.markdown(pd.DataFrame(rows)), ""]
    history = sorted(p for p in (results_dir / HISTORY_DIR).glob("*.md") if tree.has(p))
    if history:
        links = ", ".join(_link(p.stem, p, base) for p in history)
        out += [f"Each case's step time across the timing runs of one GPU model: {links}.", ""]
    other = _other_files(tree, {p for p, _ in saves})
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
    """After a run ends: rewrite the project's index when `run_dir` lies in the project's
    results/ (a run elsewhere, as in the tests, leaves it alone). Returns the index's path, or
    None when it was left alone or could not be written."""
    if not paths.in_results(run_dir):
        return None
    try:
        path = write(paths.RESULTS)
    except Exception as exc:  # the run is complete on disk; a failed index must not undo that
        print(f"ampbench: warning: results/{INDEX} not updated: {exc}", file=sys.stderr)
        return None
    print(f"ampbench: updated {paths.shown(path)}", file=sys.stderr, flush=True)
    return path


# --- is the committed index fresh? ----------------------------------------------------------


def tracked_files(folder: Path) -> frozenset[Path] | None:
    """The files under `folder` that git tracks (staged ones included), or None when git cannot
    say (git missing, or `folder` not in a repository)."""
    try:
        out = subprocess.run(
            ["git", "-c", "safe.directory=*", "ls-files", "-z", "--", "."],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(folder / p for p in out.stdout.split("\0") if p)


def _named(text: str, run: Run, base: Path) -> bool:
    """Whether an index's `text` has a row for `run` (its report's link, or its name)."""
    rel = run.path.relative_to(base).as_posix()
    return f"]({rel}/{results.REPORT})" in text or _unreported(run, base) in text


def _unreported(run: Run, base: Path) -> str:
    """The report cell of a run folder without a report (a run in progress, or killed)."""
    return f"`{run.path.relative_to(base).as_posix()}` (no report)"


def check(results_dir: Path = paths.RESULTS) -> str | None:
    """None when `results_dir`/README.md is what the run folders git tracks say; else one line
    naming what is stale. Folders git does not track (a user's own run, finished or not) are
    left out. Where git cannot list the tracked files, says so on stderr and counts every
    folder."""
    files = tracked_files(results_dir)
    if files is None:
        print(
            f"ampbench: git cannot list the files of {paths.shown(results_dir)}; checking every "
            "folder in it",
            file=sys.stderr,
        )
    path = results_dir / INDEX
    shown = f"{paths.shown(results_dir)}/{INDEX}"
    if not path.is_file():
        return f"{shown} is missing: run ./run_bench.sh index"
    tree = Tree(results_dir, files)
    have, want = path.read_text(), render(results_dir, tree=tree)
    if have == want:
        return None
    counted = run_folders(results_dir, tree=tree)
    lacks = [r.path.name for r in counted if not _named(have, r, results_dir)]
    extra = [
        r.path.name
        for r in run_folders(results_dir)
        if r not in counted and _named(have, r, results_dir)
    ]
    if lacks:
        what = f"it lacks {lacks[0]}" + (f" and {len(lacks) - 1} more" if len(lacks) > 1 else "")
    elif extra:
        what = f"it lists {extra[0]}, which is not a run folder git tracks" + (
            f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        )
    else:
        pairs = zip_longest(have.splitlines(), want.splitlines())
        line = next((i for i, (a, b) in enumerate(pairs, 1) if a != b), 1)  # or a last newline
        what = f"line {line} differs from what the folders say"
    return f"{shown} is stale: {what}; run ./run_bench.sh index"
