"""report.md of a numerics folder, rendered from its tables (nothing here measures or imports
torch). A section whose jobs all failed says so instead of showing a table."""

from __future__ import annotations

import shlex

import pandas as pd

from bench.numerics.analysis import DIVERGE_FACTOR, DIVERGE_STEPS, HEALTHY, SMOOTH_STEPS
from bench.numerics.answer import FLUSH_LIMIT, LOSS_GAP, NEW_RECIPES, answer
from bench.publish import tables
from bench.store import paths

TRACE_WINDOW = 50
"""The traces shown around a divergence event: this many steps either side of it."""


def _md(df: pd.DataFrame, floatfmt: str = "") -> str:
    """A readable table (`bench.publish.tables`: at most 4 significant digits, `–` when missing);
    `floatfmt` is kept for the callers' sake and no longer used."""
    return tables.markdown(df)


def _pct(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    df = df.copy()
    for c in cols:
        df[c] = df[c].map(lambda v: f"{v:.3%}" if pd.notna(v) else "")
    return df


def _audit(t: dict) -> list[str]:
    audit = t["audit"]
    order = list(dict.fromkeys(audit["tensor"]))
    pivot = audit.pivot(index="tensor", columns="mode", values="dtype").reindex(order)
    pivot = pivot[list(dict.fromkeys(audit["mode"]))].reset_index()
    chains = t["audit_json"]["chain_to_fc1_weight"]
    errors = pd.DataFrame(t["audit_json"]["error_paths"])
    return [
        "## 1. dtype audit",
        "",
        "Every tensor of one forward and backward pass and the optimizer step, as the step "
        "produced it (hooks on the activations and on the cast nodes of the parameters; the full "
        "op trace, aten op by aten op, is in `audit_ops.csv`).",
        "",
        _md(pivot),
        "",
        "Autograd chain from the loss back to `fc1.weight`:",
        "",
        *[f"- `{mode}`: {' → '.join(chain)}" for mode, chain in chains.items()],
        "",
        "Parameters cast to a low-precision dtype, with GradScaler on (expected outcomes, "
        "recorded as observed):",
        "",
        _md(
            errors[
                [
                    "param_dtype",
                    "optimizer",
                    "outcome",
                    "exception",
                    "message",
                    "raised_in",
                    "torch",
                ]
            ]
        ),
        "",
    ]


def _census(t: dict) -> list[str]:
    c = t["census"]
    if c.empty:
        return [
            "## 2. Underflow census",
            "",
            "No rows: every census job failed (see the jobs that failed above).",
            "",
        ]
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
    table = _pct(table, ["max flushed", "max_subnormal"])
    big = c["batch_size"].max()
    last = c[c["batch_size"] == big]["step"].max()
    detail = c[(c["batch_size"] == big) & (c["step"] == last)]
    detail = _pct(
        detail[["mode", "tensor", "dtype", "flushed", "subnormal", "nonfinite", "rel_err"]],
        ["flushed", "subnormal", "nonfinite"],
    )
    return [
        "## 2. Underflow census",
        "",
        "Against an fp32 reference on the same weights and batch. The weights come from a training "
        "trajectory with fp16 autocast and GradScaler at each batch size (fused Adam, the "
        "learnable task of section 4); `fp16-amp` uses that trajectory's current loss scale. "
        "`flushed`: zero where the reference is not; `subnormal`: nonzero but below the smallest "
        "normal of the gradient's dtype; `rel_err`: ‖g/scale − g_fp32‖ / ‖g_fp32‖. Weight and "
        "bias gradients are taken as their matmul produced them, before the cast to float32. The "
        "gradient of the fc1 output is zero wherever the ReLU is off, so where a low-precision fc1 "
        "output lands on the other side of zero than the fp32 one, that element counts as flushed "
        "although nothing underflowed: a small floor under that row in every mode.",
        "",
        "Worst tensor per batch size, checkpoint and mode:",
        "",
        _md(table),
        "",
        f"Every tensor at batch {big}, step {last}:",
        "",
        _md(detail),
        "",
    ]


def _histogram(t: dict) -> list[str]:
    h, fate = t["histogram"], t["fp16_fate"]
    if h.empty:
        return []
    wide = h.pivot_table(
        index=["bin", "log2_lo"], columns="step", values="share", aggfunc="sum"
    ).reset_index()
    wide = wide.sort_values("log2_lo", na_position="first").drop(columns="log2_lo")
    wide.columns = [str(c) if c == "bin" else f"share at step {c}" for c in wide.columns]
    fate = _pct(
        fate[
            [
                "step",
                "tensor",
                "shift",
                "multiplier",
                "fp16_flushed",
                "fp16_subnormal",
                "fp16_overflow",
            ]
        ],
        ["fp16_flushed", "fp16_subnormal", "fp16_overflow"],
    )
    bs = int(h["batch_size"].iloc[0])
    return [
        "## 3. Activation-gradient histogram (after Micikevicius et al., 2018, Figure 3)",
        "",
        f"log2|g| of the fp32 reference's activation gradients (logits, fc2, ReLU and fc1 outputs "
        f"pooled) at batch {bs}, in one-power-of-two bins (bin e holds 2^e ≤ |g| < 2^(e+1)) with "
        "a separate zero bin. Lines: 2^-24 (float16's smallest subnormal), 2^-14 (smallest "
        "normal), 65504 (largest finite).",
        "",
        "![histogram](histogram.png)",
        "",
        "What a cast to float16 does to these values, unscaled and multiplied by the loss scale "
        "in use (computed by the cast itself):",
        "",
        _md(fate),
        "",
        "<details><summary>Bins</summary>",
        "",
        _md(wide, ".3g"),
        "",
        "</details>",
        "",
    ]


def _convergence(t: dict, env: dict) -> list[str]:
    s = t["summary"]
    cfg = env.get("numerics_config", {})
    if s.empty:
        return [
            "## 4. Convergence",
            "",
            "No rows: every convergence job failed (see the jobs that failed above).",
            "",
        ]
    agg = (
        s.groupby(["batch_size", "mode"], sort=False)
        .agg(
            seeds=("seed", "count"),
            final_loss=("final_loss", "mean"),
            final_loss_min=("final_loss", "min"),
            final_loss_max=("final_loss", "max"),
            heldout_loss=("heldout_loss", "mean"),
            heldout_acc=("heldout_acc", "mean"),
            nonfinite_steps=("nonfinite_steps", "sum"),
            skipped_steps=("skipped_steps", "sum"),
            step_ms=("step_ms", "mean"),
            target_loss=("target_loss", "mean"),
            reached=("steps_to_target", lambda v: int(v.notna().sum())),
            time_to_target_s=("time_to_target_s", "mean"),
        )
        .reset_index()
    )
    agg["time to fp32's final loss"] = [
        f"{tt:.3g} s" if r == n else f"not reached by {n - r} of {n} seeds"
        for tt, r, n in zip(agg["time_to_target_s"], agg["reached"], agg["seeds"], strict=True)
    ]
    agg = agg.drop(columns=["reached", "time_to_target_s"])
    measured = s["divergence"].isin([HEALTHY, "blowup", "nonfinite"])
    if measured.any():  # a folder older than the column has empty cells: not shown
        diverged = (s["divergence"] != HEALTHY) & measured
        counts = diverged.groupby([s["batch_size"], s["mode"]]).sum()
        agg["diverged seeds"] = [
            int(counts.get((b, m), 0)) for b, m in zip(agg["batch_size"], agg["mode"], strict=True)
        ]
    chance = 1 / cfg["num_classes"] if cfg.get("num_classes") else float("nan")
    return [
        "## 4. Convergence",
        "",
        f"Task: {cfg.get('num_classes')} Gaussian classes in {cfg.get('input_size')} dimensions "
        f"(each class a random prototype; a sample is prototype + {cfg.get('noise')} × N(0, I), "
        f"normalized to unit variance; fresh batches every step, a held-out split of "
        f"{cfg.get('heldout')} samples). Adam, lr {cfg.get('lr')}, {cfg.get('optimizer')}; "
        f"{cfg.get('steps')} steps per run, seeds {cfg.get('seeds')}. Chance accuracy "
        f"{chance:.2%}. `final_loss`: the training loss's {SMOOTH_STEPS}-step mean at step "
        f"{cfg.get('steps')}, mean over seeds (min and max beside it); time to target: steps to "
        "reach the final loss of fp32 with the same batch size and seed, × the run's step time "
        "measured apart with the harness's timing function.",
        "",
        _md(agg),
        "",
        "![loss curves](loss_curves.png)",
        "",
        "![loss scale](scale.png)",
        "",
        *_traces(t),
    ]


def _traces(t: dict) -> list[str]:
    """The traced mechanism: the figure, and per diverging run the traces within TRACE_WINDOW
    steps of its event, the parameters folded (the largest share of zero gradients and update,
    the smallest median second moment). Nothing for a folder without traces."""
    tr, s = t["traces"], t["summary"]
    if tr.empty:
        return []
    out = [
        "### Traces",
        "",
        "Every traced step of each run, per parameter (`convergence_traces.csv`), outside any "
        "timed region: the share of `param.grad` exactly zero, Adam's second moment (median, "
        "share below eps²) and first moment (median |exp_avg|), the update's RMS over the weights' "
        "RMS and its largest element, and the loss scale. The figure folds the parameters "
        "(largest zero share and update, smallest median second moment); one colour per mode, "
        "one line style per batch size and seed.",
        "",
        "![traces](traces.png)",
        "",
    ]
    events = s[s["divergence"].isin(["blowup", "nonfinite"])]
    if events.empty:
        measured = s["divergence"].isin([HEALTHY]).any()
        what = "No run diverged" if measured else "Divergence was not looked for in this folder"
        return [*out, f"{what}: no traces around a divergence to show.", ""]
    keys = ["mode", "batch_size", "seed"]
    for _, e in events.sort_values(["batch_size", "mode", "seed"]).iterrows():
        at = int(e["diverged_at_step"])
        run = tr[(tr[keys] == e[keys]).all(axis=1) & ((tr["step"] - at).abs() <= TRACE_WINDOW)]
        if run.empty:
            continue
        folded = (
            run.groupby("step")
            .agg(
                loss=("loss", "first"),
                scale=("scale", "first"),
                skipped=("skipped", "first"),
                max_grad_zero=("grad_zero_share", "max"),
                min_exp_avg_sq_median=("exp_avg_sq_median", "min"),
                max_below_eps2=("exp_avg_sq_below_eps2_share", "max"),
                max_update_rms_ratio=("update_rms_ratio", "max"),
                max_update_abs=("update_max_abs", "max"),
            )
            .reset_index()
        )
        folded = _pct(folded, ["max_grad_zero", "max_below_eps2"])
        out += [
            f"`{e['mode']}`, batch {int(e['batch_size'])}, seed {int(e['seed'])}: "
            f"{e['divergence']} at step {at}; traces from step {at - TRACE_WINDOW} to "
            f"{at + TRACE_WINDOW}, the parameters folded:",
            "",
            _md(folded),
            "",
        ]
    return out


def _recipes(t: dict) -> list[str]:
    """The recipes beyond autocast: per batch size and mode, the step time, final loss, held-out
    accuracy and the memory of parameters, gradients and Adam's state; the update-underflow
    census of the pure-bf16 recipes over training; the modes this machine could not run."""
    s, tr = t["summary"], t["traces"]
    unsupported = t["audit_json"].get("unsupported", {})
    has_new = s["mode"].isin(NEW_RECIPES).any() or any(m in unsupported for m in NEW_RECIPES)
    if not has_new:
        return []
    out = [
        "## Recipes beyond autocast",
        "",
        "Pure bf16 (parameters, gradients and Adam's state in bf16; `-sr`: torchao's AdamW with "
        "stochastic rounding) and torchao's float8 training (float8 Linears inside bf16 "
        "autocast, float32 master weights). `params+grads+Adam GiB`: what the recipe's dtypes "
        "cost, activations aside. Means over seeds.",
        "",
    ]
    if not s.empty:
        cols = [c for c in ("step_ms", "final_loss", "heldout_acc", "model_state_gib") if c in s]
        table = s.groupby(["batch_size", "mode"], sort=False)[cols].mean().reset_index()
        table = table.rename(columns={"model_state_gib": "params+grads+Adam GiB"})
        out += [_md(table), ""]
    if unsupported:
        out += ["Modes the audit could not run here:", ""]
        out += [f"- `{mode}`: {why}" for mode, why in unsupported.items()]
        out.append("")
    if not tr.empty and "update_underflow_share" in tr:
        pure = tr[tr["mode"].isin(["bf16-pure", "bf16-pure-sr"])].dropna(
            subset=["update_underflow_share"]
        )
        if not pure.empty:
            steps = sorted(pure["step"].unique())
            shown = sorted({steps[0], steps[len(steps) // 2], steps[-1]})
            view = pure[pure["step"].isin(shown)]
            view = view.groupby(["mode", "batch_size", "step", "module"], sort=False)[
                ["update_underflow_share", "unchanged_share"]
            ].mean()
            out += [
                "### Update underflow",
                "",
                "Share of each parameter's elements whose Adam update (lr·m̂/(√v̂+eps), from "
                "the optimizer's state after the step) is smaller than half an ulp of the weight "
                "in its dtype, so that rounding to nearest leaves the weight unchanged, and the "
                "share the step actually left unchanged; at the first, middle and last traced "
                "step, mean over seeds (every traced step is in `convergence_traces.csv`).",
                "",
                _md(_pct(view.reset_index(), ["update_underflow_share", "unchanged_share"])),
                "",
            ]
    return out


def _provenance(env: dict) -> list[str]:
    """The command that started the study and those that resumed it."""
    resumed = [
        shlex.join(["python", "-m", "bench", *paths.shown_argv(r["argv"][1:])])
        for r in env.get("resumed", [])
    ]
    command = paths.shown_command(env.get("command", ""))
    out = ["Produced by:", "", "```", command, *resumed, "```", ""]
    if resumed:
        out += [
            f"Interrupted, then resumed {len(resumed)} time(s) by the command(s) after the first.",
            "",
        ]
    entries = env.get("resumed", [])
    # Each census run replaces every census row: the rows are the last one's.
    last_census = max((i for i, r in enumerate(entries) if r.get("census_again_for")), default=-1)
    for i, r in enumerate(entries):
        at = f"on {r['at']} at commit `{str(r.get('commit'))[:7]}`"
        again = r.get("census_again_for", [])
        if r.get("added_modes"):
            # Before `census_again_for` existed, an addition left the census as it was.
            what = (
                "convergence runs, dtype audit and census"
                if again
                else ("convergence runs and dtype audit; the census was not extended")
            )
            out += [f"Modes {', '.join(r['added_modes'])} were added {at} (their {what}).", ""]
        if again:
            rows = "; every census row (all modes) is from this run" if i == last_census else ""
            out += [
                f"The census ran again {at} for {', '.join(again)}, which it had not "
                f"measured{rows}.",
                "",
            ]
    return out


def render(t: dict) -> str:
    """report.md from the tables of `bench.numerics.tables.load` (their `env` included)."""
    env = t["env"]
    cfg = env.get("numerics_config", {})
    stress = {k: cfg.get(k) for k in ("loss_mult", "reduction", "init_scale")}
    dirty = " (with uncommitted changes)" if env.get("dirty") else ""
    out = [
        f"# ampbench numerics `{env.get('run_name', '')}`",
        "",
        *(
            [
                "**CPU smoke run**: tiny sizes; these figures exercise the code, not the question.",
                "",
            ]
            if env.get("device") == "cpu"
            else []
        ),
        *_provenance(env),
        f"GPU {env.get('gpu')} ×{cfg.get('workers')} worker(s), torch {env.get('torch')}, CUDA "
        f"{env.get('cuda')}, commit `{env.get('commit')}`{dirty}. Model {cfg.get('input_size')} → "
        f"{cfg.get('hidden_size')} → {cfg.get('hidden_size')} → {cfg.get('num_classes')}. Stress "
        f"settings: {stress}.",
        "",
    ]
    if not t["failed"].empty:
        out += ["## Jobs that failed", "", _md(t["failed"]), ""]
    out += _audit(t) + _census(t) + _histogram(t) + _convergence(t, env) + _recipes(t)
    out += [
        "## 5. Answer",
        "",
        f"Computed from the tables above by `bench/numerics/answer.py` (thresholds: more than "
        f"{FLUSH_LIMIT:.0%} of a tensor flushed; a final loss more than {LOSS_GAP:.0%} above "
        "fp32's"
        + (
            f"; divergence: the loss above {DIVERGE_FACTOR:g}× its running minimum for "
            f"{DIVERGE_STEPS} steps, or non-finite)."
            if not t["traces"].empty or t["summary"]["divergence"].isin([HEALTHY]).any()
            else ")."
        ),
        "",
    ]
    out += [f"{sentence}\n" for sentence in answer(t, str(env.get("torch")))]
    return "\n".join(out)
