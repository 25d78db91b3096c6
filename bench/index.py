"""The index of published runs: results/README.md, generated from the folders themselves.

`python -m bench index` rewrites it, and so does every run (timing, numerics, largest batch) that
ends in the project's own results/ (`refresh`; a run into another folder, as the tests make, leaves
it alone). One row per run folder, read from its env.json and its rows: when and where it ran,
the commit, the grid, how many cases passed, a headline figure, and a link to its report.
Subfolders that hold run folders (results/lr-sweep/) get a table of their own; pytest-benchmark
saves (results/pytest-benchmark/) are listed save by save; loose files (session logs) are linked.

What a folder cannot tell (why a run was made, what went wrong on the machine, which runs
supersede which) is written by hand in results/NOTES.md: the index links to it and never
changes it, and nothing is typed into the index itself.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench import paths, results

INDEX, NOTES = "README.md", "NOTES.md"
HISTORY_DIR = "history"
"""Where `bench history` writes (results/history/); listed in a section of its own."""
TIMING, NUMERICS, MAXBATCH = "timing", "numerics", "maxbatch"
CONFIG_KEYS = {"maxbatch_config": MAXBATCH, "numerics_config": NUMERICS, "config": TIMING}
"""env.json key -> kind of run; the first present wins (a timing run's short numerics study,
in RUN/numerics/, carries both, but is part of its run and not listed on its own)."""
HEADLINE_MODE = "bf16-amp"
"""A timing run's headline: this mode's fastest case at the run's largest batch size."""


@dataclass(frozen=True)
class Run:
    """A run folder: where it is, what kind of run made it, and its env.json."""

    path: Path
    kind: str
    env: dict


def kind_of(env: dict) -> str:
    return next((kind for key, kind in CONFIG_KEYS.items() if key in env), "unknown")


def _run_at(path: Path) -> Run | None:
    if not (path / results.ENV).is_file():
        return None
    env = results.read_env(path)  # a damaged env.json is named in one line, never skipped
    return Run(path=path, kind=kind_of(env), env=env)


def run_folders(results_dir: Path = paths.RESULTS) -> list[Run]:
    """Every run folder directly in `results_dir` or one level below (results/lr-sweep/RUN),
    oldest first."""
    found = []
    for child in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        run = _run_at(child)
        if run is not None:
            found.append(run)
        elif child.name != HISTORY_DIR:
            found += [r for r in map(_run_at, sorted(child.iterdir())) if r is not None]
    return sorted(found, key=lambda r: (str(r.env.get("started", "")), r.path.name))


# --- one row per run -----------------------------------------------------------------------


def _link(text: str, target: Path, base: Path) -> str:
    return f"[{text}]({target.relative_to(base).as_posix()})"


def _date(env: dict) -> str:
    started = env.get("started")
    return pd.Timestamp(started).strftime("%Y-%m-%d %H:%M") if started else "unknown"


def _commit(env: dict) -> str:
    sha = env.get("commit")
    if not sha:
        return "unknown"
    return f"`{sha[:7]}`" + (" (dirty)" if env.get("dirty") else "")


def _sizes(cfg: dict) -> str:
    """The preset whose sizes the run used, else the sizes themselves."""
    from bench.model import PRESETS  # here: the model module imports torch

    sizes = tuple(cfg.get(k) for k in ("input_size", "hidden_size", "num_classes"))
    for name, size in PRESETS.items():
        if sizes == (size.input_size, size.hidden_size, size.num_classes):
            return name
    return "×".join(map(str, sizes))


def _gpu(env: dict, used: int) -> str:
    return "CPU" if env.get("device") == "cpu" else f"{env.get('gpu')} ×{used}"


def _values(values: list | tuple) -> str:
    return ",".join(map(str, values))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _timing(run: Run, base: Path) -> dict[str, str]:
    cfg = run.env.get("config", {})
    df = results.load(run.path)
    counts = df["status"].value_counts()
    expected = run.env.get("expected_cases") or len(df)
    status = f"{int(counts.get('ok', 0))} of {expected} ok"
    others = ", ".join(f"{n} {s}" for s, n in counts.items() if s != "ok")
    status += f" ({others})" if others else ""
    if "ended" not in run.env:
        status += "; did not finish"
    modes = _count(len(cfg.get("modes", [])), "mode")
    grid = f"{modes} × batch {_values(cfg.get('batch_sizes', []))} × "
    grid += _values(cfg.get("optimizers", []))
    variants = cfg.get("variants", ["eager"])
    grid += f" × {_values(variants)}" if variants != ["eager"] else ""
    parallels = cfg.get("parallels", ["none"])
    grid += f" × {_values(parallels)}" if parallels != ["none"] else ""
    ranks = int(cfg.get("world_size", 1))
    grid += f" on {ranks} ranks" if ranks > 1 else ""
    also = [_link(p.stem, p, base) for p in sorted(run.path.glob("compare_*.md"))]
    if (run.path / "numerics" / results.REPORT).is_file():
        also.append(_link("numerics", run.path / "numerics" / results.REPORT, base))
    return {
        "gpu": _gpu(run.env, ranks),
        "preset": cfg.get("preset") or _sizes(cfg),
        "grid": grid,
        "status": status,
        "headline": timing_headline(df),
        "also": ", ".join(also),
    }


def timing_headline(df: pd.DataFrame) -> str:
    """bf16-amp's fastest case at the largest batch size (or the fastest case there, when
    bf16-amp did not pass): samples/s, step time and speedup over fp32. In a run of several
    ranks, the fastest distributed case and its scaling efficiency."""
    ok = df[df["status"] == "ok"]
    several = ok["world_size"].max() > 1 and (ok["parallel"] != "none").any()
    if several:
        ok = ok[ok["parallel"] != "none"]
    if ok.empty:
        return "no case passed"
    at = ok[ok["batch_size"] == ok["batch_size"].max()]
    pick = at[at["mode"] == HEADLINE_MODE] if (at["mode"] == HEADLINE_MODE).any() else at
    r = pick.loc[pick["total_ms"].idxmin()]
    axes = [a for a in results.axes() if a not in ("mode", "batch_size") and ok[a].nunique() > 1]
    where = "".join(f", {r[a]}" for a in axes)
    speedup = f", {r['speedup_vs_fp32']:.3g}× fp32" if pd.notna(r.get("speedup_vs_fp32")) else ""
    if several and pd.notna(r.get("scaling_efficiency")):
        speedup += f", {r['scaling_efficiency']:.0%} scaling on {r['world_size']} ranks"
    return (
        f"{r['mode']}{where} at batch {r['batch_size']}: {r['samples_per_s']:,.0f} samples/s, "
        f"{r['total_ms']:.3g} ms/step{speedup}"
    )


def _csv_rows(path: Path) -> int:
    """Rows of a CSV file; 0 when it is missing or empty (a table with no rows may have no
    header either)."""
    try:
        return len(pd.read_csv(path))
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return 0


def _numerics(run: Run, base: Path) -> dict[str, str]:
    cfg = run.env.get("numerics_config", {})
    failed = _csv_rows(run.path / "failed.csv")
    kept = len(list((run.path / "jobs").glob("*.json"))) if (run.path / "jobs").is_dir() else 0
    modes = _count(len(cfg.get("modes", [])), "mode")
    seeds = _count(len(cfg.get("seeds", [])), "seed")
    grid = (
        f"lr {cfg.get('lr')}; {modes} × batch {_values(cfg.get('conv_batch_sizes', []))} × "
        f"{seeds} × {cfg.get('steps')} steps; census batch "
        f"{_values(cfg.get('census_batch_sizes', []))}"
    )
    if cfg.get("long_steps"):
        grid += f"; a {cfg['long_steps']}-step fp16-amp run"
    stress = {
        k: cfg[k]
        for k, default in (("loss_mult", 1.0), ("reduction", "mean"), ("init_scale", 1.0))
        if k in cfg and cfg[k] != default
    }
    grid += "".join(f"; stress {k} {v}" for k, v in stress.items())
    if "ended" in run.env:
        resumed = len(run.env.get("resumed", []))
        headline = "finished" + (f", resumed {resumed}×" if resumed else "")
    else:
        headline = f"did not finish ({kept} job(s) kept; `numerics --resume` goes on)"
    return {
        "gpu": _gpu(run.env, int(cfg.get("workers") or 1)),
        "preset": _sizes(cfg),
        "grid": grid,
        "status": f"{failed} job(s) failed" if failed else "no job failed",
        "headline": headline,
        "also": "",
    }


def _maxbatch(run: Run, base: Path) -> dict[str, str]:
    cfg = run.env.get("maxbatch_config", {})
    trials = pd.DataFrame(results.read_jsonl(run.path / "trials.jsonl"))
    if trials.empty:
        status, headline = "no trial", "no trial finished"
    else:
        counts = trials["status"].value_counts()
        status = ", ".join(f"{n} {s}" for s, n in counts.items()) + " trials"
        ok = trials[trials["status"] == "ok"]
        largest = ok.groupby(["mode", "variant"], sort=False)["batch_size"].max()
        headline = "largest batch: " + ", ".join(
            f"{mode}" + (f" {variant}" if variant != "eager" else "") + f" {bs}"
            for (mode, variant), bs in largest.items()
        )
    if "ended" not in run.env:
        status += "; did not finish"
    return {
        "gpu": _gpu(run.env, 1),
        "preset": cfg.get("preset", ""),
        "grid": f"{_count(len(cfg.get('modes', [])), 'mode')}, {cfg.get('optimizer')} Adam, "
        f"from batch {cfg.get('start')} up to {cfg.get('limit')}",
        "status": status,
        "headline": headline,
        "also": "",
    }


ROW = {TIMING: _timing, NUMERICS: _numerics, MAXBATCH: _maxbatch}
COLUMNS = {
    "folder": "folder (report)",
    "date": "started (UTC)",
    "kind": "kind",
    "gpu": "GPU × used",
    "torch": "torch",
    "commit": "commit",
    "preset": "model",
    "grid": "grid",
    "status": "status",
    "headline": "headline",
    "also": "also",
}


def row(run: Run, base: Path) -> dict[str, str]:
    """The index's row of one run folder; links are relative to `base` (the index's folder)."""
    report = run.path / results.REPORT
    name = run.path.name
    out = {
        "folder": _link(name, report, base) if report.is_file() else f"{name} (no report)",
        "date": _date(run.env),
        "kind": run.kind,
        "torch": str(run.env.get("torch", "")),
        "commit": _commit(run.env),
    }
    if run.kind in ROW:
        out.update(ROW[run.kind](run, base))
    return out


def _table(runs: list[Run], base: Path) -> str:
    df = pd.DataFrame([row(r, base) for r in runs]).reindex(columns=list(COLUMNS)).fillna("")
    # An empty column (no run links a comparison) says nothing: drop it.
    df = df[[c for c in df.columns if c != "also" or df[c].astype(bool).any()]]
    return df.rename(columns=COLUMNS).to_markdown(index=False)


# --- pytest-benchmark saves, loose files ------------------------------------------------------


def _saves(folder: Path) -> list[tuple[Path, dict]]:
    """pytest-benchmark saves under `folder` (one machine folder deep)."""
    out = []
    for path in sorted(folder.glob("*/*.json")) + sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and {"benchmarks", "machine_info"} <= data.keys():
            out.append((path, data))
    return out


def _saves_table(saves: list[tuple[Path, dict]], base: Path) -> str:
    rows = []
    for path, data in saves:
        extra = [b.get("extra_info", {}) for b in data["benchmarks"]]
        commit = data.get("commit_info", {}).get("id") or "unknown"
        rows.append(
            {
                "save": _link(path.name, path, base),
                "saved (UTC)": pd.Timestamp(data["datetime"]).strftime("%Y-%m-%d %H:%M"),
                "GPU": ", ".join(sorted({str(e.get("gpu")) for e in extra if e.get("gpu")})),
                "torch": ", ".join(sorted({str(e.get("torch")) for e in extra if e.get("torch")})),
                "optimizer": ", ".join(
                    sorted({str(e.get("optimizer")) for e in extra if e.get("optimizer")})
                ),
                "commit": commit if commit == "unknown" else f"`{commit[:7]}`",
                "benchmarks": len(data["benchmarks"]),
            }
        )
    return pd.DataFrame(rows).to_markdown(index=False)


def _files(folder: Path, base: Path, skip: set[Path]) -> list[str]:
    return [
        f"- {_link(p.name, p, base)}"
        for p in sorted(folder.iterdir())
        if p.is_file() and p not in skip and not p.name.startswith(".")
    ]


def render(results_dir: Path = paths.RESULTS) -> str:
    """The whole index of `results_dir`, as markdown."""
    base = results_dir
    runs = run_folders(results_dir)
    out = [
        "# Published runs",
        "",
        "<!-- Generated by `python -m bench index` from the folders themselves; a run into "
        "results/ rewrites it when it ends. Do not edit: write notes in NOTES.md. -->",
        "",
        "Every folder here was written by ampbench's own commands on the machine it names; each "
        "run folder's `env.json` and `report.md` give the exact `python -m bench` command. This "
        "page is generated from the folders; what a folder cannot tell (why a run was made, what "
        "happened on the machine, which runs supersede which) is in "
        + (f"[{NOTES}]({NOTES})" if (results_dir / NOTES).is_file() else f"{NOTES} (none yet)")
        + ".",
        "",
    ]
    top = [r for r in runs if r.path.parent == results_dir]
    if top:
        out += ["## Runs", "", _table(top, base), ""]
    for sub in sorted(p for p in results_dir.iterdir() if p.is_dir() and _run_at(p) is None):
        if sub.name == HISTORY_DIR:
            continue
        inside = [r for r in runs if r.path.parent == sub]
        saves = _saves(sub)
        out += [f"## {sub.name}/", ""]
        if inside:
            out += [_table(inside, base), ""]
        if saves:
            out += ["pytest-benchmark saves:", "", _saves_table(saves, base), ""]
        loose = _files(sub, base, {p for p, _ in saves})
        if loose:
            out += ["Other files:", "", *loose, ""]
    history = results_dir / HISTORY_DIR
    if history.is_dir():
        out += [
            "## Step time across runs, per GPU model",
            "",
            "From `python -m bench history`: each case's median step time in every timing run, "
            "by commit date, with its verdict against the run before.",
            "",
            *[f"- {_link(p.stem, p, base)}" for p in sorted(history.glob("*.md"))],
            "",
        ]
    loose = _files(results_dir, base, {results_dir / INDEX, results_dir / NOTES})
    if loose:
        out += ["## Logs and other files", "", *loose, ""]
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
