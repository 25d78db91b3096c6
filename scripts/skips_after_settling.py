"""Where GradScaler skipped timed steps after the scale settled, in one timing run: for each case
of a mode that scales its loss, the untimed steps settling took (`scale_warmup_steps`), the
timed steps it skipped (`skipped_steps`) and where they fell (window and step, from the `null`
samples of samples.jsonl), and the scale the run ended at (`grad_scale`).

    python scripts/skips_after_settling.py RUN_DIR [--out FILE]

prints the table and the counts (and writes them to FILE); docs/methodology.md quotes them."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.store import paths, results  # noqa: E402  after the project is on the path


def where_skipped(run: Path) -> dict[str, list[tuple[int, int]]]:
    """case id -> (window, step in it) of each timed step GradScaler skipped (NaN samples)."""
    steps = {r["case_id"]: int(r["steps"]) for r in results.read_rows(run / results.ROWS)}
    out = {}
    for rec in results.read_rows(run / results.SAMPLES):
        total, n = rec["samples_ms"]["total"], steps[rec["case_id"]]
        out[rec["case_id"]] = [divmod(i, n) for i, ms in enumerate(total) if math.isnan(ms)]
    return out


def report(run: Path) -> str:
    df = results.load(run)
    scaled = df[df["scale_loss"].astype(bool) & (df["status"] == "ok")]
    skipped = where_skipped(run)
    lines = [
        f"# GradScaler's skipped timed steps after settling: {paths.shown(run)}",
        "",
        "| case | settling steps | timed steps | skipped | where (window:step) | final scale |",
        "|---|---|---|---|---|---|",
    ]
    for r in scaled.itertuples():
        at = ", ".join(f"{w}:{s}" for w, s in skipped.get(r.case_id, [])) or "–"
        timed = int(r.windows) * int(r.steps)
        lines.append(
            f"| {r.case_id} | {int(r.scale_warmup_steps)} | {timed} | {int(r.skipped_steps)} | "
            f"{at} | {r.grad_scale:g} |"
        )
    hit = scaled[scaled["skipped_steps"] > 0]
    first = sum(1 for cid in hit["case_id"] for w, s in skipped.get(cid, []) if w == 0 and s < 2)
    total = int((scaled["windows"] * scaled["steps"]).sum())
    lines += [
        "",
        f"{len(scaled)} cases of a mode that scales its loss; {len(hit)} skipped a timed step "
        f"({int(hit['skipped_steps'].sum())} of their {int((hit['windows'] * hit['steps']).sum())} "
        f"timed steps; {int(scaled['skipped_steps'].sum())} of all {total}), "
        f"{first} of them the first window's first two steps; settling took "
        f"{', '.join(str(int(v)) for v in sorted(set(hit['scale_warmup_steps'])))} steps in "
        f"those cases, {int(scaled['scale_warmup_steps'].min())} to "
        f"{int(scaled['scale_warmup_steps'].max())} in all.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/skips_after_settling.py")
    parser.add_argument("run", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    text = report(args.run)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
