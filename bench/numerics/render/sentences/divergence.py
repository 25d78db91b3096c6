"""The Answer on divergence: which runs diverged and where, what the traces show around each event,
and where the longer runs ended; the mechanism's two thresholds are stated here."""

from __future__ import annotations

import math

import pandas as pd

from bench.ground.catalog import fp16_pair, label, reference
from bench.numerics.analysis.runs import (
    LEARNED_RATIO,
    MECHANISM_WINDOW,
    ZERO_LIMIT,
    diverged,
    flushed_most,
    learned,
    measured,
    mechanism,
    run_ends,
    zero_share_after,
)
from bench.numerics.analysis.summary import DIVERGE_FACTOR, DIVERGE_STEPS, HEALTHY, NONFINITE

V_DECAY = 0.5
"""Adam's second moment decayed where some parameter's median is below half fp32's."""
UPDATE_JUMP = 10.0
"""The update jumped where its largest relative RMS after is 10× its largest before."""


def _named(mode: str, *, code: bool = True) -> str:
    """A mode as a sentence names it: the fp16 pair in its cards' words, others by name."""
    if mode in fp16_pair():
        return label(mode)
    return f"`{mode}`" if code else mode


def divergence_sentences(summary: pd.DataFrame) -> list[str]:
    """Per mode and batch size, where and in how many seeds it diverged."""
    runs = measured(summary)
    if runs.empty:
        return []
    _, bare = fp16_pair()
    parts = []
    for mode, g in runs.groupby("mode", sort=False):
        if diverged(g).empty and mode != bare:
            continue
        name = _named(mode)
        if diverged(g).empty:
            parts.append(f"{name} did not diverge in the runs measured")
            continue
        at = []
        for bs, b in g.groupby("batch_size"):
            bad = diverged(b).sort_values("diverged_at_step")
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
        set(runs["mode"]) - set(diverged(runs)["mode"]) - {bare},
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
    """What the traces show at each divergence (`runs.mechanism`), then what all share."""
    if traces.empty:
        return []
    events = diverged(measured(summary)).sort_values(["batch_size", "mode", "seed"])
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
            f"{_named(e['mode'], code=False)}, batch {int(e['batch_size'])}, seed "
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
    also = _calm(traces, summary)
    also = f" {also[0].upper()}{also[1:]}." if also else ""
    lead = (
        f"**Why it diverged** (traced every {stride} steps; the window: {MECHANISM_WINDOW} steps "
        "either side of each event). "
    )
    verdict = f" So the traces show: {'; '.join(shown)}." if shown else ""
    return [lead + "; ".join(parts) + "." + also + verdict]


def _calm(traces: pd.DataFrame, summary: pd.DataFrame) -> str:
    """Where fp16 without a scaler did not diverge, what it flushed most, beside fp32."""
    _, bare = fp16_pair()
    healthy = measured(summary)
    healthy = healthy[(healthy["divergence"] == HEALTHY) & (healthy["mode"] == bare)]
    calm = []
    for bs, g in healthy.groupby("batch_size"):
        found_runs = [flushed_most(traces, bare, int(bs), int(sd)) for sd in g["seed"]]
        traced = [t for t in found_runs if t is not None]
        if not traced:
            continue
        module = max(traced, key=lambda t: t[1])[0]
        share = sum(t[1] for t in traced) / len(traced)
        ref = zero_share_after(traces, reference(), int(bs), module)
        ref_text = f"; fp32's: {ref:.2%}" if ref == ref else ""
        calm.append(
            f"at batch {int(bs)}, where fp16 without a scaler did not diverge, "
            f"{share:.1%} of {module}'s gradient elements were zero on average after step "
            f"{MECHANISM_WINDOW} (mean over {len(traced)} seeds{ref_text})"
        )
    return "; ".join(calm)


def calm_sentences(traces: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """Where no traced run diverged, what fp16 without a scaler flushed all the same."""
    if traces.empty or not diverged(measured(summary)).empty:
        return []
    calm = _calm(traces, summary)
    if not calm:
        return []
    return [
        f"**What the traces show** (no run diverged). {calm[0].upper()}{calm[1:]}: without a "
        "scaler training went on with that gradient flushed."
    ]


def horizon_sentences(steps: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Where the runs longer than the common horizon ended: loss, loss scale, skips."""
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
        text = f"{_named(mode)} ends at {at}"
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


def learning_sentences(summary: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Where a mode's seeds disagree on learning the task: how many did, per batch size."""
    counts = learned(summary, runs)
    if counts.empty or counts["learned"].eq(counts["seeds"]).all():
        return []  # every run learned it: the means say it all
    parts = []
    for bs, g in counts.groupby("batch_size", sort=True):
        each = ", ".join(f"{r.mode} {r.learned}/{r.seeds}" for r in g.itertuples())
        parts.append(f"at batch {int(bs)}: {each}")
    return [
        f"**Learning the task.** A run counts as having learned the task when its held-out loss "
        f"at the end is within {LEARNED_RATIO:g}× the perfect model's. Not every run did by the "
        f"last step: the seeds that learned it, of those run, {'; '.join(parts)}. A mean over "
        "seeds mixes runs that learned with runs still on the plateau, so each comparison with "
        "fp32 in this Answer is made seed by seed, against fp32's worst seed."
    ]
