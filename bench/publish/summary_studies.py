"""The summary's lines from numerics studies: gradient dtypes, whether fp16 needs GradScaler, what
bf16 gives up, how a mode trains against fp32. Each line reads the first study with its data, with
the numerics Answer's thresholds (`bench.numerics.render.answer`), so the two never disagree."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from bench.ground import catalog
from bench.numerics.analysis.runs import HEALTHY, LEARNED_RATIO, learned, measured, versus
from bench.numerics.measure.tables import ACTIVATION_GRAD, PARAM_GRAD, PRODUCED_GRAD
from bench.numerics.render.answer import LOSS_GAP, bf16_against_fp16_error, lost_direction
from bench.numerics.render.sentences.dtypes import dtypes_of
from bench.text.tables import batch_sizes, figure, joined
from bench.verdicts import training


def _first(studies: list[dict], name: str, has: Callable[[pd.DataFrame], bool]) -> pd.DataFrame:
    """Table `name` of the first study for which `has(table)` holds; empty if none."""
    for study in studies:
        table = study[name]
        if len(table) and has(table):
            return table
    return pd.DataFrame()


def against_fp32(studies: list[dict], mode: str) -> pd.DataFrame:
    """Per batch size: `mode`'s and fp32's mean final loss over seeds, their ratio, whether every
    seed ended within LOSS_GAP (`bench.numerics.analysis.runs.versus`) and the runs that
    diverged, from the first study that looked for divergence (else the first)."""
    reference = catalog.reference()
    both = [s for s in studies if {mode, reference} <= set(s["summary"]["mode"])]
    both.sort(key=lambda s: measured(s["summary"]).empty)  # stable: the given order otherwise
    if not both:
        return pd.DataFrame()
    rows = []
    for bs, g in both[0]["summary"].groupby("batch_size", sort=True):
        mine, ref = g[g["mode"] == mode], g[g["mode"] == reference]
        if mine.empty or ref.empty:
            continue
        bad = measured(mine)
        bad = bad[bad["divergence"] != HEALTHY]
        vs = versus(g, mode, bs, reference)
        rows.append(
            {
                "batch_size": int(bs),
                "loss": vs.loss,
                "fp32_loss": vs.ref,
                "ratio": vs.loss / vs.ref,
                "within": vs.within,  # a seed that went non-finite is not within
                "worse": vs.worse,
                "fp32_low": vs.ref_low,
                "fp32_high": vs.ref_high,
                "diverged": len(bad),
                "steps": sorted(int(s) for s in bad["diverged_at_step"]),
                "runs": len(mine),
            }
        )
    return pd.DataFrame(rows)


def _seeds(r, nested: bool = False) -> str:
    """What a mean over seeds hides in a row of `against_fp32`: the seeds beyond LOSS_GAP and
    the reference's own spread (`nested`: a clause inside parentheses)."""
    notes = []
    if r.worse and r.worse < r.runs:
        notes.append(f"{r.worse} of {r.runs} seeds more than {LOSS_GAP:.0%} above fp32's worst")
    if r.fp32_high > r.fp32_low * (1 + LOSS_GAP):
        notes.append(f"fp32's own seeds {figure(r.fp32_low)}–{figure(r.fp32_high)}")
    if not notes:
        return ""
    # Inside a parenthesis already (the bf16 line's list of losses): a clause, not another one.
    return f", {', '.join(notes)}" if nested else f" ({'; '.join(notes)})"


def trains_like_fp32(studies: list[dict], mode: str) -> bool | None:
    """True for the reference itself, else None: a numerics study's synthetic task and few seeds
    decide nothing; only a time-to-quality study does (`bench.quality.render.report`)."""
    if mode == catalog.reference():
        return True
    verdict = training.trains_like_fp32(pd.DataFrame(), mode, synthetic=True)
    return True if verdict.verdict == training.LIKE else None


def training_cost(studies: list[dict], mode: str) -> str:
    """What `mode` did to training against the reference (fp32), as a clause."""
    reference = catalog.reference()
    if mode == reference:
        return "it is the reference the numerics study compares with"
    vs = against_fp32(studies, mode)
    if vs.empty:
        return "no numerics study trained it"
    first, *rest = vs.itertuples()
    parts = [f"{figure(first.ratio)}× {reference}'s at batch {first.batch_size}{_seeds(first)}"]
    parts += [f"{figure(r.ratio)}× at {r.batch_size}{_seeds(r)}" for r in rest]
    text = f"in training its final loss is {joined(parts)}"
    bad = vs[vs["diverged"] > 0]
    if len(bad):
        text += f", and it diverged at batch {batch_sizes(bad['batch_size'].tolist())}"
    return text


def gradients_line(studies: list[dict]) -> str | None:
    """The dtype of the activation gradients, of each weight gradient as its matmul produced it,
    and of `param.grad`, under each autocast mode of the first audit that has scaled fp16."""
    scaled, _ = catalog.fp16_pair()
    audit = _first(studies, "audit", lambda a: scaled in set(a["mode"]))
    if audit.empty:
        return None
    parts = []
    for mode, dtype in catalog.autocast_modes().items():
        if mode not in set(audit["mode"]):
            continue
        act, made, kept = (
            dtypes_of(audit, mode, k) for k in (ACTIVATION_GRAD, PRODUCED_GRAD, PARAM_GRAD)
        )
        if parts and act == made:
            parts.append(f"Under {dtype} autocast they are {act}, and `param.grad` is {kept}.")
            continue
        text = (
            f"Under {dtype} autocast the activation gradients are {act} and each weight "
            f"gradient leaves its matmul as {made}; `param.grad` is {kept}"
        )
        if made != kept:
            # The cast that fed the float32 weight to the low-precision matmul has a backward:
            # it casts the gradient up after it was rounded, which restores no precision.
            text += " only because autograd casts that gradient back to the weight's dtype"
        parts.append(text + ".")
    return f"- **Gradients.** {' '.join(parts)}"


def _scaler_evidence(studies: list[dict]) -> tuple[pd.DataFrame, list[str]]:
    """(the training comparison the scaler line reads, and where fp16 diverged without GradScaler
    and not with it): the census's flushed share and a synthetic loss gap are no evidence."""
    scaled, bare = catalog.fp16_pair()
    vs = against_fp32(studies, bare)
    vs_scaled = against_fp32(studies, scaled)
    scaled_diverged = bool(len(vs_scaled)) and bool((vs_scaled["diverged"] > 0).any())
    training = []
    for r in vs.itertuples() if len(vs) and not scaled_diverged else ():
        if r.diverged:
            steps = joined([str(s) for s in r.steps])
            training.append(
                f"diverged at batch {r.batch_size} (step{'s' if len(r.steps) > 1 else ''} "
                f"{steps}, {r.diverged} of {r.runs} seeds)"
            )
    return vs, [f"training {joined(training)}"] if training else []


def scaler_needed(studies: list[dict]) -> bool | None:
    """True where training fp16 without GradScaler diverged; else None: not known."""
    _, evidence = _scaler_evidence(studies)
    return True if evidence else None


def scaler_line(studies: list[dict]) -> str | None:
    """Whether float16 needs GradScaler, by the studies' training without it."""
    vs, evidence = _scaler_evidence(studies)
    if vs.empty:
        return None
    if evidence:
        return (
            f"- **GradScaler: needed with float16** (on this synthetic task). Without it "
            f"{'; '.join(evidence)}. A float32 `param.grad` does not help: the gradients are "
            "rounded to float16 before that cast."
        )
    return (
        "- **GradScaler with float16: not known** on this synthetic task: training without it "
        "did not diverge, and its census counts flushed elements, not the share of the "
        "gradient's norm lost, which decides (docs/quality.md)."
    )


def bf16_line(studies: list[dict]) -> str | None:
    """bf16 autocast against fp32 in training, and its gradient error against scaled fp16's."""
    reference = catalog.reference()
    bf16, fp16 = catalog.autocast_of("bfloat16"), catalog.autocast_of("float16")
    vs = against_fp32(studies, bf16)
    census = _first(studies, "census", lambda c: {bf16, fp16} <= set(c["mode"]))
    parts = []
    if len(vs):
        each = [
            f"{figure(r.loss)} against {figure(r.fp32_loss)} at batch {r.batch_size}"
            f"{_seeds(r, nested=True)}"
            for r in vs.itertuples()
        ]
        # A clause on the reference's seeds has commas of its own: the items are then set apart.
        losses = "; ".join(each) if any("," in e for e in each) else joined(each)
        parts.append(f"ends its synthetic-task training at {losses}")
    errors = bf16_against_fp16_error(census)
    if errors is not None:
        bf, fp = errors
        why = lost_direction(bf) or "it keeps float32's range with 3 fewer mantissa bits"
        parts.append(
            f"its gradients are {figure(bf / fp)}× further from {reference}'s than scaled "
            f"fp16's (median relative error {figure(bf)} against {figure(fp)}): {why}"
        )
    if not parts:
        return None
    return f"- **What bf16 gives up.** bf16 autocast {'; '.join(parts)}."


def learning_line(studies: list[dict]) -> str | None:
    """Where the runs disagree on learning a task's known perfect loss: how many seeds of each mode
    did, per batch size (`bench.numerics.analysis.runs.learned`)."""
    for study in studies:
        counts = learned(study["summary"], study["runs"])
        if counts.empty or counts["learned"].eq(counts["seeds"]).all():
            continue
        steps = study["env"].get("numerics_config", {}).get("steps")
        at = f" by step {steps}" if steps else ""
        behind = counts[counts["learned"] < counts["seeds"]]
        parts = [
            f"batch {int(bs)}: "
            + ", ".join(f"{r.mode} {r.seeds - r.learned} of {r.seeds}" for r in g.itertuples())
            for bs, g in behind.groupby("batch_size", sort=True)
        ]
        return (
            f"- **Learning the task.** A run stays on a plateau until it learns the task (held-out "
            f"loss within {LEARNED_RATIO:g}× a perfect model's), at a step that varies with the "
            f"seed. Runs still on the plateau{at}: {'; '.join(parts)}; every other run learned "
            f"it."
        )
    return None
