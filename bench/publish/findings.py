"""The lines that open a run's report: what this run found, and how the harness compared with a
plain loop in the same run. Reads rows and env.json; judges nothing against expectations."""

from __future__ import annotations

import pandas as pd

from bench.ground import catalog
from bench.store import results
from bench.store.run_env import RunEnv
from bench.text import tables
from bench.text.tables import joined
from bench.verdicts import timing


def float8_cell(listed: object) -> object:
    """A row's `fp8_linears` as a table cell: the list for a few Linears, else the count per
    decision (`bench.verdicts.timing.plan_summary`); results.csv keeps it whole."""
    if not isinstance(listed, str) or not listed:
        return listed
    return timing.plan_summary(timing.plan_of(listed))


def unconverted_note(modes: list[str]) -> str:
    """` fp8-rowwise converts no Linear of this model: unsupported.`; empty without such modes."""
    if not modes:
        return ""
    verb = "converts" if len(modes) == 1 else "convert"
    return f" {joined(modes)} {verb} no Linear of this model: unsupported."


def float8_ratio(base: pd.Series, row: pd.Series) -> str:
    """`fp8-rowwise 1.062× (compile, 20.69 ms)`, the headline mode's fastest row `base` over a
    float8 mode's `row`; `, within noise` where their intervals overlap
    (`bench.verdicts.timing.overlap`)."""
    c = tables.cell
    noise = ", within noise" if timing.overlap(base, row) else ""
    return (
        f"{row['mode']} {c(base['total_ms'] / row['total_ms'])}× ({row['variant']}, "
        f"{c(row['total_ms'])} ms{noise})"
    )


def not_paying(modes: list[str], where: str = "here") -> str:
    """` Below 1×, fp8-rowwise does not pay here.`, naming `modes`; empty when there are none."""
    if not modes:
        return ""
    verb = "does" if len(modes) == 1 else "do"
    return f" Below 1×, {joined(modes)} {verb} not pay {where}."


def _float8(ok: pd.DataFrame) -> list[str]:
    """Per batch size, each float8 mode against the headline mode, at its fastest variant."""
    c = tables.cell
    head = catalog.headline()
    return [
        f"- Batch {bs}, float8 against {head} ({c(base['total_ms'])} ms), each at its fastest "
        f"variant: {'; '.join(float8_ratio(base, r) for r in rows)}."
        + not_paying(timing.float8_not_paying(base, rows))
        for bs, base, rows in timing.float8_against_headline(ok)
    ]


def findings(df: pd.DataFrame, optimizer: str) -> list[str]:
    """One bullet per batch size (the fastest mode or those tied with it, against the
    reference, and peak memory), then float8 against the headline mode and the gradients' dtypes."""
    ok = timing.contenders(df)
    ok = ok[(ok["optimizer"] == optimizer) & (ok["parallel"] == "none")]
    if ok.empty:
        return []
    c = tables.cell
    ref = catalog.reference()
    speedup = results.SPEEDUP_COLUMNS[ref]
    lines = []
    for bs, g in ok.groupby("batch_size", sort=True):
        fastest = timing.fastest(g)
        line = f"- Batch {bs}, {optimizer} Adam: "
        # A run of several seeds (the `sweep` driver's) has a row per seed: name it.
        several = "seed" in g and g["seed"].nunique() > 1
        seed = (lambda r: f"seed {r['seed']}, ") if several else (lambda r: "")
        if fastest.tie:
            named = [
                f"{r['mode']} ({seed(r)}{r['variant']}, {c(r['total_ms'])} ms"
                + (f", {c(r[speedup])}× {ref} at its variant)" if pd.notna(r.get(speedup)) else ")")
                for _, r in fastest.rows.iterrows()
            ]
            line += f"tied within noise ({fastest.reason}): {joined(named)}"
        else:
            best = fastest.first
            line += (
                f"the fastest is {best['mode']} ({seed(best)}{best['variant']}), "
                f"{c(best['total_ms'])} ms "
                "per step"
            )
            if pd.notna(best.get(speedup)):
                line += f", {c(best[speedup])}× {ref} at the same variant"
        peak = g["peak_alloc_gib"].dropna()
        if len(peak):
            low, high = g.loc[peak.idxmin()], g.loc[peak.idxmax()]
            line += (
                f"; peak memory from {c(low['peak_alloc_gib'])} GiB ({low['mode']}, "
                f"{low['variant']}) to {c(high['peak_alloc_gib'])} GiB ({high['mode']}, "
                f"{high['variant']})"
            )
        lines.append(line + ".")
    lines += _float8(ok)
    unconverted = unconverted_note(timing.float8_unconverted(df))
    if unconverted:
        lines.append(f"-{unconverted}")
    if "param_grad_dtype" in ok:
        by_dtype = ok.drop_duplicates("mode").groupby("param_grad_dtype", sort=False)["mode"]
        parts = [f"{dtype} in {', '.join(modes)}" for dtype, modes in by_dtype]
        if parts:
            lines.append(f"- The parameters' gradients (`param.grad`) are {'; '.join(parts)}.")
    return lines


def overhead_rows(df: pd.DataFrame, env: RunEnv) -> pd.DataFrame:
    """The harness against a plain loop, per case measured: step times and peak allocation."""
    measured = env.get("overhead") or []
    rows = []
    has_peaks = {"case_id", "peak_alloc_gib"} <= set(df.columns)
    peaks = df.set_index("case_id")["peak_alloc_gib"] if has_peaks else pd.Series(dtype=float)
    for ov in measured:
        if "error" in ov:
            rows.append({"case": ov.get("case_id", "–"), "note": ov["error"]})
            continue
        peak = peaks.get(ov["case_id"], float("nan"))
        bare_peak = ov.get("bare_peak_alloc_gib", float("nan"))
        rows.append(
            {
                "case": ov["case_id"],
                "harness ms": ov["harness_ms"],
                "plain loop ms": ov["bare_ms"],
                "time Δ %": ov["overhead_pct"],
                "harness mean ms": ov["harness_mean_ms"],
                "mean Δ %": ov["mean_overhead_pct"],
                "row peak GiB": peak,
                "plain loop peak GiB": bare_peak,
                "peak Δ %": (peak / bare_peak - 1) * 100,
            }
        )
    return pd.DataFrame(rows)


def overhead_section(df: pd.DataFrame, env: RunEnv) -> list[str]:
    """The harness-against-a-plain-loop section, or nothing when the run did not measure it."""
    table = overhead_rows(df, env)
    if table.empty:
        return []
    out = [
        "## The harness against a plain loop",
        "",
        "The same train step on one state, alternating the harness's timed window (an event "
        "pair per phase) with a plain loop that records one event pair per window of steps. "
        "`time Δ %`: the harness's median step against the loop's mean step; `mean Δ %`: the "
        "harness's mean step against it (like with like; the two differ by the tail of the step "
        "times). `row peak GiB`: the case's row (its own memory pass, against the allocation at "
        "the case's start); `plain loop peak GiB`: the highest allocation over the loop's "
        "windows, against the allocation before its state was built.",
        "",
    ]
    if "note" in table:
        table["note"] = table["note"].fillna("")
    return [*out, tables.markdown(table), ""]
