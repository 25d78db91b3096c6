"""The "Answer" of the numerics report: every sentence computed from the measured tables.

Thresholds are stated here and nowhere else. Rows are selected by their columns (`kind`, `state`,
`mode`, `batch_size`; see `bench.numerics.tables`), never by their labels; a figure in a sentence
is formatted from a table cell; a conclusion ("needed", "not needed") follows from a threshold
test on those figures, and where a test has no rows (its jobs failed) the Answer says so.
"""

from __future__ import annotations

import math

import pandas as pd

from bench.numerics.analysis import (
    DIVERGE_FACTOR,
    DIVERGE_STEPS,
    HEALTHY,
    MECHANISM_WINDOW,
    NONFINITE,
    ZERO_LIMIT,
    flushed_most,
    mechanism,
    run_ends,
)
from bench.numerics.tables import (
    ACTIVATION,
    ACTIVATION_GRAD,
    LOG_SOFTMAX,
    LOSS,
    OPTIM_STATE,
    PARAM_GRAD,
    PRODUCED_GRAD,
)

FLUSH_LIMIT = 0.01
"""fp16 without a scaler 'flushes' a tensor when more than 1% of its elements become zero that are
nonzero in the fp32 reference."""
LOSS_GAP = 0.10
"""A final training loss more than 10% above fp32's at the same batch size counts as worse."""
MODE_NAMES = {"fp16-amp-noscale": "fp16 without a scaler", "fp16-amp": "fp16 with GradScaler"}
"""How a sentence names a mode; others by their key."""
V_DECAY = 0.5
"""Adam's second moment counts as decayed before an event where its median, for some parameter,
is below half of fp32's at the same step."""
UPDATE_JUMP = 10.0
"""The update jumped at an event where its largest RMS over the weights' RMS after it is 10 times
or more its largest before it."""
MOMENTS = ("exp_avg", "exp_avg_sq")
"""Adam's state tensors that hold gradient statistics (its `step` count is not one)."""


def _dtypes(audit: pd.DataFrame, mode: str, kind: str, states: tuple[str, ...] = ()) -> str:
    """The dtypes of `mode`'s audited tensors of one kind (of these Adam states, if given)."""
    rows = audit[(audit["mode"] == mode) & (audit["kind"] == kind)]
    if states:
        rows = rows[rows["state"].isin(states)]
    return " and ".join(sorted(set(rows["dtype"]))) or "not observed"


def dtype_sentences(audit: pd.DataFrame, chain: list[str], torch_version: str) -> list[str]:
    m = "fp16-amp"
    loss = _dtypes(audit, m, LOSS)
    log_softmax = _dtypes(audit, m, LOG_SOFTMAX)
    acts = _dtypes(audit, m, ACTIVATION)
    act_grads = _dtypes(audit, m, ACTIVATION_GRAD)
    produced = _dtypes(audit, m, PRODUCED_GRAD)
    param_grads = _dtypes(audit, m, PARAM_GRAD)
    adam = _dtypes(audit, m, OPTIM_STATE, MOMENTS)
    out = [
        f"**dtypes.** Under float16 autocast on torch {torch_version}, the loss is {loss} (the "
        f"log-softmax inside cross_entropy ran in {log_softmax}), the activations (fc1, ReLU, "
        f"fc2, logits) are {acts}, the gradients with respect to them are "
        f"{act_grads}, every weight and bias gradient leaves its matmul as {produced}, and "
        f"`param.grad` is {param_grads} (Adam's state: {adam}). The float32 `param.grad` is made "
        f"by the backward of the cast that fed the float32 parameter to the float16 matmul: the "
        f"autograd chain from the loss to fc1.weight is {' → '.join(chain)}."
    ]
    claim_loss = loss == "float16"
    claim_grads = act_grads == "float32"
    out.append(
        f"The claim that the loss is float16 is {'borne out' if claim_loss else 'not borne out'} "
        f"(it is {loss}); the claim that backward upcasts every gradient to float32 is "
        f"{'borne out' if claim_grads else 'not borne out'}: only `param.grad` is "
        f"{param_grads}, while the activation gradients are {act_grads}."
    )
    return out


def _flushing(census: pd.DataFrame) -> list[tuple[int, pd.Series]]:
    """(batch size, its most flushed row) of fp16 without a scaler, where more than FLUSH_LIMIT
    of some tensor was flushed."""
    out = []
    for bs, g in census[census["mode"] == "fp16-amp-noscale"].groupby("batch_size"):
        worst = g.loc[g["flushed"].idxmax()]
        if worst["flushed"] > FLUSH_LIMIT:
            out.append((int(bs), worst))
    return out


def _worse(summary: pd.DataFrame) -> tuple[list[int], list[tuple[int, float, float]]]:
    """(batch sizes where both fp32 and fp16 without a scaler were trained, and those of them
    where fp16 without a scaler ended worse, with its final loss and fp32's)."""
    compared, worse = [], []
    means = summary.groupby(["batch_size", "mode"])["final_loss"].mean()
    for bs in sorted(summary["batch_size"].unique()):
        ref, ns = means.get((bs, "fp32")), means.get((bs, "fp16-amp-noscale"))
        if ref is None or ns is None:
            continue  # only batch sizes where both were trained are compared
        compared.append(int(bs))
        if ns != ns or ns > ref * (1 + LOSS_GAP):  # NaN (diverged) counts as worse
            worse.append((int(bs), ns, ref))
    return compared, worse


def _measured(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary rows whose divergence was looked for (a folder older than the column has an
    empty cell)."""
    if "divergence" not in summary:
        return summary.iloc[:0]
    return summary[summary["divergence"].isin([HEALTHY, "blowup", NONFINITE])]


def _diverged(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["divergence"] != HEALTHY]


def _in_context(census: pd.DataFrame, summary: pd.DataFrame) -> str:
    """Where the scaled fp16 run flushed most: its step, training loss and loss scale (from the
    census row), and whether any fp16-amp run at that batch size diverged; empty for a folder
    whose census predates the training-loss column."""
    scaled = census[census["mode"] == "fp16-amp"]
    if scaled.empty or "loss" not in scaled or scaled["loss"].isna().all():
        return ""
    w = scaled.loc[scaled["flushed"].idxmax()]
    out = (
        f" ({w['tensor']} at batch {int(w['batch_size'])}, step {int(w['step'])}, training loss "
        f"{w['loss']:.3g}, loss scale {w['loss_scale']:g}"
    )
    runs = _measured(summary)
    runs = runs[(runs["mode"] == "fp16-amp") & (runs["batch_size"] == w["batch_size"])]
    if len(runs):
        bad = _diverged(runs)
        out += (
            f"; {len(bad)} of {len(runs)} fp16-amp runs at that batch size diverged"
            if len(bad)
            else "; no fp16-amp run at that batch size diverged"
        )
    return out + ")"


def divergence_sentences(summary: pd.DataFrame) -> list[str]:
    """Per mode that diverged, per batch size: the steps and the share of seeds; and whether fp16
    without a scaler diverged. Nothing for a folder whose summary predates divergence."""
    runs = _measured(summary)
    if runs.empty:
        return []
    parts = []
    for mode, g in runs.groupby("mode", sort=False):
        if _diverged(g).empty and mode != "fp16-amp-noscale":
            continue
        name = MODE_NAMES.get(mode, f"`{mode}`")
        if _diverged(g).empty:
            parts.append(f"{name} did not diverge in the runs measured")
            continue
        at = []
        for bs, b in g.groupby("batch_size"):
            bad = _diverged(b).sort_values("diverged_at_step")
            if bad.empty:
                at.append(f"did not diverge in {len(b)} seeds at batch {int(bs)}")
                continue
            where = " and ".join(
                f"{int(step)}" + (" (a non-finite loss)" if kind == NONFINITE else "")
                for step, kind in zip(bad["diverged_at_step"], bad["divergence"], strict=True)
            )
            steps = "steps" if len(bad) > 1 else "step"
            at.append(
                f"diverged at {steps} {where} in {len(bad)} of {len(b)} seeds at batch {int(bs)}"
            )
        parts.append(f"{name} {'; '.join(at)}")
    calm = sorted(
        set(runs["mode"]) - set(_diverged(runs)["mode"]) - {"fp16-amp-noscale"},
        key=list(runs["mode"]).index,
    )
    if calm:
        parts.append(f"no run of {', '.join(calm)} diverged")
    rule = (
        f"the training loss above {DIVERGE_FACTOR:g}× its running minimum for {DIVERGE_STEPS} "
        "steps in a row, or non-finite"
    )
    text = "; ".join(parts)
    if text.startswith("no run"):
        text = "N" + text[1:]
    return [f"**Divergence** ({rule}). {text}."]


def mechanism_sentences(traces: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """Per divergence event with traces: what the traces show before and after it (see
    `analysis.mechanism`), then what all events share, by the thresholds above. Nothing where no
    traced run diverged."""
    if traces.empty:
        return []
    events = _diverged(_measured(summary)).sort_values(["batch_size", "mode", "seed"])
    found = []
    for _, e in events.iterrows():
        at = int(e["diverged_at_step"])
        m = mechanism(traces, e["mode"], int(e["batch_size"]), int(e["seed"]), at)
        if m is not None:
            found.append((e, at, m))
    if not found:
        return []
    keys = ["mode", "batch_size", "seed"]
    traced = traces[[*keys, "step"]].drop_duplicates().sort_values([*keys, "step"])
    every = traced.groupby(keys)["step"].diff().dropna()
    stride = int(every.min()) if len(every) else 1
    parts = []
    for e, at, m in found:
        since = (
            f"more than {ZERO_LIMIT:.0%} of some gradient was exactly zero at every traced step "
            f"from step {m['zero_since']} on; "
            if m["zero_since"] is not None
            else ""
        )
        early = (
            f", up from {m['zero_early']:.1%} over its first {MECHANISM_WINDOW} steps"
            if m["zero_early"] == m["zero_early"]
            else ""
        )
        ref = (
            f" (fp32 at the same steps: {m['ref_zero_before']:.2%})"
            if m["ref_zero_before"] == m["ref_zero_before"]
            else ""
        )
        loss = f"a median training loss of {m['loss_before']:.3g} in the window before it" + (
            f" (fp32's: {m['ref_loss_before']:.3g})"
            if m["ref_loss_before"] == m["ref_loss_before"]
            else ""
        )
        v = (
            f"Adam's second-moment median {m['v_ratio_min']:.2f}–{m['v_ratio_max']:.2f}× fp32's "
            "just before"
            if m["v_ratio_min"] == m["v_ratio_min"]
            else "Adam's second moment not compared (no fp32 traces)"
        )
        jump = m["update_after"] / m["update_before"] if m["update_before"] > 0 else math.inf
        parts.append(
            f"{MODE_NAMES.get(e['mode'], e['mode'])}, batch {int(e['batch_size'])}, seed "
            f"{int(e['seed'])}, event at step {at}, {loss}: {since}over the {MECHANISM_WINDOW} "
            f"steps before it, {m['zero_before']:.1%} of {m['zero_module']}'s gradient elements "
            f"were zero on average{early}{ref}; {v}, {m['below_eps2_before']:.2%} of it below "
            f"eps²; the update's RMS over the weights' at most {m['update_before']:.3g} before "
            f"and {m['update_after']:.3g} after ({jump:.0f}×), its largest element "
            f"{m['update_abs_after']:.3g}"
        )
    ms = [m for _, _, m in found]
    flushed = all(m["zero_before"] > ZERO_LIMIT for m in ms)
    # A reference that was not traced (NaN) says nothing: the claim about fp32 needs its traces.
    ref_clean = all(m["ref_zero_before"] <= ZERO_LIMIT for m in ms)
    decayed = any(m["v_ratio_min"] < V_DECAY for m in ms)
    compared = all(m["v_ratio_min"] == m["v_ratio_min"] for m in ms)
    jumped = all(m["update_after"] >= UPDATE_JUMP * m["update_before"] for m in ms)
    shown = []
    if flushed:
        shown.append(
            "gradients were flushed to zero for many steps before each event"
            + (", where fp32's were not" if ref_clean else "")
        )
    if compared:
        shown.append(
            "Adam's second moment had decayed below fp32's before it"
            if decayed
            else f"Adam's second moment had not decayed against fp32's (within {1 / V_DECAY:g}×)"
        )
    if jumped:
        shown.append(
            f"the updates after each event were {UPDATE_JUMP:g}× or more the largest before it"
        )
    calm = []
    healthy = _measured(summary)
    healthy = healthy[(healthy["divergence"] == HEALTHY) & (healthy["mode"] == "fp16-amp-noscale")]
    for bs, g in healthy.groupby("batch_size"):
        found_runs = [
            flushed_most(traces, "fp16-amp-noscale", int(bs), int(sd)) for sd in g["seed"]
        ]
        traced = [t for t in found_runs if t is not None]
        if traced:
            module = max(traced, key=lambda t: t[1])[0]
            share = sum(t[1] for t in traced) / len(traced)
            calm.append(
                f"at batch {int(bs)}, where fp16 without a scaler did not diverge, "
                f"{share:.1%} of {module}'s gradient elements were zero on average after step "
                f"{MECHANISM_WINDOW} (mean over {len(traced)} seeds)"
            )
    also = "; ".join(calm)
    also = f" {also[0].upper()}{also[1:]}." if also else ""
    lead = (
        f"**Why it diverged** (traced every {stride} steps; the window: {MECHANISM_WINDOW} steps "
        "either side of each event). "
    )
    verdict = f" So the traces show: {'; '.join(shown)}." if shown else ""
    return [lead + "; ".join(parts) + "." + also + verdict]


def _then_diverged(summary: pd.DataFrame) -> str:
    """The verdict's last clause: where fp16 without a scaler trained and then diverged."""
    runs = _measured(summary)
    if runs.empty:
        return ""
    bad = _diverged(runs[runs["mode"] == "fp16-amp-noscale"])
    if bad.empty:
        return ""
    where = "; ".join(
        f"at batch {int(bs)}, step "
        + " and ".join(str(int(v)) for v in sorted(b["diverged_at_step"]))
        for bs, b in bad.groupby("batch_size")
    )
    return f" Without one, training learned at first and then diverged ({where})."


def horizon_sentences(steps: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Where the runs longer than the common horizon ended: per mode and batch size the mean
    final loss over seeds, and for a scaled run how its loss scale moved and what it skipped.
    Nothing where no run went longer."""
    if steps.empty or runs.empty:
        return []
    horizon = int(runs["steps"].min())
    ends = run_ends(steps)
    long = ends[ends["last_step"] > horizon]
    if long.empty:
        return []
    parts = []
    for mode, g in long.groupby("mode", sort=False):
        at = "; ".join(
            f"{b['final_loss'].mean():.3g} at batch {int(bs)}" for bs, b in g.groupby("batch_size")
        )
        text = f"{MODE_NAMES.get(mode, f'`{mode}`')} ends at {at}"
        scaled = g[g["first_scale"].notna()]
        if len(scaled):
            changes = sorted({s for c in scaled["scale_changes"] for s in c})
            moved = (
                f"its loss scale went from {scaled['first_scale'].iloc[0]:g} to "
                f"{', '.join(f'{v:g}' for v in sorted(set(scaled['final_scale'])))}, changing "
                f"after step {', '.join(str(c + 1) for c in changes)}"
                if changes
                else f"its loss scale stayed at {scaled['first_scale'].iloc[0]:g}"
            )
            text += f" ({moved}; {int(scaled['skipped_steps'].sum())} steps skipped in all)"
        parts.append(text)
    n = int(long["last_step"].max())
    return [
        f"**Longer horizon** ({n} steps, the mean smoothed training loss over seeds at the last "
        f"step). {'; '.join(parts)}."
    ]


def underflow_sentences(
    census: pd.DataFrame,
    summary: pd.DataFrame,
    traces: pd.DataFrame | None = None,
    steps: pd.DataFrame | None = None,
    runs: pd.DataFrame | None = None,
) -> list[str]:
    """Underflow, convergence, divergence (with what the traces show around it and where the
    longer runs ended) and the verdict on GradScaler."""
    traces = traces if traces is not None else pd.DataFrame()
    steps = steps if steps is not None else pd.DataFrame()
    runs = runs if runs is not None else pd.DataFrame()
    noscale = census[census["mode"] == "fp16-amp-noscale"]
    scaled = census[census["mode"] == "fp16-amp"]
    flushing = _flushing(census)
    worst_scaled = scaled["flushed"].max() if len(scaled) else float("nan")
    context = _in_context(census, summary)
    sizes = ", ".join(str(b) for b in sorted(noscale["batch_size"].unique()))
    out = []
    if noscale.empty:
        out.append(
            "**Underflow.** Not measured: the census has no rows of fp16 without a scaler "
            "(see the jobs that failed)."
        )
    elif flushing:
        where = "; ".join(
            f"{bs} ({w['flushed']:.1%} of {w['tensor']} at step {int(w['step'])})"
            for bs, w in flushing
        )
        out.append(
            f"**Underflow.** Without a scaler, float16 flushes more than {FLUSH_LIMIT:.0%} of some "
            f"gradient tensor to zero at batch size {where}, of the batch sizes "
            f"measured ({sizes}). With GradScaler the worst share flushed anywhere is "
            f"{worst_scaled:.2%}{context}."
        )
    else:
        out.append(
            f"**Underflow.** Without a scaler, float16 flushes no more than {FLUSH_LIMIT:.0%} of "
            f"any gradient tensor at any batch size measured ({sizes}); the worst share is "
            f"{noscale['flushed'].max():.2%}. With GradScaler it is {worst_scaled:.2%}{context}."
        )
    compared, worse = _worse(summary)
    if worse:
        where = "; ".join(f"{bs} ({ns:.3g} against fp32's {ref:.3g})" for bs, ns, ref in worse)
        out.append(
            f"**Convergence.** fp16 without a scaler ends with a training loss more than "
            f"{LOSS_GAP:.0%} above fp32's at batch size {where}."
        )
    elif compared:
        out.append(
            f"**Convergence.** fp16 without a scaler ends within {LOSS_GAP:.0%} of fp32's "
            f"training loss at every batch size where both were trained "
            f"({', '.join(map(str, compared))})."
        )
    else:
        out.append("**Convergence.** This run did not train both fp32 and fp16 without a scaler.")
    out += divergence_sentences(summary)
    out += mechanism_sentences(traces, summary)
    out += horizon_sentences(steps, runs)
    need = sorted({bs for bs, _ in flushing} | {bs for bs, _, _ in worse})
    question = "**So is GradScaler needed with float16?**"
    if need:
        out.append(
            f"{question} On this model, yes at batch size {', '.join(map(str, need))}: float32 "
            f"`param.grad` does not help, because the gradients are rounded to float16 before the "
            f"cast makes them float32.{_then_diverged(summary)}"
        )
    elif not noscale.empty and compared:
        out.append(
            f"{question} Not on this model at the batch sizes measured, by the two tests above."
        )
    elif not noscale.empty:
        out.append(
            f"{question} Not by the underflow test at the batch sizes measured; convergence was "
            "not compared, so this run cannot say more."
        )
    elif compared:
        out.append(
            f"{question} Not by the convergence test at the batch sizes trained; underflow was not "
            "measured, so this run cannot say more."
        )
    else:
        out.append(f"{question} This run cannot say: it has neither test's results.")
    return out


def bf16_against_fp16_error(census: pd.DataFrame) -> tuple[float, float] | None:
    """The median relative error against fp32 of a gradient tensor under bf16 autocast and
    under scaled fp16, over the census; None when either is not measured."""
    if census.empty:
        return None
    bf = census[census["mode"] == "bf16-amp"]["rel_err"].median()
    fp = census[census["mode"] == "fp16-amp"]["rel_err"].median()
    return (bf, fp) if bf == bf and fp == fp and fp > 0 else None


def cost_sentences(summary: pd.DataFrame, census: pd.DataFrame) -> list[str]:
    out = []
    ms = summary.groupby(["batch_size", "mode"])["step_ms"].mean()
    parts = []
    for bs in sorted(summary["batch_size"].unique()):
        a, b = ms.get((bs, "fp16-amp")), ms.get((bs, "fp16-amp-noscale"))
        if a is not None and b is not None:
            parts.append(f"{(a / b - 1):+.1%} at batch {bs} ({a:.3g} against {b:.3g} ms)")
    if parts:
        opt = summary["optimizer"].iloc[0] if "optimizer" in summary else "the chosen"
        out.append(
            f"**What GradScaler costs.** The measured step time with GradScaler, against "
            f"fp16 without it ({opt} Adam): {'; '.join(parts)}."
        )
    errors = bf16_against_fp16_error(census)
    if errors is not None:
        bf, fp = errors
        out.append(
            f"**What bf16 gives up.** The median relative error of a gradient tensor against fp32 "
            f"is {bf:.2e} with bf16 and {fp:.2e} with scaled fp16, {bf / fp:.1f} times larger: "
            f"bf16 keeps float32's range, so it needs no scaler, but has 3 fewer mantissa bits."
        )
    return out


def error_sentences(errors: list[dict]) -> list[str]:
    parts = []
    for e in errors:
        what = (
            f'raises {e["exception"]} in {e["raised_in"]} ("{e["message"]}")'
            if e["outcome"] == "raised"
            else "runs without an exception"
        )
        parts.append(f"{e['param_dtype']} parameters with {e['optimizer']} Adam {what}")
    return (
        [
            f"**GradScaler with low-precision parameters** (torch {errors[0]['torch']}): "
            + "; ".join(parts)
            + "."
        ]
        if errors
        else []
    )


NEW_RECIPES = ("bf16-pure", "bf16-pure-sr", "fp8-tensorwise", "fp8-rowwise")
"""The recipes beyond autocast that get a convergence verdict against fp32."""
LARGEST_PARAM = "fc2.weight"
"""The parameter the update-underflow sentence quotes: 256M of the seed model's 290M elements."""


def _means(summary: pd.DataFrame) -> pd.DataFrame:
    """Per batch size and mode, the mean over seeds of the figures the recipe section quotes."""
    cols = [c for c in ("step_ms", "final_loss", "heldout_acc", "model_state_gib") if c in summary]
    return summary.groupby(["batch_size", "mode"], sort=False)[cols].mean()


def recipe_sentences(summary: pd.DataFrame) -> list[str]:
    """Per batch size: the fastest recipe (the study's measured step time), its final loss and
    held-out accuracy against fp32's and the memory it saves (parameters, gradients and Adam's
    state); then a convergence verdict per recipe beyond autocast."""
    if summary.empty or not set(NEW_RECIPES) & set(summary["mode"]):
        return []
    m = _means(summary)
    parts = []
    for bs in sorted(summary["batch_size"].unique()):
        g = m.loc[bs]
        if "step_ms" not in g or g["step_ms"].isna().all():
            continue
        best = g["step_ms"].idxmin()
        b = g.loc[best]
        text = f"at batch {int(bs)}, `{best}` ({b['step_ms']:.3g} ms per step"
        if "fp32" in g.index:
            f = g.loc["fp32"]
            text += (
                f", {f['step_ms'] / b['step_ms']:.2f}× fp32; final loss {b['final_loss']:.3g} "
                f"against fp32's {f['final_loss']:.3g}, held-out accuracy "
                f"{b['heldout_acc']:.1%} against {f['heldout_acc']:.1%}"
            )
            saved = f.get("model_state_gib", float("nan")) - b.get("model_state_gib", float("nan"))
            if saved == saved:
                text += f"; it saves {saved:.3g} GiB of parameters, gradients and Adam state"
        parts.append(text + ")")
    out = []
    if parts:
        out.append(
            "**Which recipe is fastest** (the eager step time each convergence run measured, mean "
            "over seeds; float8 is fast only compiled, which the timing runs measure): "
            f"{'; '.join(parts)}."
        )
    verdicts = []
    for mode in NEW_RECIPES:
        for bs in sorted(summary["batch_size"].unique()):
            if (bs, mode) not in m.index:
                continue
            loss = m.loc[(bs, mode), "final_loss"]
            ref = m.loc[(bs, "fp32"), "final_loss"] if (bs, "fp32") in m.index else float("nan")
            if ref != ref:
                verdicts.append(f"`{mode}` at batch {int(bs)}: no fp32 run to compare with")
                continue
            within = loss == loss and loss <= ref * (1 + LOSS_GAP)
            verdicts.append(
                f"`{mode}` at batch {int(bs)} ends at {loss:.3g} against fp32's {ref:.3g}: "
                + (f"within {LOSS_GAP:.0%}" if within else f"**not** within {LOSS_GAP:.0%}")
            )
    if verdicts:
        out.append(f"**Do the recipes beyond autocast converge?** {'; '.join(verdicts)}.")
    return out


def recipe_census_sentences(census: pd.DataFrame) -> list[str]:
    """The census's verdict on the recipes beyond autocast: per recipe and checkpoint, the
    median relative error against fp32 of its activation gradients and of its weight and bias
    gradients as their matmuls produced them, beside bf16-amp's (same weights, same batch)."""
    if census.empty:
        return []
    recipes = [m for m in NEW_RECIPES if m in set(census["mode"])]
    if not recipes:
        return []
    kinds = census[census["kind"].isin([ACTIVATION_GRAD, PRODUCED_GRAD])]
    med = kinds.groupby(["batch_size", "mode", "step", "kind"])["rel_err"].median()

    def figures(bs: int, mode: str) -> str:
        steps = sorted(med.loc[(bs, mode)].index.get_level_values("step").unique())
        return ", ".join(
            f"step {int(st)}: {med.get((bs, mode, st, ACTIVATION_GRAD), math.nan):.3g} / "
            f"{med.get((bs, mode, st, PRODUCED_GRAD), math.nan):.3g}"
            for st in steps
        )

    parts = []
    for bs in sorted(kinds["batch_size"].unique()):
        modes = set(med.loc[bs].index.get_level_values("mode"))
        here = [m for m in recipes if m in modes]
        for mode in here:
            text = f"`{mode}` at batch {int(bs)}: {figures(bs, mode)}"
            if "bf16-amp" in modes:
                same = med.loc[(bs, mode)].equals(med.loc[(bs, "bf16-amp")])
                text += " (equal to bf16-amp's)" if same else ""
            parts.append(text)
        if here and "bf16-amp" in modes:
            parts.append(f"bf16-amp at batch {int(bs)}: {figures(bs, 'bf16-amp')}")
    if not parts:  # the recipes' census rows hold no gradient
        return []
    return [
        "**The recipes' gradients against fp32** (the census: each recipe on the trajectory's "
        "weights at each checkpoint; the median relative error of the activation gradients / "
        f"of the weight and bias gradients as their matmuls produced them): {'; '.join(parts)}."
    ]


def update_underflow_sentences(traces: pd.DataFrame) -> list[str]:
    """How much of the largest weight's Adam update rounds away in bf16, for the pure-bf16
    recipes, from the traces (nothing for a folder without the column)."""
    if traces.empty or "update_underflow_share" not in traces:
        return []
    tr = traces[
        traces["mode"].isin(["bf16-pure", "bf16-pure-sr"]) & (traces["module"] == LARGEST_PARAM)
    ].dropna(subset=["update_underflow_share"])
    if tr.empty:
        return []
    parts = []
    for (mode, bs), g in tr.groupby(["mode", "batch_size"], sort=False):
        last = g[g["step"] == g["step"].max()]
        parts.append(
            f"`{mode}` at batch {int(bs)}: {g['update_underflow_share'].mean():.1%} of "
            f"{LARGEST_PARAM}'s elements on average over the traced steps "
            f"({last['update_underflow_share'].mean():.1%} at step {int(g['step'].max())}), "
            f"and the step left {g['unchanged_share'].mean():.1%} unchanged"
        )
    return [
        "**Update underflow** (Adam's update smaller than half a bf16 ulp of its weight, so "
        f"rounding to nearest drops it): {'; '.join(parts)}. With stochastic rounding an update "
        "that small still moves its weight with a probability proportional to its size, so the "
        "unchanged share falls below the underflow share."
    ]


def answer(tables: dict, torch_version: str) -> list[str]:
    """The Answer's paragraphs, from the tables of `bench.numerics.tables.load`."""
    chain = tables["audit_json"]["chain_to_fc1_weight"].get("fp16-amp", [])
    return [
        *dtype_sentences(tables["audit"], chain, torch_version),
        *underflow_sentences(
            tables["census"],
            tables["summary"],
            tables.get("traces"),
            tables.get("steps"),
            tables.get("runs"),
        ),
        *cost_sentences(tables["summary"], tables["census"]),
        *error_sentences(tables["audit_json"]["error_paths"]),
        *recipe_sentences(tables["summary"]),
        *recipe_census_sentences(tables["census"]),
        *update_underflow_sentences(tables.get("traces", pd.DataFrame())),
    ]
