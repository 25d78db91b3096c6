"""The numerics study on the CPU: audit, census, histogram, summaries, the Answer, the CLI."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from bench import answer, numerics, parallel
from bench.audit import audit_mode, error_paths
from bench.underflow import census, fp16_fate, log2_histogram
from tests.conftest import tiny_case

ROOT = Path(__file__).resolve().parent.parent


def _dtype(rows, tensor):
    return next(r["dtype"] for r in rows if r["tensor"] == tensor)


def test_dtype_audit_under_cpu_autocast():
    rows, ops, chain = audit_mode(tiny_case(mode="fp16-amp"))
    assert _dtype(rows, "logits (fc3 output)") == "float16"
    assert _dtype(rows, "loss") == "float32"
    assert _dtype(rows, "grad of logits (fc3 output)") == "float16"
    assert _dtype(rows, "fc2.weight grad as its matmul produced it") == "float16"
    assert _dtype(rows, "fc2.weight.grad") == "float32"
    assert _dtype(rows, "Adam exp_avg") == "float32"
    assert chain[0] == "NllLossBackward0" and chain[-1].endswith("AccumulateGrad")
    assert chain[-2] == "ToCopyBackward0"  # the cast that makes param.grad float32
    phases = {o["phase"] for o in ops}
    assert phases == {"forward", "backward", "optimizer"}
    assert any(o["op"].startswith("aten.addmm") and o["outputs"] == "float16" for o in ops)


def test_dtype_audit_fp32_has_no_casts():
    rows, _, chain = audit_mode(tiny_case(mode="fp32"))
    assert {r["dtype"] for r in rows} == {"float32"}
    assert "ToCopyBackward0" not in chain


def test_error_paths_record_the_outcome():
    rows = {(r["param_dtype"], r["optimizer"]): r for r in error_paths(tiny_case())}
    fp16 = rows[("float16", "foreach")]
    assert (fp16["outcome"], fp16["exception"]) == ("raised", "ValueError")
    assert fp16["message"] == "Attempting to unscale FP16 gradients."
    assert fp16["raised_in"] == "scaler.step(optimizer)" and fp16["torch"] == torch.__version__
    assert set(rows) == {
        ("float16", "foreach"),
        ("float16", "fused"),
        ("bfloat16", "foreach"),
        ("bfloat16", "fused"),
    }


def test_census_on_crafted_tensors():
    ref = torch.tensor([1.0, 2.0**-20, 2.0**-26, 0.0, 2.0**-30, 3.0, 2.0**-15, 0.5])
    g = ref.half()  # 2**-26 and 2**-30 flush; 2**-20 and 2**-15 are subnormal in float16
    c = census(g, ref)
    assert c["flushed"] == 2 / 8 and c["subnormal"] == 2 / 8 and c["ref_zero"] == 1 / 8
    assert c["nonfinite"] == 0 and c["rel_err"] < 1e-6
    # Scaled by 2**16 nothing flushes or is subnormal, but 1.0 and 3.0 overflow past 65504.
    scaled = census((ref * 2.0**16).half(), ref, scale=2.0**16)
    assert (scaled["flushed"], scaled["subnormal"], scaled["nonfinite"]) == (0, 0, 2 / 8)
    bf = census(ref.bfloat16(), ref)
    assert bf["flushed"] == 0 and bf["subnormal"] == 0


def test_fp16_fate_by_the_cast():
    v = torch.tensor([2.0**-26, 2.0**-20, 1.0, 2.0**10, 0.0])
    assert fp16_fate(v) == {"fp16_flushed": 0.2, "fp16_subnormal": 0.2, "fp16_overflow": 0.0}
    assert fp16_fate(v, 2.0**16)["fp16_overflow"] == 0.4  # 2**16 and 2**26 exceed 65504


def test_histogram_bins_on_known_values():
    v = torch.tensor([0.0, 0.0, 1.0, 1.5, -1.9, 2.0**-24, 3.0 * 2.0**-25, 2.0**-14])
    rows = {r["bin"]: r["count"] for r in log2_histogram(v)}
    assert rows == {"zero": 2, "-24": 2, "-14": 1, "0": 3}
    assert sum(r["share"] for r in log2_histogram(v)) == pytest.approx(1.0)


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
    slow = [4.0] * 45
    steps = pd.DataFrame(
        _steps("fp32", 0, fp32) + _steps("bf16-amp", 0, fast) + _steps("fp16-amp-noscale", 0, slow)
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
    s = numerics.summarize_runs(steps, evals, runs, horizon=40).set_index("mode")
    # fp32's 20-step mean at the end is 1.0. bf16's running mean over steps 0..t (t < 20) is
    # (8 + 0.5 (t - 1)) / (t + 1), first <= 1.0 at t = 13: 14 steps.
    assert s.loc["fp32", "final_loss"] == pytest.approx(1.0)
    assert s.loc["bf16-amp", "steps_to_target"] == 14
    assert s.loc["bf16-amp", "time_to_target_s"] == pytest.approx(14 * 2.0 / 1e3)
    assert s.loc["fp32", "steps_to_target"] == 25  # the window 5..24 is the first of only 1.0s
    assert math.isnan(s.loc["fp16-amp-noscale", "time_to_target_s"])


def _tables(flushed_noscale, noscale_loss):
    census_rows = [
        {
            "batch_size": bs,
            "step": 0,
            "loss_scale": 65536.0,
            "mode": m,
            "tensor": t,
            "dtype": "float16",
            "flushed": f,
            "subnormal": 0.0,
            "nonfinite": 0.0,
            "rel_err": e,
        }
        for bs, f in flushed_noscale.items()
        for m, t, f2, e in (
            ("fp16-amp-noscale", "grad of fc3 output", None, 1e-3),
            ("fp16-amp", "grad of fc3 output", 0.0, 1e-3),
            ("bf16-amp", "grad of fc3 output", 0.0, 8e-3),
        )
        for f in [f if f2 is None else f2]
    ]
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
    audit_rows = [
        {"mode": "fp16-amp", "tensor": t, "dtype": d}
        for t, d in (
            ("loss", "float32"),
            ("fc1 output", "float16"),
            ("grad of fc1 output", "float16"),
            ("fc1.weight.grad", "float32"),
            ("fc1.weight grad as its matmul produced it", "float16"),
        )
    ]
    return {
        "audit": pd.DataFrame(audit_rows),
        "census": pd.DataFrame(census_rows),
        "summary": summary,
        "audit_json": {
            "chain_to_fc1_weight": {"fp16-amp": ["A", "B"]},
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


def test_answer_when_fp16_flushes():
    text = "\n".join(answer.answer(_tables({1024: 0.002, 8192: 0.05}, 0.3), "9.9"))
    assert "the loss is float32" in text and "`param.grad` is float32" in text
    assert "at batch size 8192 (5.0% of grad of fc3 output at step 0)" in text
    assert "more than 10% above fp32's at batch size 1024 (0.3 against fp32's 0.1)" in text
    assert "yes at batch size 1024, 8192" in text
    assert "+14.3% at batch 1024 (8 against 7 ms)" in text
    assert "8.00e-03 with bf16 and 1.00e-03 with scaled fp16, 8.0 times larger" in text
    assert 'raises ValueError in scaler.step(optimizer) ("Attempting to unscale FP16' in text


def test_answer_when_fp16_is_fine():
    text = "\n".join(answer.answer(_tables({1024: 0.0, 8192: 0.005}, 0.105), "9.9"))
    assert "flushes no more than 1% of any gradient tensor" in text and "0.50%" in text
    assert "ends within 10% of fp32's" in text
    assert "Not on this model at the batch sizes measured" in text


def test_parallel_keeps_the_given_order_and_runs_costly_first():
    seen = []

    def fn(x):
        seen.append(x)
        return x * 10

    assert parallel.run_all(fn, [1, 3, 2], workers=1, cost=lambda x: x) == [10, 30, 20]
    assert seen == [3, 2, 1]


def test_parallel_worker_processes():
    assert parallel.run_all(abs, [-1, -5, 3], workers=2, cost=lambda x: abs(x)) == [1, 5, 3]


SMALL_STUDY = [
    "numerics",
    "--device",
    "cpu",
    "--census-batch-sizes",
    "8",
    "--conv-batch-sizes",
    "16",
    "--modes",
    "fp32,fp16-amp,fp16-amp-noscale",
    "--seeds",
    "0",
    "--steps",
    "20",
    "--eval-every",
    "10",
    "--long-steps",
    "30",
    "--checkpoints",
    "0,5",
]
"""Four jobs: a census trajectory and three convergence runs."""


@pytest.fixture(scope="module")
def small_study(tmp_path_factory) -> Path:
    """One whole study through ./run_bench.sh, as a user runs it."""
    proc = subprocess.run(
        [
            str(ROOT / "run_bench.sh"),
            *SMALL_STUDY,
            "--results-dir",
            str(tmp_path_factory.mktemp("whole")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**__import__("os").environ, "PYTHON": sys.executable},
    )
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])


def test_numerics_cli_end_to_end(small_study):
    run_dir = small_study
    assert run_dir.name.endswith("_numerics")
    for name in (
        "audit.csv",
        "audit_ops.csv",
        "audit.json",
        "census.csv",
        "histogram.csv",
        "fp16_fate.csv",
        "convergence_steps.csv",
        "summary.csv",
        "histogram.png",
        "loss_curves.png",
        "scale.png",
        "report.md",
        "env.json",
    ):
        assert (run_dir / name).is_file(), name
    steps = pd.read_csv(run_dir / "convergence_steps.csv")
    assert steps.groupby("mode")["step"].max().to_dict() == {
        "fp16-amp": 29,
        "fp16-amp-noscale": 19,
        "fp32": 19,
    }
    report = (run_dir / "report.md").read_text()
    assert "## 5. Answer" in report and "the loss is float32" in report


def test_numerics_bad_input(tmp_path, capsys):
    from bench.cli import main

    assert (
        main(
            [
                "numerics",
                "--histogram-batch",
                "7",
                "--census-batch-sizes",
                "8",
                "--results-dir",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert (
        main(["numerics", "--steps", "25", "--eval-every", "10", "--results-dir", str(tmp_path)])
        == 2
    )
    assert main(["numerics", "--reduction", "max", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "--histogram-batch 7" in err[0] and "--steps 25" in err[1] and "'max'" in err[2]
    assert not any(tmp_path.iterdir())


def test_a_failing_job_becomes_a_row(monkeypatch):
    from bench import training

    def boom(job):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")

    monkeypatch.setattr(training, "convergence", boom)
    job = training.Job(kind="convergence", case=tiny_case(mode="bf16-amp"), steps=5)
    out = training.run_job(job)
    assert out == {
        "failed": [
            {
                "kind": "convergence",
                "mode": "bf16-amp",
                "batch_size": 8,
                "seed": 0,
                "error": "OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 GiB",
            }
        ]
    }


def test_answer_makes_no_convergence_claim_without_both_runs():
    tables = _tables({1024: 0.0}, 0.1)
    tables["summary"] = tables["summary"][tables["summary"]["mode"] != "fp16-amp-noscale"]
    text = "\n".join(answer.answer(tables, "9.9"))
    assert "did not train both fp32 and fp16 without a scaler" in text


def test_an_interrupted_study_resumes_where_it_stopped(small_study, tmp_path, monkeypatch, capsys):
    from bench.cli import main

    real_job, ran = numerics.run_job, []

    def killed_after_two(job):
        if len(ran) == 2:
            raise KeyboardInterrupt  # as a time limit or Ctrl-C stops the study
        ran.append(numerics.job_key(job))
        return real_job(job)

    monkeypatch.setattr(numerics, "run_job", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        main([*SMALL_STUDY, "--results-dir", str(tmp_path)])
    (cut,) = tmp_path.iterdir()
    assert sorted(f.stem for f in (cut / numerics.JOBS_DIR).glob("*.json")) == sorted(ran)
    assert not (cut / "summary.csv").exists()
    capsys.readouterr()

    assert main(["numerics", "--resume", str(cut), "--steps", "5"]) == 2
    assert main(["numerics", "--resume", str(small_study)]) == 2  # complete already
    assert main(["numerics", "--resume", str(tmp_path)]) == 2  # not a study's folder
    err = capsys.readouterr().err.splitlines()
    assert "drop --steps" in err[0] and "complete" in err[1] and "no env.json" in err[2]

    before, ran = ran, []
    monkeypatch.setattr(numerics, "run_job", lambda job: ran.append(job) or real_job(job))
    monkeypatch.setattr(sys, "argv", ["bench", "numerics", "--resume", str(cut)])  # as recorded
    assert main(sys.argv[1:]) == 0
    assert len(ran) == 2 and not {numerics.job_key(j) for j in ran} & set(before)
    assert not (cut / numerics.JOBS_DIR).exists()
    # The CPU is deterministic, so the resumed study's tables are those of the whole one.
    for name in ("convergence_steps.csv", "convergence_evals.csv", "census.csv", "histogram.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(cut / name), pd.read_csv(small_study / name))
    info = json.loads((cut / "env.json").read_text())
    assert "ended" in info and len(info["resumed"]) == 1
    report = (cut / "report.md").read_text()
    assert "## 5. Answer" in report and "resumed 1 time(s)" in report
    assert f"python -m bench numerics --resume {cut}" in report


def test_a_core_run_can_begin_with_a_short_study(tmp_path):
    from bench import results
    from bench.cli import main

    args = ["run", "--device", "cpu", "--numerics", "--modes", "fp32,fp16-amp,bf16-amp"]
    assert main([*args, "--batch-sizes", "8,16", "--results-dir", str(tmp_path)]) == 0
    (run_dir,) = tmp_path.iterdir()
    assert (results.load(run_dir)["status"] == "ok").all()
    study = run_dir / "numerics"
    assert "## 5. Answer" in (study / "report.md").read_text()
    assert "](numerics/report.md)" in (run_dir / "report.md").read_text()
    census = pd.read_csv(study / "census.csv")
    assert sorted(census["batch_size"].unique()) == [8, 16] and set(census["step"]) == {0, 100}
    steps = pd.read_csv(study / "convergence_steps.csv")
    assert steps.groupby("mode")["step"].max().to_dict() == {
        "bf16-amp": 199,
        "fp16-amp": 199,
        "fp32": 199,
    }
