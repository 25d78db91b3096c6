"""How far a case's peak allocated memory moves between fresh processes of the same code: the A/A
spread that the memory verdicts' default tolerance (`bench.verdicts.memory.DEFAULT`) rests on.

Reads every timing run folder under RESULTS (at any depth: `ab`'s A/ and B/ included) and every
pytest-benchmark save (JSON) there. Run folders of one GPU, commit, torch and grid (their run
config; code committed, not dirty) are one group; saves of one known commit and GPU another. In
each group, each case (a run's `case_id`, a save's benchmark name) measured in two processes or
more gives one row: how many processes, the lowest and highest peak, the spread (highest less
lowest) in MiB and in percent of the lowest. Writes OUT/spread.csv and OUT/spread.md (the rows and
a summary), and the same over runs of one commit whatever their grid (OUT/across_grids.csv);
prints the summaries.

Usage: python scripts/memory_aa_spread.py [RESULTS] [OUT]   (defaults: results results/memory-aa)
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.store import results  # noqa: E402
from bench.text import tables  # noqa: E402

MIB_PER_GIB = 1024


def _run_peaks(root: Path) -> list[dict]:
    """One record per passing case of every CUDA timing run under `root`, with its group."""
    out = []
    for rows in sorted(root.rglob(results.ROWS)):
        folder = rows.parent
        if not (folder / results.ENV).is_file():
            continue
        env = results.read_env(folder)
        if "config" not in env or not env.get("commit") or env.get("dirty"):
            continue  # not a timing run, or code that is not one commit
        df = results.load(folder)
        ok = df[(df["status"] == "ok") & df["peak_alloc_gib"].notna()]
        # One grid: a case's peak can follow what ran before it in the process (a DDP case of
        # two grids of one commit differed by 9%), and `ab` runs one grid on both sides.
        grid = hashlib.sha1(json.dumps(env["config"], sort_keys=True).encode()).hexdigest()[:6]
        torch = env.get("torch")
        group = f"runs of {str(env['commit'])[:7]} on {env.get('gpu')} (torch {torch}, grid {grid})"
        for rec in ok.to_dict("records"):
            out.append({"group": group, "case": rec["case_id"], "process": str(folder),
                        "peak_alloc_gib": float(rec["peak_alloc_gib"])})  # fmt: skip
    return out


def _save_peaks(root: Path) -> list[dict]:
    """One record per benchmark with a peak of every pytest-benchmark save under `root`."""
    out = []
    for path in sorted(root.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
            continue
        commit = str((data.get("commit_info") or {}).get("id") or "")[:7]
        if commit in ("", "unknown") or (data.get("commit_info") or {}).get("dirty"):
            continue
        for bench in data["benchmarks"]:
            info = bench.get("extra_info") or {}
            peak = info.get("peak_alloc_gib")
            if isinstance(peak, (int, float)) and math.isfinite(peak):
                group = f"pytest-benchmark saves of {commit} on {info.get('gpu')}"
                out.append({"group": group, "case": bench["name"], "process": str(path),
                            "peak_alloc_gib": float(peak)})  # fmt: skip
    return out


def spread(records: list[dict]) -> pd.DataFrame:
    """Per group and case seen in two processes or more: processes, lowest, highest, spread."""
    df = pd.DataFrame(records, columns=["group", "case", "process", "peak_alloc_gib"])
    g = df.groupby(["group", "case"], sort=True)["peak_alloc_gib"]
    out = pd.DataFrame({"processes": g.size(), "lowest_gib": g.min(), "highest_gib": g.max()})
    out = out[out["processes"] >= 2].reset_index()
    out["spread_mib"] = (out["highest_gib"] - out["lowest_gib"]) * MIB_PER_GIB
    out["spread_pct"] = (out["highest_gib"] / out["lowest_gib"] - 1) * 100
    return out


def summary(table: pd.DataFrame) -> str:
    if table.empty:
        return "No case was measured in two processes of one commit: no A/A spread."
    zero = int((table["spread_mib"] == 0).sum())
    return (
        f"{len(table)} cases measured in 2 to {int(table['processes'].max())} fresh processes of "
        f"one commit ({table['group'].nunique()} groups, {int(table['processes'].sum())} "
        f"measurements): {zero} of {len(table)} had the same peak allocated memory to the byte "
        f"in every process; the largest spread was {table['spread_mib'].max():.4g} MiB "
        f"({table['spread_pct'].max():.3g}% of the case's peak)."
    )


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else ROOT / "results"
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "results" / "memory-aa"
    records = _run_peaks(root) + _save_peaks(root)
    table = spread(records)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "spread.csv", index=False)
    anygrid = [{**r, "group": r["group"].split(", grid ")[0]} for r in records]
    across = spread([r for r in anygrid if r["group"].startswith("runs")])
    across.to_csv(out / "across_grids.csv", index=False)
    text = summary(table) + (
        "\n\nRuns of one commit whatever their grid (some with other run options, where a "
        f"case follows other cases in its process): {summary(across)}"
        if not across.empty
        else ""
    )
    shown = table.assign(group=table["group"].str.replace(str(ROOT) + "/", "", regex=False))
    (out / "spread.md").write_text(
        "# Peak allocated memory between fresh processes of one commit (A/A)\n\n"
        "<!-- Generated by scripts/memory_aa_spread.py; do not edit. -->\n\n"
        f"{text}\n\n{tables.markdown(shown) if not shown.empty else ''}\n"
    )
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
