"""The Answer and the convergence summary, from hand-made tables (no torch involved)."""

import math

import pandas as pd
import pytest

from bench.numerics.analysis import summary as run_summary
from bench.numerics.measure import tables
from bench.numerics.render import answer


def _audit_rows():
    """The fp16-amp audit, labelled `t0`, `t1`, ...: the Answer must select rows by their columns
    and never read a label."""
    tensors = [
        (tables.audit_tensor(tables.LOSS), "float32"),
        (tables.audit_tensor(tables.LOG_SOFTMAX), "float16"),
        (tables.audit_tensor(tables.ACTIVATION, "fc1"), "float16"),
        (tables.audit_tensor(tables.ACTIVATION, "fc3"), "float16"),
        (tables.audit_tensor(tables.ACTIVATION_GRAD, "fc1"), "float16"),
        (tables.audit_tensor(tables.PARAM_GRAD, "fc1.weight"), "float32"),
        (tables.audit_tensor(tables.PRODUCED_GRAD, "fc1.weight"), "float16"),
        (tables.audit_tensor(tables.OPTIM_STATE, "fc1.weight", "step"), "int64"),
        (tables.audit_tensor(tables.OPTIM_STATE, "fc1.weight", "exp_avg"), "float32"),
    ]
    return [
        {"mode": "fp16-amp", **t, "tensor": f"t{i}", "dtype": d} for i, (t, d) in enumerate(tensors)
    ]


def _census_rows(flushed_noscale: dict[int, float]) -> list[dict]:
    return [
        {
            "batch_size": bs,
            "step": 200,
            "loss_scale": 65536.0,
            "mode": mode,
            **tables.grad_tensor(tables.ACTIVATION_GRAD, "fc3"),
            "tensor": "the logits' gradient",  # the label the sentence quotes, cell as it is
            "dtype": "float16",
            "flushed": flushed,
            "subnormal": 0.0,
            "nonfinite": 0.0,
            "rel_err": err,
        }
        for bs, f in flushed_noscale.items()
        for mode, flushed, err in (
            ("fp16-amp-noscale", f, 1e-3),
            ("fp16-amp", 0.0, 1e-3),
            ("bf16-amp", 0.0, 8e-3),
        )
    ]


def _tables(flushed_noscale, noscale_loss):
    summary = pd.DataFrame(
        [
            {
                "batch_size": 1024,
                "mode": m,
                "seed": 0,
                "optimizer": "fused",
                "final_loss": loss,
                "step_ms": ms,
            }
            for m, loss, ms in (
                ("fp32", 0.1, 40.0),
                ("fp16-amp", 0.1, 8.0),
                ("fp16-amp-noscale", noscale_loss, 7.0),
            )
        ]
    )
    return {
        "audit": pd.DataFrame(_audit_rows()),
        "census": pd.DataFrame(_census_rows(flushed_noscale)),
        "summary": summary,
        "audit_json": {
            "chained": "fc1.weight",
            "chains": {"fp16-amp": ["A", "B"]},
            "error_paths": [
                {
                    "param_dtype": "float16",
                    "optimizer": "foreach",
                    "outcome": "raised",
                    "exception": "ValueError",
                    "message": "Attempting to unscale FP16 gradients.",
                    "raised_in": "scaler.step(optimizer)",
                    "torch": "9.9",
                }
            ],
        },
    }


def _text(t) -> str:
    return "\n".join(answer.answer(t, "9.9"))


def test_dtypes_come_from_the_columns():
    text = _text(_tables({1024: 0.0}, 0.1))
    assert (
        "the loss is float32 (the log-softmax inside cross_entropy ran in float16), the "
        "activations (fc1, fc3) are float16, the gradients with respect to them are "
        "float16, every weight and bias gradient leaves its matmul as float16, and `param.grad` "
        "is float32 (Adam's state: float32)" in text  # Adam's int64 step count is not its state
    )
    assert "the autograd chain from the loss to fc1.weight is A → B." in text
    assert "only `param.grad` is float32, while the activation gradients are float16" in text


def test_the_dtypes_answer_leaves_out_what_the_audit_did_not_observe():
    t = _tables({1024: 0.0}, 0.1)
    audit = t["audit"]
    no_log_softmax = audit["dtype"].where(audit["kind"] != tables.LOG_SOFTMAX, "not run")
    t["audit"] = audit.assign(dtype=no_log_softmax)[audit["kind"] != tables.ACTIVATION]
    t["audit_json"]["chains"] = {}  # a chain the capture did not find
    text = _text(t)
    assert (
        "on torch 9.9, the loss is float32, the gradients with respect to the activations are "
        "float16, every weight and bias gradient leaves its matmul as float16, and `param.grad` "
        "is float32 (Adam's state: float32).\n" in text
    )
    assert "log-softmax" not in text and "autograd chain" not in text and "()" not in text
    assert "The claim that the loss is float16 is not borne out (it is float32); the" in text


def test_the_dtypes_answer_without_an_audit_of_the_mode_is_one_line():
    t = _tables({1024: 0.0}, 0.1)
    t["audit"] = t["audit"].iloc[:0]
    t["audit_json"]["unsupported"] = {"fp16-amp": "failed: RuntimeError: no hooks"}
    text = _text(t)
    assert "**dtypes.** Not observed: the dtype audit of fp16-amp failed (RuntimeError: no" in text
    assert "The claim that" not in text and "not observed (" not in text


def test_answer_when_fp16_flushes():
    text = _text(_tables({1024: 0.002, 8192: 0.05, 64: 0.5}, 0.3))
    assert (
        "at batch size 64 (50.0% of the logits' gradient at step 200); 8192 (5.0% of the logits' "
        "gradient at step 200), of the batch sizes measured (64, 1024, 8192)" in text
    )
    assert (
        "more than 10% above fp32's worst seed at batch size 1024 (1 of 1 seeds; mean 0.3 against "
        "fp32's 0.1)" in text
    )
    # Flushed elements and a loss 3× fp32's on one seed of a synthetic task: the old rule said
    # "yes". Neither decides (`bench.verdicts.training`): only a divergence does.
    assert "Not known from this study: training without it did not diverge" in text
    # The study's own step times, taken beside its other runs, are no GradScaler cost.
    assert "What GradScaler costs" not in text
    assert "8.00e-03 with bf16 and 1.00e-03 with scaled fp16, 8.0 times larger" in text
    assert 'raises ValueError in scaler.step(optimizer) ("Attempting to unscale FP16' in text


def test_answer_when_fp16_is_fine():
    text = _text(_tables({1024: 0.0, 8192: 0.005}, 0.105))
    assert "flushes no more than 1% of the elements of any gradient tensor" in text
    assert "0.50%" in text and "norm that they carry was not measured" in text
    assert "ends within 10% of fp32's training loss (of its worst seed) at every batch size" in text
    # The old rule said "not needed"; a numerics study cannot show that.
    assert "Not known from this study" in text and "Not on this model" not in text


def test_answer_makes_no_convergence_claim_without_both_runs():
    t = _tables({1024: 0.0}, 0.1)
    t["summary"] = t["summary"][t["summary"]["mode"] != "fp16-amp-noscale"]
    text = _text(t)
    assert "did not train both fp32 and fp16 without a scaler" in text
    assert "Not known from this study" in text
    assert "by the two tests above" not in text


def _empty(name: str) -> pd.DataFrame:
    return tables.frame(name, [])


def test_answer_when_every_census_job_failed():
    t = _tables({1024: 0.0}, 0.3)
    t["census"] = _empty("census")
    text = _text(t)
    assert "**Underflow.** Not measured" in text
    assert "Not known from this study" in text  # the old rule: "yes", by the convergence test
    assert "What bf16 gives up" not in text


def test_the_answer_says_needed_where_training_without_the_scaler_diverged():
    t = _tables({1024: 0.0}, 0.3)
    diverged = t["summary"]["mode"] == "fp16-amp-noscale"
    t["summary"]["divergence"] = ["blowup" if d else "none" for d in diverged]
    t["summary"]["diverged_at_step"] = [700 if d else None for d in diverged]
    text = _text(t)
    assert "On this synthetic task, yes at batch size 1024: training without it diverged" in text
    assert "then diverged (at batch 1024, step 700)" in text


def test_answer_when_every_job_failed():
    t = _tables({1024: 0.0}, 0.1)
    t["census"], t["summary"] = _empty("census"), _empty("summary")
    text = _text(t)
    assert "did not train both" in text and "**Underflow.** Not measured" in text
    assert "Not known from this study" in text
    assert "What GradScaler costs" not in text


def _steps(mode, seed, losses, scales=None):
    return [
        {
            "mode": mode,
            "batch_size": 8,
            "seed": seed,
            "optimizer": "fused",
            "step": i,
            "loss": loss,
            "scale": None if scales is None else scales[i],
            "skipped": bool(scales and i and scales[i] < scales[i - 1]),
        }
        for i, loss in enumerate(losses)
    ]


def test_summary_time_to_target_by_hand():
    fp32 = [4.0] * 5 + [1.0] * 40
    fast = [4.0] * 2 + [0.5] * 43
    slow = [4.0] * 44 + [math.inf]
    steps = pd.DataFrame(
        _steps("fp32", 0, fp32)
        + _steps("bf16-amp", 0, fast)
        + _steps("fp16-amp-noscale", 0, slow, [8.0] * 30 + [4.0] * 15)
    )
    evals = pd.DataFrame(
        [
            {
                "mode": m,
                "batch_size": 8,
                "seed": 0,
                "step": 40,
                "heldout_loss": 1.0,
                "heldout_acc": 0.9,
            }
            for m in ("fp32", "bf16-amp", "fp16-amp-noscale")
        ]
    )
    runs = pd.DataFrame(
        [
            {"mode": m, "batch_size": 8, "seed": 0, "step_ms": ms}
            for m, ms in (("fp32", 10.0), ("bf16-amp", 2.0), ("fp16-amp-noscale", 1.0))
        ]
    )
    summary = run_summary.summarize_runs(steps, evals, runs, horizon=40)
    assert list(summary.columns) == list(tables.TABLES["summary"].columns)
    s = summary.set_index("mode")
    # fp32's 20-step mean at the end is 1.0. bf16's running mean over steps 0..t (t < 20) is
    # (8 + 0.5 (t - 1)) / (t + 1), first <= 1.0 at t = 13: 14 steps.
    assert s.loc["fp32", "final_loss"] == pytest.approx(1.0)
    assert s.loc["bf16-amp", "steps_to_target"] == 14
    assert s.loc["bf16-amp", "time_to_target_s"] == pytest.approx(14 * 2.0 / 1e3)
    assert s.loc["fp32", "steps_to_target"] == 25  # the window 5..24 is the first of only 1.0s
    assert math.isnan(s.loc["fp16-amp-noscale", "time_to_target_s"])
    # Step 44 (inf) is past the horizon; the scale halved once, at step 30.
    assert s.loc["fp16-amp-noscale", "nonfinite_steps"] == 0
    assert s.loc["fp16-amp-noscale", "skipped_steps"] == 1
    assert s.loc["fp32", "heldout_acc"] == 0.9


def test_summary_of_no_runs_is_empty_with_its_columns():
    out = run_summary.summarize_runs(_empty("steps"), _empty("evals"), _empty("runs"), horizon=10)
    assert out.empty and list(out.columns) == list(tables.TABLES["summary"].columns)


def test_the_mode_census_sentence_quotes_each_mode_beside_bf16_amp():
    from bench.numerics.render.sentences.beyond import beyond_census_sentences

    rows = []
    modes = (("bf16-amp", 0.01), ("bf16-pure", 0.01), ("fp8-rowwise", 0.05))
    for mode, err in (*modes, ("fp8-tensorwise", 0.01)):
        for step in (0, 100):
            for kind, scale in (("activation_grad", 1.0), ("produced_grad", 2.0)):
                rows.append(
                    {
                        "batch_size": 64,
                        "mode": mode,
                        "step": step,
                        "kind": kind,
                        "rel_err": err * scale * (step + 1),
                    }
                )
    rows.append({"batch_size": 64, "mode": "fp32", "step": 0, "kind": "param_grad", "rel_err": 9})
    (text,) = beyond_census_sentences(pd.DataFrame(rows))
    assert (
        "`bf16-pure` at batch 64: step 0: 0.01 / 0.02, step 100: 1.01 / 2.02 (equal to bf16-amp's "
        "within 2%);" in text
    )
    assert (
        "`fp8-tensorwise` at batch 64: step 0: 0.01 / 0.02, step 100: 1.01 / 2.02 (equal to "
        "bf16-amp's within 2%, as when the mode converts no Linear of the model)" in text
    )
    assert "`fp8-rowwise` at batch 64: step 0: 0.05 / 0.1, step 100: 5.05 / 10.1;" in text
    assert text.endswith("bf16-amp at batch 64: step 0: 0.01 / 0.02, step 100: 1.01 / 2.02.")
    assert beyond_census_sentences(pd.DataFrame(rows[:4])) == []  # bf16-amp alone: no mode
    # A mode whose rows hold no activation or produced gradient: no sentence, not an empty one.
    only_param = [*rows[:4], {**rows[-1], "mode": "fp8-rowwise"}]
    assert beyond_census_sentences(pd.DataFrame(only_param)) == []


def test_bf16_error_as_large_as_the_gradient_is_not_read_as_mantissa_bits():
    t = _tables({1024: 0.0}, 0.1)
    text = _text(t)  # bf16 8e-3 against scaled fp16 1e-3: a few bits
    assert "8.00e-03 with bf16 and 1.00e-03 with scaled fp16, 8.0 times larger: bf16 keeps" in text
    assert "its direction" not in text
    lost = {"bf16-amp": 1.2, "fp16-amp": 0.6}
    t["census"]["rel_err"] = t["census"]["mode"].map(lost).fillna(t["census"]["rel_err"])
    text = _text(t)
    assert (
        "1.20e+00 with bf16 and 6.00e-01 with scaled fp16, 2.0 times larger: errors of the" in text
    )
    assert "3 fewer mantissa bits" not in text
