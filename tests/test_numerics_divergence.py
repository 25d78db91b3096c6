"""Divergence as data: detection on synthetic loss curves, the summary's columns, the Answer's
divergence sentence and the report's traces around an event, from hand-made tables; and the trace
of a tiny CPU run."""

import math

import numpy as np
import pandas as pd
import pytest

from bench.numerics.analysis import runs as analysis
from bench.numerics.analysis import summary as run_summary
from bench.numerics.analysis.summary import (
    BLOWUP,
    DIVERGE_FACTOR,
    DIVERGE_STEPS,
    NONFINITE,
    divergence,
)
from bench.numerics.measure import tables, training
from bench.numerics.render.sections import training as report_training
from bench.numerics.render.sentences import divergence as answer_divergence
from bench.numerics.render.sentences import scaler as answer_scaler
from tests.conftest import tiny_plan

HEALTHY = list(np.geomspace(2.0, 1e-3, 300))
"""A clean run: the loss falls from 2 to 0.001 over 300 steps."""


def test_a_healthy_run_has_no_event():
    assert divergence(HEALTHY) is None
    assert divergence([]) is None
    assert divergence([1.0] * 5 + [100.0] * (DIVERGE_STEPS - 1)) is None  # ends unconfirmed


def test_a_noisy_but_healthy_run_has_no_event():
    rng = np.random.default_rng(0)
    noisy = np.asarray(HEALTHY) * np.exp(rng.normal(0.0, 0.4, len(HEALTHY)))
    assert divergence(noisy) is None


def test_a_spike_that_recovers_is_not_divergence():
    spike = HEALTHY.copy()
    spike[100 : 100 + DIVERGE_STEPS - 1] = [50.0] * (DIVERGE_STEPS - 1)  # one step short
    assert divergence(spike) is None


def test_a_sustained_blow_up_is_found_at_its_first_step():
    # As in the H200 study: tracks fp32 to 7e-4, then jumps to 14 and stays there.
    curve = HEALTHY[:200] + [14.0] * 100
    assert divergence(curve) == (200, BLOWUP)


def test_a_slow_drift_is_found_where_it_crosses_the_factor():
    low = HEALTHY[150]
    drift = HEALTHY[:151] + [low * 1.05**k for k in range(1, 150)]
    crossing = 151 + math.ceil(math.log(DIVERGE_FACTOR) / math.log(1.05)) - 1
    assert drift[crossing] > DIVERGE_FACTOR * low >= drift[crossing - 1]
    assert divergence(drift) == (crossing, BLOWUP)
    # A drift that stays below the factor is not divergence.
    assert divergence(HEALTHY[:151] + [low * 9.0] * 100) is None


def test_a_non_finite_loss_is_an_event_at_once():
    assert divergence([*HEALTHY[:40], math.nan, *HEALTHY[41:]]) == (40, NONFINITE)
    assert divergence([*HEALTHY[:40], math.inf]) == (40, NONFINITE)
    # Whichever comes first: a blow-up that later turns into NaN is a blow-up.
    assert divergence(HEALTHY[:50] + [14.0] * 30 + [math.nan]) == (50, BLOWUP)


def _steps(mode: str, seed: int, losses: list[float], bs: int = 8) -> list[dict]:
    return [
        {
            "mode": mode,
            "batch_size": bs,
            "seed": seed,
            "optimizer": "fused",
            "step": i,
            "loss": loss,
            "scale": None,
            "skipped": False,
        }
        for i, loss in enumerate(losses)
    ]


def _summary() -> pd.DataFrame:
    """fp16 without a scaler blows up at step 200 (seed 0) and 230 (seed 1) at batch 8, and stays
    healthy at batch 32; fp32 and fp16-amp stay healthy everywhere."""
    rows = []
    for bs in (8, 32):
        for seed in (0, 1):
            rows += _steps("fp32", seed, HEALTHY, bs) + _steps("fp16-amp", seed, HEALTHY, bs)
            blowup = HEALTHY[: 200 + 30 * seed] + [14.0] * (100 - 30 * seed)
            rows += _steps("fp16-amp-noscale", seed, blowup if bs == 8 else HEALTHY, bs)
    steps = pd.DataFrame(rows)
    runs = steps[["mode", "batch_size", "seed"]].drop_duplicates().assign(step_ms=1.0)
    evals = pd.DataFrame(columns=list(tables.TABLES["evals"].columns))
    return run_summary.summarize_runs(steps, evals, runs, horizon=300)


def test_the_summary_holds_each_runs_event():
    s = _summary()
    assert list(s.columns) == list(tables.TABLES["summary"].columns)
    ns = s[(s["mode"] == "fp16-amp-noscale") & (s["batch_size"] == 8)].set_index("seed")
    assert ns["diverged_at_step"].to_dict() == {0: 200, 1: 230}
    assert set(ns["divergence"]) == {BLOWUP}
    healthy = s[~((s["mode"] == "fp16-amp-noscale") & (s["batch_size"] == 8))]
    assert (
        set(healthy["divergence"]) == {run_summary.HEALTHY}
        and healthy["diverged_at_step"].isna().all()
    )


def _divergence_text(summary: pd.DataFrame) -> str:
    return "\n".join(answer_divergence.divergence_sentences(summary))


def test_the_answer_names_the_divergence_from_the_table():
    s = _summary()
    text = _divergence_text(s)
    assert (
        "fp16 without a scaler diverged at steps 200 and 230 in 2 of 2 seeds at batch 8; did not "
        "diverge in 2 seeds at batch 32" in text
    )
    assert text.endswith("; no run of fp16-amp, fp32 diverged.")
    # The sentence follows the table: change the cell, the sentence changes.
    s.loc[
        (s["mode"] == "fp16-amp-noscale") & (s["seed"] == 1) & (s["batch_size"] == 8), "divergence"
    ] = run_summary.HEALTHY
    assert "diverged at step 200 in 1 of 2 seeds at batch 8" in _divergence_text(s)
    s["divergence"] = run_summary.HEALTHY
    assert "fp16 without a scaler did not diverge in the runs measured" in _divergence_text(s)


def test_a_summary_older_than_divergence_says_nothing_of_it():
    s = _summary()
    s["divergence"] = math.nan  # how `tables.load` reads a folder older than the column
    assert answer_divergence.divergence_sentences(s) == []
    assert (
        answer_divergence.divergence_sentences(s.drop(columns=["divergence", "diverged_at_step"]))
        == []
    )


def test_the_scaled_flush_is_stated_in_context():
    census = pd.DataFrame(
        [
            {
                "batch_size": 8,
                "step": 10,
                "loss_scale": 65536.0,
                "mode": "fp16-amp",
                "tensor": "grad of logits",
                "flushed": 0.6726,
                "loss": 0.0123,
            }
        ]
    )
    text = answer_scaler._in_context(census, _summary())
    assert text == (
        " (grad of logits at batch 8, step 10, training loss 0.0123, loss scale 65536; "
        "no fp16-amp run at that batch size diverged)"
    )
    assert answer_scaler._in_context(census.drop(columns="loss"), _summary()) == ""


def _trace_rows(mode: str, seed: int, steps: range) -> list[dict]:
    return [
        {
            "mode": mode,
            "batch_size": 8,
            "seed": seed,
            "optimizer": "fused",
            "steps": 300,
            "step": step,
            "module": module,
            "loss": 1.0,
            "scale": None,
            "skipped": False,
            "grad_zero_share": 0.5 if module == "fc3.weight" else 0.1,
            "exp_avg_sq_median": 1e-12,
            "exp_avg_sq_below_eps2_share": 0.25,
            "exp_avg_abs_median": 1e-6,
            "update_rms_ratio": 1e-3,
            "update_max_abs": 3e-4,
        }
        for step in steps
        for module in ("fc1.weight", "fc3.weight")
    ]


def test_the_report_shows_the_traces_around_each_event(tmp_path):
    traces = pd.DataFrame(
        _trace_rows("fp16-amp-noscale", 0, range(0, 300, 5))
        + _trace_rows("fp32", 0, range(0, 300, 5))
    )
    lines = report_training.traces_section({"traces": traces, "summary": _summary()})
    text = "\n".join(lines)
    assert "`fp16-amp-noscale`, batch 8, seed 0: blowup at step 200" in text
    assert "`fp16-amp-noscale`, batch 8, seed 1" not in text  # no traces of that run
    table = text.split("seed 0: blowup at step 200")[1].split("\n\n")[1]
    rows = [r for r in table.splitlines()[2:]]
    assert len(rows) == len(range(150, 251, 5))  # ±50 steps at stride 5
    assert "50.000%" in rows[0]  # the largest zero share over the parameters
    from bench.numerics.render import plots

    plots.traces(traces, tmp_path / "traces.png")
    assert (tmp_path / "traces.png").stat().st_size > 0
    assert report_training.traces_section({"traces": traces.iloc[:0], "summary": _summary()}) == []


@pytest.mark.parametrize("mode", ["fp16-amp", "fp32"])
def test_the_trace_of_a_tiny_run(mode):
    out = training.convergence(
        tiny_plan(mode=mode, optimizer="fused"),
        steps=6,
        noise=2.0,
        eval_every=3,
        heldout=64,
        trace_every=2,
    )
    tr = tables.frame("traces", out["traces"])
    assert list(tr.columns) == list(tables.TABLES["traces"].columns)
    assert sorted(tr["step"].unique()) == [0, 2, 4]
    params = {f"{fc}.{p}" for fc in ("fc1", "fc2", "fc3") for p in ("weight", "bias")}
    assert set(tr["module"]) == params and len(tr) == 3 * len(params)
    for col in ("grad_zero_share", "exp_avg_sq_below_eps2_share"):
        assert tr[col].between(0, 1).all(), col
    numbers = [
        "loss",
        "exp_avg_sq_median",
        "exp_avg_abs_median",
        "update_rms_ratio",
        "update_max_abs",
    ]
    assert np.isfinite(tr[numbers].to_numpy(float)).all()
    assert (tr[["exp_avg_sq_median", "update_rms_ratio", "update_max_abs"]] > 0).all().all()
    # The traced steps' losses are the step table's: tracing changes nothing it measures.
    losses = {r["step"]: r["loss"] for r in out["steps"]}
    assert all(losses[s] == pytest.approx(v) for s, v in zip(tr["step"], tr["loss"], strict=True))
    if mode == "fp16-amp":
        assert (tr["scale"] > 0).all() and tr["skipped"].dtype == bool
    else:
        assert tr["scale"].isna().all() and not tr["skipped"].any()
    untraced = training.convergence(
        tiny_plan(mode=mode, optimizer="fused"), steps=6, noise=2.0, eval_every=3, heldout=64
    )
    assert untraced["traces"] == []
    assert [r["loss"] for r in untraced["steps"]] == [r["loss"] for r in out["steps"]]


def _mechanism_traces() -> pd.DataFrame:
    """fp16 without a scaler (batch 8, seed 0, event at step 200 in `_summary`): fc3.weight's
    gradient 60% zero from step 50 on (none before), the update 100× larger from the event on;
    fp32 beside it with no zeros and the same second moment."""
    rows = _trace_rows("fp16-amp-noscale", 0, range(0, 300, 5)) + _trace_rows(
        "fp32", 0, range(0, 300, 5)
    )
    for r in rows:
        noscale = r["mode"] == "fp16-amp-noscale"
        r["grad_zero_share"] = (
            0.6 if noscale and r["module"] == "fc3.weight" and r["step"] >= 50 else 0.0
        )
        r["update_rms_ratio"] = 0.1 if noscale and r["step"] >= 200 else 1e-3
        r["exp_avg_sq_below_eps2_share"] = 0.0
    return pd.DataFrame(rows)


def test_the_mechanism_is_read_from_the_traces():
    m = analysis.mechanism(_mechanism_traces(), "fp16-amp-noscale", 8, 0, 200)
    assert m["zero_since"] == 50 and m["zero_module"] == "fc3.weight"
    assert m["zero_before"] == pytest.approx(0.6) and m["ref_zero_before"] == 0.0
    assert m["zero_early"] == pytest.approx(0.6 * 10 / 20)  # steps 50..95 of 0..95
    assert m["v_ratio_min"] == m["v_ratio_max"] == pytest.approx(1.0)
    assert m["update_before"] == pytest.approx(1e-3) and m["update_after"] == pytest.approx(0.1)
    assert analysis.mechanism(_mechanism_traces(), "fp16-amp-noscale", 8, 1, 230) is None


def test_the_answer_states_the_mechanism_the_traces_show():
    traces, s = _mechanism_traces(), _summary()
    (text,) = answer_divergence.mechanism_sentences(traces, s)
    assert "traced every 5 steps" in text
    assert "batch 8, seed 0, event at step 200" in text and "seed 1" not in text
    assert "60.0% of fc3.weight's gradient elements were zero on average" in text
    assert "(fp32 at the same steps: 0.00%)" in text and "(100×)" in text
    assert (
        "gradients were flushed to zero for many steps before each event, where fp32's were not"
        in text
    )
    assert "had not decayed against fp32's" in text and "10× or more" in text
    # Without fp32's traces nothing is said of fp32.
    (alone,) = answer_divergence.mechanism_sentences(traces[traces["mode"] != "fp32"], s)
    assert (
        "flushed to zero for many steps before each event" in alone and "fp32's were" not in alone
    )
    # Where it did not diverge (batch 32 in `_summary`), how much its gradients flushed.
    calm = pd.DataFrame(_trace_rows("fp16-amp-noscale", 0, range(0, 300, 5))).assign(
        batch_size=32, grad_zero_share=1.0
    )
    (text,) = answer_divergence.mechanism_sentences(pd.concat([traces, calm]), s)
    assert (
        ". At batch 32, where fp16 without a scaler did not diverge, 100.0% of fc1.weight's "
        "gradient elements were zero on average after step 100 (mean over 1 seeds)." in text
    )
    # The verdict follows the traces: a decayed second moment, no jump in the update.
    noscale = traces["mode"] == "fp16-amp-noscale"
    traces.loc[noscale, "exp_avg_sq_median"] = 1e-14
    traces.loc[noscale, "update_rms_ratio"] = 1e-3
    (text,) = answer_divergence.mechanism_sentences(traces, s)
    assert "had decayed below fp32's" in text and "10× or more" not in text
    assert answer_divergence.mechanism_sentences(traces.iloc[:0], s) == []


def test_the_longer_horizon_is_stated_where_runs_went_longer():
    rows = []
    for mode, n in (("fp32", 100), ("fp16-amp", 300)):
        for r in _steps(mode, 0, HEALTHY[:n]):
            r["steps"] = n
            r["scale"] = (65536.0 if r["step"] < 199 else 131072.0) if mode == "fp16-amp" else None
            rows.append(r)
    steps = pd.DataFrame(rows)
    runs = steps[["mode", "batch_size", "seed", "steps"]].drop_duplicates()
    (text,) = answer_divergence.horizon_sentences(steps, runs)
    assert text.startswith("**Longer horizon** (300 steps")
    assert "fp16 with GradScaler ends at" in text and "fp32" not in text.split(")", 1)[1]
    assert "from 65536 to 131072, changing after step 200; 0 steps skipped" in text
    assert answer_divergence.horizon_sentences(steps[steps["mode"] == "fp32"], runs) == []


def test_a_scale_at_zero_is_no_settled_scale_nor_an_applied_step(monkeypatch):
    """GradScaler's scale at 0 (where a state that overflows every step ends) no longer falls;
    the step timing does not take it as settled and time its steps, and the trajectory counts
    each such step as skipped."""
    built = training.build

    def at_zero(plan):
        s = built(plan)
        s.scaler._init_scale = 0.0  # the scale GradScaler starts from at its first step
        return s

    monkeypatch.setattr(training, "build", at_zero)
    out = training.convergence(
        tiny_plan(mode="fp16-amp", optimizer="fused"), steps=3, noise=2.0, eval_every=3, heldout=64
    )
    assert math.isnan(out["runs"][0]["step_ms"])
    assert [r["skipped"] for r in out["steps"]] == [True] * 3
