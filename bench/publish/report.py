"""A timing run's report: its DataFrame and env.json into report.md and its figures (`write`),
the sections in order (`render`), and the headline the README quotes (`headline`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.faults import by_reason
from bench.ground import cards
from bench.publish import columns, findings, method, plots, ranks, scaler_cost, variants
from bench.store import errors, results
from bench.store.run_env import RunEnv
from bench.text import tables
from bench.verdicts import timing


def headline_optimizer(df: pd.DataFrame) -> str:
    """The optimizer a run's headline shows: fused Adam where the run has it, else its first."""
    optimizers = list(dict.fromkeys(df["optimizer"])) if "optimizer" in df else []
    return "fused" if "fused" in optimizers or not optimizers else str(optimizers[0])


NO_HEADLINE = "(no successful cases)"
"""What `headline` gives for a run where no case of the headline optimizer passed."""


def headline(df: pd.DataFrame, batch_size: int | None = None, optimizer: str | None = None) -> str:
    """The README's table: every mode, eager (else the run's first variant), at the largest
    batch size where the headline optimizer has a case that passed; a run of several ranks alone,
    its distributed rows (`distributed_headline`)."""
    optimizer = optimizer or headline_optimizer(df)
    df = timing.float8_as_unsupported(df)
    passed = df[(df["status"] == "ok") & (df["optimizer"] == optimizer)]
    ok = passed[passed["parallel"] == "none"]
    if ok.empty:
        return distributed_headline(passed, batch_size, optimizer) if len(passed) else NO_HEADLINE
    variant = "eager" if (ok["variant"] == "eager").any() else str(ok["variant"].iloc[0])
    ok = ok[ok["variant"] == variant]
    bs = batch_size or int(ok["batch_size"].max())
    sel = df[
        (df["batch_size"] == bs)
        & (df["optimizer"] == optimizer)
        & (df["variant"] == variant)
        & (df["parallel"] == "none")
    ]
    shown = sel[sel["status"] == "ok"]
    # A run of several seeds (the `sweep` driver's) has a row per seed: name it.
    seeds = {"seed": "seed"} if "seed" in shown and shown["seed"].nunique() > 1 else {}
    out = f"Batch size {bs}, {optimizer} Adam, {variant}:\n\n" + columns.table(
        shown, {"mode": "mode", **seeds, **columns.HEADLINE}
    )
    if results.own_loop_rows(shown).any():  # the driver prints it beside sweep.md
        out += f"\n\n{columns.OWN_LOOP_SPEEDUP}"
    others = sel[sel["status"] != "ok"]
    if len(others):
        # Not dropped: named, with their status; the report's last section says why.
        named = ", ".join(
            f"{m} ({st})" for m, st in zip(others["mode"], others["status"], strict=True)
        )
        out += f"\n\nNot in the table: {named} (see the cases that did not pass)."
    return out


NO_BASELINE = (
    "No `parallel=none` case passed, so there is no one-GPU baseline: scaling efficiency is "
    "measured against it (add `none` to `--parallel`)."
)
"""What a run of several ranks lacks when none of its one-GPU cases passed."""


def distributed_headline(passed: pd.DataFrame, batch_size: int | None, optimizer: str) -> str:
    """A run of distributed cases alone: every mode and parallelism at the largest batch per
    GPU, after the line that says what is missing."""
    variant = "eager" if (passed["variant"] == "eager").any() else str(passed["variant"].iloc[0])
    rows = passed[passed["variant"] == variant]
    bs = batch_size or int(rows["batch_size"].max())
    rows = rows[rows["batch_size"] == bs]
    shown = {"mode": "mode", "parallel": "parallel"}
    shown |= {k: v for k, v in columns.RANK.items() if k not in ("status", "scaling_efficiency")}
    ranks = int(rows["world_size"].max())
    return (
        f"{NO_BASELINE}\n\nBatch size {bs} per GPU on {ranks} ranks, {optimizer} Adam, "
        f"{variant}:\n\n{columns.table(rows, shown)}"
    )


def _headline_or_why(df: pd.DataFrame, optimizer: str) -> str:
    """The headline table, or, for a run without an eager case that passed (one that timed
    only compiled or graphed variants), why it has none: its tables are further down."""
    eager = df[(df["variant"] == "eager") & (df["parallel"] == "none") & (df["status"] == "ok")]
    if eager.empty:
        return (
            "No headline table: it shows the eager step on one GPU, and this run has no such "
            "case that passed. What it ran is in the tables below."
        )
    return headline(df, optimizer=optimizer)


def _above_floor(df: pd.DataFrame) -> list[str]:
    """A sentence for rows above 100% of floor: the floor is built from ceilings measured on one
    GEMM size, and a step whose own matmuls run faster than that GEMM beats it."""
    if "pct_of_floor" not in df:
        return []
    above = df[(df["status"] == "ok") & (df["pct_of_floor"] > 100)]
    if above.empty:
        return []
    worst = above.loc[above["pct_of_floor"].idxmax()]
    return [
        f"{len(above)} row(s) run faster than their floor (up to {worst['pct_of_floor']:.1f}%, "
        f"`{worst['case_id']}`): the ceilings are measured on one GEMM size (see Measured "
        "ceilings), and these steps' own matmuls ran faster than it did, so for them the floor "
        "is that much too high.",
        "",
    ]


def _status_lines(df: pd.DataFrame, env: RunEnv) -> list[str]:
    """The first lines of a report: how many cases passed, and whether the run finished."""
    expected = env.get("expected_cases")
    counts = df["status"].value_counts()
    ok = int(counts.get("ok", 0))
    parts = ", ".join(f"{n} {status}" for status, n in counts.items()) or "no rows"
    lines = [f"**Cases: {ok} of {expected if expected else len(df)} ok** ({parts})."]
    if expected and len(df) < expected:
        lines.append(
            f"**This run stopped early**: {expected - len(df)} of {expected} cases have no row"
            f"{_missing(env, df)}. Resume it with `./run_bench.sh --resume RUN_DIR`, RUN_DIR "
            "being this folder: it runs only those."
        )
    elif "ended" not in env:
        lines.append("**This run did not finish** (no end time in env.json).")
    if ok == 0:
        lines.append("**No case passed**: every figure below is missing; see the failures.")
    models = sorted(set(df["model"])) if "model" in df else []
    if models and models != [cards.DEFAULT]:  # the default model goes without saying
        # An own loop's rows have no preset: the user's model is its own size.
        presets = sorted(str(p) for p in set(df["preset"]) if str(p)) if "preset" in df else []
        preset = f", preset {', '.join(presets)}" if presets else ""
        unit = " Throughput is also in tokens/s." if "tokens_per_s" in df else ""
        what = f": {env['model_description']}" if env.get("model_description") else ""
        lines.append(f"Model: {', '.join(models)}{preset}{what}.{unit}")
    return [*lines, ""]


NAMED_MISSING = 12
"""The most missing cases the status lines name; the rest are counted."""


def _missing(env: RunEnv, df: pd.DataFrame) -> str:
    """`: a, b and 3 more`: the cases an interruption left without a row, as env.json lists
    them (`missing_cases`); empty for a folder that does not say (one killed outright)."""
    have = set(df["case_id"]) if "case_id" in df else set()
    missing = [c for c in env.get("missing_cases") or [] if c not in have]
    if not missing:
        return ""
    named = ", ".join(f"`{c}`" for c in missing[:NAMED_MISSING])
    more = len(missing) - NAMED_MISSING
    return f": {named}" + (f" and {more} more" if more > 0 else "")


def _figure(figures: dict[str, str], name: str, alt: str) -> list[str]:
    """The markdown that embeds one figure, if it was drawn."""
    return [f"![{alt}]({figures[name]})", ""] if name in figures else []


def _cpu_note(left: dict[str, str]) -> str:
    """What a CPU run does not measure, said once, and what its default grid left out."""
    note = (
        "**CPU smoke run**: these figures exercise the harness on the CPU; they say nothing "
        "about GPU training speed. Not measured on the CPU, so `–`: peak memory (it comes from "
        "the CUDA allocator's counters), and the matmul floors and `% of floor` (a CPU's "
        "matmul rate bounds nothing: bench/measure/ceilings.py); the optimizer's floor is measured."
    )
    if left:
        note += f" Left out of the default grid, as they cannot run here: {by_reason(left)}."
    return note


def render(df: pd.DataFrame, env: RunEnv, figures: dict[str, str] | None = None) -> str:
    """The whole report.md of a run, `figures` (from `plots.write_all`) in their sections: what
    the run found, then the detail, then how the run was made."""
    figures = figures or {}
    # An older folder's float8 row that converted no Linear ran bf16 autocast's step: read as
    # the `unsupported` row a new run writes for it.
    df = timing.float8_as_unsupported(df)
    out = [f"# ampbench run `{env.get('run_name', '')}`", "", *_status_lines(df, env)]
    df = df.copy()
    df.attrs["cpu"] = env.get("device") == "cpu"
    lead = columns.shown_axes(df)
    out += _opening(df, env, figures)
    out += _time_section(df, lead)
    out += scaler_cost.section(df, env)
    out += ranks.section(df)
    out += variants.section(df)
    out += _floor_section(df, lead, figures)
    out += _memory_section(df, lead, figures)
    out += _dtypes_section(df)
    out += findings.overhead_section(df, env)
    out += method.section(env)
    out += _failed_section(df)
    out += _notes_section(df)
    return "\n".join(out)


def _opening(df: pd.DataFrame, env: RunEnv, figures: dict[str, str]) -> list[str]:
    """What a reader sees before the detail: the CPU note, the findings with the headline table
    and throughput figure, and a link to the numerics study the run began with."""
    out = []
    if env.get("device") == "cpu":
        out += [_cpu_note(env.get("config", {}).get("left_out") or {}), ""]
    optimizer = headline_optimizer(df)
    found = findings.findings(df, optimizer)
    if found:
        out += ["## What this run found", "", *found, ""]
        out += [_headline_or_why(df, optimizer), ""]
        out += _figure(figures, "throughput", "throughput per mode and batch size")
    if env.get("config", {}).get("numerics"):
        out += [
            "This run began with a short numerics study, in this process and before the timed "
            "cases: [numerics/report.md](numerics/report.md) (dtype audit, underflow census, "
            "200 convergence steps, the Answer).",
            "",
        ]
    return out


def _by_batch(df: pd.DataFrame, shown: dict[str, str]) -> list[str]:
    """One table of the `shown` columns per batch size, smallest first."""
    out = []
    for bs, group in df.groupby("batch_size", sort=True):
        out += [f"### Batch size {bs}", "", columns.table(group, shown), ""]
    return out


def _time_section(df: pd.DataFrame, lead: dict[str, str]) -> list[str]:
    """The median time of each phase and the speedups, per batch size."""
    return [
        "## Time per step",
        "",
        "Medians over the timed steps, in ms. `optim` is the optimizer phase (GradScaler "
        "unscale/step/update, Adam, zero_grad). Speedups are the base mode's total time over "
        "this row's (above 1 is faster). `noisy`: IQR above 5% of the median.",
        "",
        *method.windows_line(df),
        *method.skipped_line(df),
        *_by_batch(df, {**lead, **columns.TIME}),
    ]


def _floor_section(df: pd.DataFrame, lead: dict[str, str], figures: dict[str, str]) -> list[str]:
    """Each phase against its floor, per batch size, with the rows that beat their floor
    explained, and the figures of the phases and the share of floor."""
    return [
        "## Where the time goes: each phase against its floor",
        "",
        "Forward and backward are bound by the matmul ceiling of the `matmul` dtype, the "
        "optimizer phase by the copy bandwidth (Adam's bytes). `share`: the phase's part of the "
        "step. `cast GB`: the bytes autocast's float32↔low-precision casts of weights, "
        "gradients and input move each step, which the floor does not count, and `cast ms` "
        "their time at the measured copy bandwidth: part of the distance to the floor. `–`: "
        "not measured (a variant that fuses the phases times only the whole step).",
        "",
        *_above_floor(df),
        *_by_batch(df, {**lead, **columns.FLOOR}),
        *_figure(figures, "phases", "time per phase against the floor"),
        *_figure(figures, "floor", "share of floor per mode and batch size"),
    ]


def _memory_section(df: pd.DataFrame, lead: dict[str, str], figures: dict[str, str]) -> list[str]:
    """The peaks per phase and what the forward pass saves, per batch size, and the figure."""
    return [
        "## Memory (GiB)",
        "",
        "`saved by fwd`: what the forward pass leaves allocated for backward (activations, "
        "and under autocast the low-precision weight copies).",
        *(
            [
                "`–` in an own loop's row: not measured by the probe (reserved memory; and "
                "gradients in rows written before the probe sized them from the parameters, "
                "which read them after the loop had freed them)."
            ]
            if results.own_loop_rows(df).any()  # the probe's rows (`bench.ownloop`)
            else []
        ),
        "",
        *_by_batch(df, {**lead, **columns.MEMORY}),
        *_figure(figures, "memory", "memory per mode"),
    ]


def _dtypes_section(df: pd.DataFrame) -> list[str]:
    """The dtypes each mode's step produced, with the float8 modes' decision per Linear."""
    dtypes = df.drop_duplicates("mode")
    if "fp8_linears" in dtypes:
        dtypes = dtypes.assign(fp8_linears=dtypes["fp8_linears"].map(findings.float8_cell))
    return [
        "## Dtypes observed",
        "",
        "As the step produced them, per mode. `float8 Linears`: which Linears a float8 mode "
        "converted to torchao's Float8Linear, and why the others were kept (torchao's "
        "auto-filter: dims divisible by 16, and sizes below which float8 was slower on H100); "
        f"for a model of more than {timing.WHOLE_PLAN_UP_TO} Linears, how many took each "
        "decision (each Linear's is in results.csv's `fp8_linears`).",
        *(
            [
                "`–` in an own loop's row: the probe reads the mode's switches, not the "
                "dtypes of your loop's logits, loss or gradients."
            ]
            if results.own_loop_rows(df).any()  # the probe's rows (`bench.ownloop`)
            else []
        ),
        "",
        columns.table(dtypes, columns.DTYPE),
        "",
    ]


def _failed_section(df: pd.DataFrame) -> list[str]:
    """The cases that did not pass, their status, error and where their tracebacks are kept."""
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return []
    return [
        "## Cases that did not pass",
        "",
        tables.markdown(bad[["case_id", "status", "error"]]),
        "",
        *errors.where(bad.get(errors.COLUMN, [])),
    ]


def _notes_section(df: pd.DataFrame) -> list[str]:
    """A passing row's error is a note on what it could not measure (a recompile, its peaks):
    one line per such case; nothing when there is none."""
    errors = df.get("error", pd.Series("", index=df.index)).fillna("").astype(str)
    noted = df[(df["status"] == "ok") & (errors != "")]
    if noted.empty:
        return []
    return [
        "## Notes on cases that passed",
        "",
        *(f"- `{r.case_id}`: {r.error}" for r in noted.itertuples()),
        "",
    ]


def write(run_dir: Path) -> pd.DataFrame:
    """(Re)write results.csv (packed in a published folder: `results.write_csv`), the figures and
    report.md of a run from its rows and env.json."""
    df = results.load(run_dir)
    env = results.read_env(run_dir)
    results.write_csv(df, run_dir)
    figures = plots.write_all(df, run_dir)
    (run_dir / results.REPORT).write_text(render(df, env, figures))
    return df
