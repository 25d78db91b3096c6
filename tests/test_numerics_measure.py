"""The numerics study's measurements on the CPU: the dtype audit, the census, the histogram, the
census trajectory's rows, and the jobs that carry them."""

import pytest
import torch

from bench.faults import TRACEBACK_TEXT
from bench.numerics.measure import jobs, tables, training
from bench.numerics.measure.audit import audit_mode, error_paths
from bench.numerics.measure.underflow import census, fp16_fate, log2_histogram
from bench.plan.plan import modes_of
from tests.conftest import tiny_case, tiny_plan

OBSERVED = ("fc1", "relu", "fc2", "fc3")
"""The MLP's observed outputs (`bench.workloads.mlp.WORKLOAD`), in forward order; fc3's are the
logits."""
PARAMETERS = tuple(f"{fc}.{p}" for fc in ("fc1", "fc2", "fc3") for p in ("weight", "bias"))


def _dtype(rows, kind, module="", state=""):
    (row,) = [r for r in rows if (r["kind"], r["module"], r["state"]) == (kind, module, state)]
    return row["dtype"]


def test_dtype_audit_under_cpu_autocast():
    rows, ops, chain = audit_mode(tiny_plan(mode="fp16-amp"))
    assert _dtype(rows, tables.ACTIVATION, "fc3") == "float16"  # the logits
    assert _dtype(rows, tables.LOSS) == "float32"
    assert _dtype(rows, tables.ACTIVATION_GRAD, "fc3") == "float16"
    assert _dtype(rows, tables.PRODUCED_GRAD, "fc2.weight") == "float16"
    assert _dtype(rows, tables.PARAM_GRAD, "fc2.weight") == "float32"
    assert _dtype(rows, tables.OPTIM_STATE, "fc1.weight", "exp_avg") == "float32"
    assert chain[0] == "NllLossBackward0" and chain[-1].endswith("AccumulateGrad")
    assert chain[-2] == "ToCopyBackward0"  # the cast that makes param.grad float32
    phases = {o["phase"] for o in ops}
    assert phases == {"forward", "backward", "optimizer"}
    assert any(o["op"].startswith("aten.addmm") and o["outputs"] == "float16" for o in ops)


def test_audit_rows_are_the_known_vocabulary():
    """Every row's columns agree with its label as `tables` makes it (the last observed output is
    the logits), and a folder that kept only the labels reads the same columns back from them."""
    rows, _, _ = audit_mode(tiny_plan(mode="bf16-amp"))
    for r in rows:
        logits = r["module"] == OBSERVED[-1]
        assert tables.audit_tensor(r["kind"], r["module"], r["state"], logits=logits) == {
            k: r[k] for k in ("kind", "module", "state", "phase", "tensor")
        }
        assert r["phase"] == tables.PHASE[r["kind"]]
        if r["kind"] != tables.OPTIM_STATE:  # its module is filled in from the folder
            assert tables.legacy_tensor(r["tensor"]) == {
                k: r[k] for k in ("kind", "module", "state", "phase")
            }
    acts = [r["module"] for r in rows if r["kind"] == tables.ACTIVATION]
    assert acts == list(OBSERVED)


def test_dtype_audit_fp32_has_no_casts():
    rows, _, chain = audit_mode(tiny_plan(mode="fp32"))
    assert {r["dtype"] for r in rows} == {"float32"}
    assert "ToCopyBackward0" not in chain


def test_error_paths_record_the_outcome():
    rows = {(r["param_dtype"], r["optimizer"]): r for r in error_paths(tiny_plan(), modes_of())}
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


def test_census_trajectory_rows_say_what_they_are():
    out = training.census_trajectory(
        tiny_plan(mode="fp16-amp", optimizer="fused"),
        modes_of(training.CENSUS_ALL),
        noise=2.0,
        checkpoints=(0, 2),
        histogram=True,
    )
    grads = {(r["kind"], r["module"]) for r in out["census"]}
    assert grads == {(tables.ACTIVATION_GRAD, n) for n in OBSERVED} | {
        (tables.PRODUCED_GRAD, p) for p in PARAMETERS
    }
    for r in out["census"] + out["fp16_fate"]:
        assert r["tensor"] == tables.grad_tensor(r["kind"], r["module"])["tensor"]
    # bf16-pure on a model of its own; the float8 modes cannot run on the CPU.
    assert {(r["mode"], r["step"]) for r in out["census"]} == {
        (m, s) for m in (*training.CENSUS_MODES, "bf16-pure") for s in (0, 2)
    }
    dtypes = {r["mode"]: r["dtype"] for r in out["census"]}
    assert dtypes == {
        "fp16-amp": "float16",
        "fp16-amp-noscale": "float16",
        "bf16-amp": "bfloat16",
        "bf16-pure": "bfloat16",
    }
    assert out["failed"] == []
    assert {r["step"] for r in out["histogram"]} == {0, 2}
    assert {r["module"] for r in out["fp16_fate"]} == {tables.POOLED, *OBSERVED}
    with pytest.raises(ValueError, match="'fp32'"):
        training.census_trajectory(
            tiny_plan(), modes_of(training.CENSUS_ALL), noise=2.0, checkpoints=(0,),
            histogram=False,
        )  # fmt: skip


def test_a_failing_job_becomes_a_row(monkeypatch):
    def boom(case, **settings):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB\nmore")

    monkeypatch.setattr(training, "convergence", boom)
    job = jobs.Job(kind="convergence", case=tiny_case(mode="bf16-amp"), steps=5)
    out = jobs.run_job(job)
    # The full traceback rides along for the study to keep in its folder's errors/.
    assert "Tried to allocate 80.00 GiB\nmore" in out["failed"][0].pop(TRACEBACK_TEXT)
    assert out == {
        "failed": [
            {
                "kind": "convergence",
                "mode": "bf16-amp",
                "batch_size": 8,
                "seed": 0,
                "status": "oom",
                "error": "OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 GiB",
            }
        ]
    }


def test_job_kind_is_checked():
    with pytest.raises(ValueError, match="'histogram'"):
        jobs.Job(kind="histogram", case=tiny_case(), steps=1)


def test_run_all_keeps_the_given_order_and_runs_costly_first():
    seen = []

    def fn(x):
        seen.append(x)
        return x * 10

    assert jobs.run_all(fn, [1, 3, 2], workers=1, cost=lambda x: x) == [10, 30, 20]
    assert seen == [3, 2, 1]


def test_run_all_in_worker_processes():
    assert jobs.run_all(abs, [-1, -5, 3], workers=2, cost=lambda x: abs(x)) == [1, 5, 3]
