"""Report sections 2 and 3: the underflow census and the activation-gradient histogram."""

from __future__ import annotations

import pandas as pd

from bench.ground.catalog import fp16_pair
from bench.numerics.measure.tables import POOLED
from bench.numerics.render.markdown import failure_reasons, fold_shares, no_rows, percent
from bench.text.tables import markdown

HISTOGRAM = "## 3. Activation-gradient histogram (after Micikevicius et al., 2018, Figure 3)"


def census_section(t: dict) -> list[str]:
    """The worst tensor per batch size, checkpoint and mode, then the largest batch's last."""
    c = t["census"]
    if c.empty:
        return ["## 2. Underflow census", "", no_rows(t["failed"], "census"), ""]
    keys = ["batch_size", "step", "loss_scale", "mode"]
    worst = c.loc[c.groupby(keys)["flushed"].idxmax(), [*keys, "tensor", "flushed"]]
    agg = (
        c.groupby(keys)
        .agg(
            max_subnormal=("subnormal", "max"),
            max_rel_err=("rel_err", "max"),
            median_rel_err=("rel_err", "median"),
        )
        .reset_index()
    )
    table = worst.merge(agg, on=keys).rename(
        columns={"tensor": "most flushed tensor", "flushed": "max flushed"}
    )
    table = percent(table, ["max flushed", "max_subnormal"])
    big = c["batch_size"].max()
    last = c[c["batch_size"] == big]["step"].max()
    detail = c[(c["batch_size"] == big) & (c["step"] == last)]
    shares = ["flushed", "subnormal", "nonfinite"]
    detail = fold_shares(
        detail[["mode", "tensor", "dtype", *shares, "rel_err", "numel"]],
        ["mode", "dtype"],
        "tensor",
        shares,
        ["rel_err"],
    )
    detail = percent(detail[["mode", "tensor", "dtype", *shares, "rel_err"]], shares)
    scaled, _ = fp16_pair()
    return [
        "## 2. Underflow census",
        "",
        "Against an fp32 reference on the same weights and batch. The weights come from a training "
        "trajectory with fp16 autocast and GradScaler at each batch size (fused Adam, the "
        f"learnable task of section 4); `{scaled}` uses that trajectory's current loss scale. "
        "`flushed`: zero where the reference is not; `subnormal`: nonzero but below the smallest "
        "normal of the gradient's dtype; `rel_err`: ‖g/scale − g_fp32‖ / ‖g_fp32‖. Weight and "
        "bias gradients are taken as their matmul produced them, before the cast to float32. "
        "Where an observed output feeds a ReLU, its gradient is zero wherever the ReLU is off, so "
        "where a low-precision output lands on the other side of zero than the fp32 one, that "
        "element counts as flushed although nothing underflowed: a small floor under that row in "
        "every mode. Repeated blocks (`blocks.*`) are pooled: shares weighted by the tensors' "
        "sizes, the largest relative error.",
        "",
        "Worst tensor per batch size, checkpoint and mode:",
        "",
        markdown(table),
        "",
        f"Every tensor at batch {big}, step {last}:",
        "",
        markdown(detail),
        "",
    ]


def histogram_section(t: dict) -> list[str]:
    """fp32's activation gradients in power-of-two bins, and what float16 does to them."""
    h, fate = t["histogram"], t["fp16_fate"]
    if h.empty:
        why = failure_reasons(t["failed"], "census", fp16_pair()[0])
        return [
            HISTOGRAM,
            "",
            f"Not measured: the census trajectory that records it failed ({why})."
            if why
            else "Not measured: this study recorded no histogram.",
            "",
        ]
    # Folders older than the module column histogrammed the pooled gradients only.
    logits = h[~h["module"].isin(["", POOLED])]
    h = h[h["module"].isin(["", POOLED])]
    observed = list(dict.fromkeys(fate.loc[fate["module"] != POOLED, "module"]))
    wide = h.pivot_table(
        index=["bin", "log2_lo"], columns="step", values="share", aggfunc="sum"
    ).reset_index()
    wide = wide.sort_values("log2_lo", na_position="first").drop(columns="log2_lo")
    wide.columns = [str(c) if c == "bin" else f"share at step {c}" for c in wide.columns]
    fates = ["fp16_flushed", "fp16_subnormal", "fp16_overflow"]
    every = percent(fate[["step", "tensor", "shift", "multiplier", *fates]], fates)
    # A transformer observes dozens of outputs: the pooled gradients, the first and the logits
    # here, every one in the folded table below.
    shown = [POOLED, *observed[:1], *observed[-1:]] if len(observed) > 6 else None
    fate = every if shown is None else every[fate["module"].isin(shown).to_numpy()]
    bs = int(h["batch_size"].iloc[0])
    return [
        HISTOGRAM,
        "",
        f"log2|g| of the fp32 reference's activation gradients (the outputs of "
        f"{_named(observed)}, pooled"
        + (f"; and the logits' alone, {logits['module'].iloc[0]}" if len(logits) else "")
        + f") at batch {bs}, in one-power-of-two bins (bin e holds 2^e ≤ |g| < 2^(e+1)) with "
        "a separate zero bin. Lines: 2^-24 (float16's smallest subnormal), 2^-14 (smallest "
        "normal), 65504 (largest finite).",
        "",
        "![histogram](histogram.png)",
        "",
        "What a cast to float16 does to these values, unscaled and multiplied by the loss scale "
        "in use (computed by the cast itself):",
        "",
        markdown(fate),
        "",
        *([] if shown is None else _folded("Every observed output", every)),
        *_folded("Bins", wide),
    ]


def _folded(summary: str, table: pd.DataFrame) -> list[str]:
    """A table under a line that unfolds it (a long one; the site reads it as markdown too)."""
    return [f"<details><summary>{summary}</summary>", "", markdown(table), "", "</details>", ""]


def _named(names: list[str]) -> str:
    """Observed modules as a sentence lists them: each, or the first and last of many."""
    if len(names) <= 6:
        return ", ".join(names)
    return f"{len(names)} observed modules, {names[0]} to {names[-1]}"
