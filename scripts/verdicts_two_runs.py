"""Two timing runs of one grid side by side: their step times and the verdicts their reports
draw, for the cases `ok` in both.

- ratio: B's `total_ms` over A's per case (as `./run_bench.sh compare` prints it), its
  percentiles, and how many cases lie within 2% and 5%;
- fastest: for each batch size, Adam and variant, the mode `bench.verdicts.timing.fastest`
  names (alone) or the modes it ties within noise, in A and in B, and whether they agree;
- noisy: the cases each run flags;
- variants (added in the nineteenth session): for each batch size, mode and Adam, the variant
  the report's "Execution variants" table names `best` (`bench.publish.variants`: alone, or the
  variants tied within noise), in A and in B;
- for both kinds of verdict, each difference is `compatible` where one run names alone what the
  other names in a tie, or two ties share a member, and `CONTRADICTS` where no named one is
  common to both.

Usage, from the repository root: `PYTHONPATH=. python scripts/verdicts_two_runs.py A B`.
"""

import sys

import numpy as np
import pandas as pd

from bench.publish import variants
from bench.store import results
from bench.verdicts import timing

KEYS = ["device", "mode", "optimizer", "variant", "batch_size"]
GROUP = ["batch_size", "optimizer", "variant"]


def ok_rows(folder: str) -> pd.DataFrame:
    df = results.load(folder)
    return df[df["status"] == "ok"].set_index(KEYS)


def verdict(group: pd.DataFrame) -> str:
    found = timing.fastest(group.reset_index())
    return ("tie: " if found.tie else "") + ", ".join(sorted(found.modes))


def named(word: str) -> set[str]:
    """The modes or variants a verdict names, alone or tied."""
    return set(word.split(": ", 1)[-1].split(", "))


def kind(va: str, vb: str) -> str:
    if va == vb:
        return "same"
    return "compatible" if named(va) & named(vb) else "CONTRADICTS"


def best_variants(folder: str) -> dict:
    df = results.load(folder)
    best = variants._best_variants(df[df["status"] == "ok"])
    return {
        (r.batch_size, r.mode, r.optimizer): (
            "tie: " + ", ".join(sorted(r.named)) if len(r.named) > 1 else r.named[0]
        )
        for r in best.itertuples()
    }


def main(a_dir: str, b_dir: str) -> None:
    a, b = ok_rows(a_dir), ok_rows(b_dir)
    both = a.index.intersection(b.index)
    a, b = a.loc[both], b.loc[both]
    ratio = b["total_ms"] / a["total_ms"]
    print(f"A: {a_dir}\nB: {b_dir}\n{len(both)} cases ok in both")
    if both.empty:
        return
    pct = np.round(np.percentile(ratio, [5, 25, 50, 75, 95]), 4)
    print(
        "ratio B/A percentiles 5/25/50/75/95:",
        pct,
        "min",
        round(ratio.min(), 4),
        "max",
        round(ratio.max(), 4),
    )
    print(
        "within +-2%:",
        int((abs(ratio - 1) <= 0.02).sum()),
        " within +-5%:",
        int((abs(ratio - 1) <= 0.05).sum()),
    )
    if "windows" in b:
        print("B's windows per case:", b["windows"].value_counts().sort_index().to_dict())
    print(
        "noisy in A:",
        int(a["noisy"].astype(bool).sum()),
        " in B:",
        int(b["noisy"].astype(bool).sum()),
    )
    same = 0
    lines, kinds = [], []
    for key, ga in a.groupby(level=GROUP):
        gb = b.loc[ga.index]
        va, vb = verdict(ga), verdict(gb)
        same += va == vb
        kinds.append(kind(va, vb))
        lines.append(f"  {'same ' if va == vb else 'DIFF '} {key}: A {va} | B {vb}")
    print(f"fastest per batch size, Adam and variant: {same} of {len(lines)} groups agree")
    print("\n".join(lines))
    print("  differences:", {k: kinds.count(k) for k in ("compatible", "CONTRADICTS")})
    best_a, best_b = best_variants(a_dir), best_variants(b_dir)
    common = sorted(set(best_a) & set(best_b))
    kinds = [kind(best_a[k], best_b[k]) for k in common]
    print(
        f"best variant per batch size, mode and Adam: {kinds.count('same')} of {len(common)} "
        "agree; differences:",
        {k: kinds.count(k) for k in ("compatible", "CONTRADICTS")},
    )
    for key, word in zip(common, kinds, strict=True):
        if word != "same":
            print(f"  {word:11} {key}: A {best_a[key]} | B {best_b[key]}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
