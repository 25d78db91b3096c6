"""Execution variants against eager, and the fastest mode: a timing run's report section
(`section`) and the README blocks' tables (`best_variant_table`, `fastest_table`)."""

from __future__ import annotations

import pandas as pd

from bench.ground import catalog
from bench.publish.summary import passing
from bench.store import results
from bench.text import tables
from bench.verdicts import timing


def _best_variants(df: pd.DataFrame) -> pd.DataFrame:
    """Per mode, optimizer and batch size: eager's time, the fastest variant (or every variant
    tied with it) and its time; `best_vs_eager` is NaN where eager is among the tied."""
    ok = timing.contenders(df)
    keys = [a for a in results.axes() if a != "variant"]
    rows = []
    for key, g in ok.groupby(keys, sort=False):
        eager = g[g["variant"] == "eager"]
        found = timing.fastest(g)
        best = found.first
        named = tuple(found.rows["variant"])
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "eager_ms": eager["total_ms"].iloc[0] if len(eager) else float("nan"),
                "best_variant": ("tied: " if found.tie else "") + ", ".join(named),
                "named": named,
                "variants": int(g["total_ms"].notna().sum()),
                "eager_tied": found.tie and "eager" in named,
                "best_ms": best["total_ms"],
                "best_pct_of_floor": best["pct_of_floor"],
            }
        )
    out = pd.DataFrame(rows)
    if not out.empty:
        out["best_vs_eager"] = (out["eager_ms"] / out["best_ms"]).where(~out["eager_tied"])
    return out


def best_variant_table(df: pd.DataFrame, optimizer: str = "fused") -> str:
    """Per mode (rows) and batch size (columns): the fastest variant (`compile ≈ eager` where
    tied), eager's time over its time, and both times, with the given optimizer."""
    best = _best_variants(df)
    best = best[best["optimizer"] == optimizer]
    if best.empty:
        return f"(no successful cases with {optimizer} Adam)"
    table = {
        mode: {
            f"batch {r.batch_size}": f"{_tie_words(r.named, r.variants)}"
            + ("" if r.eager_tied else f", {r.best_vs_eager:.3f}×")
            + f" ({r.eager_ms:.3g} → {r.best_ms:.3g} ms)"
            for r in g.itertuples()
        }
        for mode, g in best.groupby("mode", sort=False)
    }
    wide = pd.DataFrame.from_dict(table, orient="index")
    head = f"{optimizer} Adam; fastest variant (≈: tied within noise), × eager (eager ms → its ms)"
    return f"{head}:\n\n" + tables.markdown(wide.rename_axis("mode").reset_index())


def _tie_words(named: tuple[str, ...], variants: int) -> str:
    """`compile`, `compile ≈ eager` (a tie, lowest median first) or `all 5 tied`."""
    if len(named) > 2 and len(named) == variants:
        return f"all {variants} tied"
    return " ≈ ".join(named)


def fastest_table(df: pd.DataFrame, optimizer: str = "fused") -> str:
    """Per batch size: the fastest mode and variant (or those tied), its step time and speed-ups,
    its peak memory over the headline mode's, and the runner-up with its time."""
    head, ref = catalog.headline(), catalog.reference()
    ok = passing(df, optimizer)
    if ok.empty:
        return f"(no successful cases with {optimizer} Adam)"
    rows = []
    for bs, g in ok.groupby("batch_size"):
        fastest = timing.fastest(g)
        best = fastest.first
        named = [f"{r['mode']} ({r['variant']})" for _, r in fastest.rows.iterrows()]
        if len(fastest.modes) == 1 and fastest.tie:  # one mode, its variants tied
            others = " and ".join(fastest.rows["variant"].iloc[1:])
            named = [f"{best['mode']} ({best['variant']}; {others} tied)"]
        rest = g.drop(fastest.rows.index).sort_values("total_ms")
        second = rest[rest["mode"] != best["mode"]].head(1)
        amp = g[g["mode"] == head]
        amp_eager = amp[amp["variant"] == "eager"]["total_ms"]
        fp32 = g[(g["mode"] == ref) & (g["variant"] == "eager")]["total_ms"]
        amp_same = amp[amp["variant"] == best["variant"]]["peak_alloc_gib"]
        nan = float("nan")
        rows.append(
            {
                "batch": int(bs),
                "fastest": f"tied: {', '.join(named)}" if len(named) > 1 else named[0],
                "ms": best["total_ms"],
                f"× best {head}": amp["total_ms"].min() / best["total_ms"] if len(amp) else nan,
                f"× eager {head}": (
                    amp_eager.iloc[0] / best["total_ms"] if len(amp_eager) else nan
                ),
                f"× eager {ref}": fp32.iloc[0] / best["total_ms"] if len(fp32) else nan,
                f"peak / {head}'s": (
                    best["peak_alloc_gib"] / amp_same.iloc[0] if len(amp_same) else nan
                ),
                "runner-up": (
                    f"{second['mode'].iloc[0]} ({second['variant'].iloc[0]}), "
                    f"{second['total_ms'].iloc[0]:.3g} ms"
                    if len(second)
                    else ""
                ),
            }
        )
    return f"{optimizer} Adam; the fastest mode and variant per batch size:\n\n" + pd.DataFrame(
        rows
    ).pipe(tables.markdown)


def section(df: pd.DataFrame) -> list[str]:
    """Each variant's step time against eager's, and its price before timing (compile, capture)."""
    if set(df["variant"]) <= {"eager"}:
        return []
    ok = df[df["status"] == "ok"]
    out = [
        "## Execution variants",
        "",
        "Median step time (ms) of each variant; `best` is the fastest, named alone only where "
        "its p10–p90 clears the other variants' and it is not noisy, else `tied:` with every "
        "variant inside its noise, lowest median first; `× eager` eager's time over the lowest "
        "median's (– where eager is among the tied: no speed-up inside the noise). "
        "`prepare s`: host seconds spent compiling or capturing before the timed window (never "
        "inside it).",
        "",
    ]
    for bs, group in ok.groupby("batch_size", sort=True):
        wide = group.pivot_table(
            index=["mode", "optimizer"], columns="variant", values="total_ms", sort=False
        )
        best = _best_variants(group).set_index(["mode", "optimizer"])
        wide["best"] = best["best_variant"]
        wide["× eager"] = best["best_vs_eager"]
        out += [
            f"### Batch size {bs}",
            "",
            tables.markdown(wide.reset_index()),
            "",
        ]
    if "prepare_s" not in ok or ok.empty:
        return out
    prep = ok.pivot_table(
        index=["mode", "optimizer", "batch_size"], columns="variant", values="prepare_s", sort=False
    )
    out += [
        "### Preparation (s)",
        "",
        tables.markdown(prep.reset_index()),
        "",
    ]
    notes = df[df.get("eager_parts", pd.Series("", index=df.index)).fillna("").astype(bool)]
    if not notes.empty:
        out += ["Parts of the step that ran outside the graph:", ""]
        out += [f"- `{r.case_id}`: {r.eager_parts}" for r in notes.itertuples()]
        out.append("")
    if "recompiled" in df:
        again = df[df["recompiled"].fillna(False).astype(bool)]
        out += [
            f"Cases that compiled again during the timed window: {len(again)}"
            + (": " + ", ".join(f"`{c}`" for c in again["case_id"]) if len(again) else "."),
            "",
        ]
    return out
