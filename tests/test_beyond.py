"""The modes beyond autocast on the CPU: pure bf16 trains in bf16; the float8 and
stochastic-rounding rows are `unsupported` without torchao or a float8 GPU (both faked); which
Linears a float8 mode converts and why; bf16 Adam bytes and per-Linear floors; the
update-underflow census; adding modes to a finished numerics study."""

import dataclasses
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from bench.measure.roofline import floor_columns, num_params, optimizer_bytes, step_work
from bench.measure.runner import run_case
from bench.modes import fp8
from bench.modes.mode import MODES
from bench.numerics.measure import jobs, tables, training
from bench.numerics.measure.config import NumericsConfig
from bench.numerics.render.sentences import beyond
from bench.plan.plan import resolve
from bench.plan.step import build, train_step
from bench.store.run_env import Ceilings
from bench.workloads.mlp import PRESETS
from bench.workloads.mlp import WORKLOAD as MLP
from tests.conftest import tiny_case
from tests.studies import resume_study, start_study

try:
    import torchao  # noqa: F401

    HAS_TORCHAO = True
except Exception:  # missing, or built against another torch
    HAS_TORCHAO = False


def _with_matmul(ceilings: Ceilings, rates: dict[str, float]) -> Ceilings:
    """`ceilings` with the matmul rates of `rates` set (TFLOP/s by matmul dtype)."""
    return dataclasses.replace(ceilings, matmul_tflops={**ceilings.matmul_tflops, **rates})


def test_bf16_pure_trains_in_bf16():
    s = build(resolve(tiny_case(mode="bf16-pure", optimizer="fused")))
    losses = [train_step(s) for _ in range(3)]
    assert all(torch.isfinite(loss) for loss in losses) and losses[0].dtype == torch.bfloat16
    assert {p.dtype for p in s.model.parameters()} == {torch.bfloat16}
    moments = {t.dtype for st in s.optimizer.state.values() for k, t in st.items() if k != "step"}
    assert moments == {torch.bfloat16}


@pytest.fixture
def no_torchao(monkeypatch):
    monkeypatch.setattr(fp8, "torchao_version", lambda: None)


@pytest.fixture
def with_torchao(monkeypatch):
    monkeypatch.setattr(fp8, "torchao_version", lambda: "0.18.0")


@pytest.mark.parametrize(
    ("cap", "torchao", "expected"),
    [
        (None, True, "compute capability 8.9 or newer (this GPU: none)"),
        ((8, 0), True, "compute capability 8.9 or newer (this GPU: 8.0)"),
        ((9, 0), False, "needs torchao"),
        ((8, 9), True, None),
        ((9, 0), True, None),
    ],
)
def test_fp8_needs_a_float8_gpu_and_torchao(monkeypatch, cap, torchao, expected):
    monkeypatch.setattr(fp8, "capability", lambda device: cap)
    monkeypatch.setattr(fp8, "torchao_version", lambda: "0.18.0" if torchao else None)
    for mode in ("fp8-tensorwise", "fp8-rowwise"):
        # An MLP of which both modes convert fc2 (the tiny one's plan converts nothing).
        case = tiny_case(mode=mode, device="cuda", input=2048, hidden=4096)
        reason = resolve(case).unsupported_reason
        assert reason is None if expected is None else expected in reason
    # Pure bf16 needs neither; its stochastic-rounding twin needs torchao only.
    assert resolve(tiny_case(mode="bf16-pure", device="cuda")).unsupported_reason is None
    sr = resolve(tiny_case(mode="bf16-pure-sr", device="cuda")).unsupported_reason
    assert (sr is None) == torchao


def test_fp8_on_the_cpu_is_an_unsupported_row(with_torchao, cpu_ceilings):
    case = tiny_case(mode="fp8-tensorwise", input=2048, hidden=4096)
    row, samples = run_case(resolve(case), cpu_ceilings)
    assert row["status"] == "unsupported" and "CUDA GPU" in row["error"] and not samples
    # What would be converted is in the row even so (torchao's rules).
    assert row["fp8_linears"].startswith("fc1 converted; fc2 converted; fc3 kept: in 4096 × out")
    assert (
        row["matmul_dtype"] == "fp8-tensorwise" and row["ceiling_tflops"] != row["ceiling_tflops"]
    )


def test_a_float8_plan_that_converts_no_linear_is_unsupported_on_any_machine(
    monkeypatch, cpu_ceilings
):
    monkeypatch.setattr(fp8, "capability", lambda device: (9, 0))  # a float8 GPU, with torchao
    monkeypatch.setattr(fp8, "torchao_version", lambda: "0.18.0")
    # The tiny MLP's fc1 and fc2 are float8-shaped, so the old check ran the case; every Linear
    # is below torchao's size thresholds, so its step would be bf16 autocast's.
    assert fp8.convertible(MLP, PRESETS["tiny"]) == ["fc1", "fc2"]
    for mode in ("fp8-tensorwise", "fp8-rowwise"):
        reason = resolve(tiny_case(mode=mode, device="cuda")).unsupported_reason
        assert reason.startswith(f"{mode}: float8 converts no Linear of mlp: fc1 kept: too small")
        assert "fc3 kept: in 64 × out 10 not both divisible by 16" in reason
        assert "convolutions" not in reason  # it applies to the model, at a larger size
    row, samples = run_case(resolve(tiny_case(mode="fp8-rowwise")), cpu_ceilings)
    assert row["status"] == "unsupported" and not samples
    assert row["error"].startswith("fp8-rowwise: float8 converts no Linear of mlp: ")


def test_bf16_pure_sr_without_torchao_is_an_unsupported_row(no_torchao, cpu_ceilings):
    row, _ = run_case(resolve(tiny_case(mode="bf16-pure-sr")), cpu_ceilings)
    assert row["status"] == "unsupported" and "needs torchao" in row["error"]


@pytest.mark.skipif(not HAS_TORCHAO, reason="torchao is not installed (the [fp8] extra)")
def test_bf16_pure_sr_runs_with_torchao(cpu_ceilings):
    s = build(resolve(tiny_case(mode="bf16-pure-sr")))
    assert (
        type(s.optimizer).__name__ == "_AdamW" and s.optimizer.param_groups[0]["weight_decay"] == 0
    )
    for _ in range(2):
        assert torch.isfinite(train_step(s))
    assert {p.dtype for p in s.model.parameters()} == {torch.bfloat16}


def test_which_linears_each_fp8_mode_converts():
    seed = PRESETS["seed"]
    assert set(fp8.plan(MLP, seed, "tensorwise").values()) == {"converted"}
    rowwise = fp8.plan(MLP, seed, "rowwise")
    assert rowwise["fc2"] == "converted"
    assert rowwise["fc1"] == "kept: too small for rowwise (in 1024 ≤ 1024)"
    assert rowwise["fc3"] == "kept: too small for rowwise (out 2000 ≤ 2048)"
    assert "divisible by 16" in fp8.plan(MLP, PRESETS["tiny"], "tensorwise")["fc3"]
    assert MODES["bf16-amp"].fp8_plan(MLP, seed) == {}
    with pytest.raises(ValueError, match="blockwise"):
        fp8.plan(MLP, seed, "blockwise")


def test_pure_bf16_adam_moves_half_the_bytes_and_fp8_floors_go_per_linear():
    size = PRESETS["tiny"]
    n = num_params(MLP, size)
    assert optimizer_bytes(n, False, param_bytes=2) == optimizer_bytes(n, False) / 2
    assert optimizer_bytes(n, False, param_bytes=2) == n * 14
    work = step_work(MLP, size, 4)
    one = floor_columns(work, scale_loss=False, matmul_tflops=1.0, copy_gbps=1.0)
    fast = {"fc1": 2.0, "fc2": 2.0}
    mixed = floor_columns(
        work, scale_loss=False, matmul_tflops=1.0, linear_tflops=fast, copy_gbps=1.0
    )
    # fc1 and fc2 at twice the rate: their FLOPs take half the time.
    fc3_fwd = 2.0 * 4 * 64 * 10 / 1e12 * 1e3
    assert mixed["fwd_floor_ms"] == pytest.approx((one["fwd_floor_ms"] - fc3_fwd) / 2 + fc3_fwd)


def test_bf16_pure_row_has_bf16_floors_and_its_memory(cpu_ceilings):
    pure, _ = run_case(resolve(tiny_case(mode="bf16-pure", optimizer="fused")), cpu_ceilings)
    amp, _ = run_case(resolve(tiny_case(mode="bf16-amp", optimizer="fused")), cpu_ceilings)
    assert pure["status"] == "ok" and pure["param_dtype"] == "bfloat16"
    assert pure["param_grad_dtype"] == "bfloat16" and pure["matmul_dtype"] == "bf16"
    assert pure["step_gbytes"] == pytest.approx(amp["step_gbytes"] / 2)
    assert pure["optim_state_gib"] < amp["optim_state_gib"] and pure["cast_gbytes"] == 0


def test_half_ulp_and_the_update_underflow_census():
    w = torch.tensor([1.0, 1.0, -3.0, 0.0], dtype=torch.bfloat16)
    # bf16 has 7 stored mantissa bits: the spacing at 1 is 2**-7, at 3 (in [2, 4)) 2**-6.
    assert training.half_ulp(w)[:3].tolist() == [2**-8, 2**-8, 2**-7]
    update = torch.tensor([2**-9, 2**-7, 2**-8, 1.0])
    after = (w.float() + update).to(torch.bfloat16)
    census = training.update_underflow(w, after, update)
    assert census == {"update_underflow_share": 0.5, "unchanged_share": 0.5}
    assert training.update_underflow(w, w, None)["unchanged_share"] == 1.0


def test_adam_update_is_the_step_adam_took():
    s = build(resolve(tiny_case(mode="fp32", optimizer="foreach")))
    before = s.model.fc2.weight.detach().clone()
    train_step(s)
    update = training.adam_update(s.optimizer, s.model.fc2.weight)
    change = s.model.fc2.weight.detach() - before
    torch.testing.assert_close(-update, change, atol=1e-7, rtol=1e-4)


def test_traces_of_pure_bf16_carry_the_update_underflow():
    s = build(resolve(tiny_case(mode="bf16-pure", optimizer="fused", lr=1e-4)))
    for _ in range(2):
        _, rows = training.traced_step(s)
    shares = [r["update_underflow_share"] for r in rows]
    assert all(0.0 <= v <= 1.0 for v in shares) and max(shares) > 0  # lr 1e-4: bf16 drops some
    assert all(0.0 <= r["unchanged_share"] <= 1.0 for r in rows)


def test_mode_sentences_name_the_fastest_and_the_verdicts():
    summary = pd.DataFrame(
        {
            "mode": ["fp32", "bf16-pure", "fp8-tensorwise"],
            "batch_size": [1024] * 3,
            "seed": [0] * 3,
            "step_ms": [40.0, 5.0, 4.0],
            "final_loss": [1.0, 1.05, 1.2],
            "heldout_acc": [0.9, 0.89, 0.8],
            "model_state_gib": [4.0, 2.0, 4.0],
        }
    )
    fastest, verdict = beyond.beyond_sentences(summary)
    assert "at batch 1024, `fp8-tensorwise` (4 ms per step, 10.00× fp32" in fastest
    assert "saves 0 GiB" in fastest
    assert "`bf16-pure` at batch 1024 ends at 1.05 against fp32's 1: within 10%" in verdict
    assert "`fp8-tensorwise` at batch 1024 ends at 1.2 against fp32's 1: **not** within" in verdict
    assert beyond.beyond_sentences(summary[summary["mode"] == "fp32"]) == []


def _fp32_study(parent: Path, **options: object) -> Path:
    """A finished study of fp32 alone, as small as a study gets: one census checkpoint, one
    convergence run of 10 steps."""
    options = {
        "census_batch_sizes": [8],
        "checkpoints": [0],
        "conv_batch_sizes": [16],
        "modes": ["fp32"],
        "seeds": [0],
        "steps": 10,
        "eval_every": 10,
        "long_steps": 0,
        **options,
    }
    cfg = NumericsConfig.build(device="cpu", options=options, workers=None)
    return start_study(cfg, results_dir=parent, command="ampbench test", tag=None)


def test_modes_are_added_to_a_finished_study(tmp_path, monkeypatch, no_torchao):
    # trace_every 0: as a study older than the traces recorded
    run_dir = _fp32_study(tmp_path, trace_every=0)
    fp32_steps = tables.read(run_dir, "steps")

    real_job, ran = jobs.run_job, []
    monkeypatch.setattr(jobs, "run_job", lambda job: ran.append(job.key) or real_job(job))
    monkeypatch.setattr(sys, "argv", ["bench", "numerics", "--resume", str(run_dir)])
    # Another commit is what adding modes is for: allowed, and recorded.
    env = json.loads((run_dir / "env.json").read_text())
    (run_dir / "env.json").write_text(json.dumps({**env, "commit": "0" * 40}))
    added = ("bf16-pure", "bf16-pure-sr")
    resume_study(run_dir, workers=None, force=False, add_modes=added, trace_every=5)

    assert sorted(ran) == ["convergence_bf16-pure-sr_b16_s0_10", "convergence_bf16-pure_b16_s0_10"]
    info = json.loads((run_dir / "env.json").read_text())
    (entry,) = info["resumed"]
    assert entry["added_modes"] == ["bf16-pure", "bf16-pure-sr"] and "commit" in entry["differs"][0]
    assert info["numerics_config"]["modes"] == ["fp32", "bf16-pure", "bf16-pure-sr"]
    assert info["numerics_config"]["trace_every"] == 5 and entry["trace_every"] == 5
    assert "ended" in info and "tabled_jobs" not in info
    t = tables.load(run_dir)
    assert set(t["summary"]["mode"]) == {"fp32", "bf16-pure"}
    assert set(t["traces"]["mode"]) == {"bf16-pure"}  # the fp32 run kept its (no) traces
    kept = t["steps"][t["steps"]["mode"] == "fp32"].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, fp32_steps, check_dtype=False)
    assert t["failed"]["status"].tolist() == ["unsupported"]  # bf16-pure-sr without torchao
    assert "bf16-pure" in t["audit_json"]["chains"]
    assert "needs torchao" in t["audit_json"]["unsupported"]["bf16-pure-sr"]
    assert set(t["audit"]["mode"]) >= {"fp32", "bf16-pure"}
    report = (run_dir / "report.md").read_text()
    assert "Modes bf16-pure, bf16-pure-sr were added" in report and "### Update underflow" in report
    assert "**Do the modes beyond autocast converge?** On this synthetic task" in report
    assert "`bf16-pure` at batch 16 ends at" in report

    with pytest.raises(Exception, match="already has"):
        resume_study(run_dir, workers=None, force=False, add_modes=("bf16-pure",))


def test_adding_a_mode_its_census_has_not_seen_runs_the_census_again(tmp_path, no_torchao):
    run_dir = _fp32_study(tmp_path)
    census = tables.read(run_dir, "census")
    # As a study made before bf16-pure existed: its census has no bf16-pure rows.
    tables.write(run_dir, "census", census[census["mode"] != "bf16-pure"])
    resume_study(run_dir, workers=None, force=False, add_modes=("bf16-pure",))
    again = tables.read(run_dir, "census")
    assert "bf16-pure" in set(again["mode"])
    assert len(again) == len(census)  # the old census rows were replaced, not kept twice
    info = json.loads((run_dir / "env.json").read_text())
    assert "retabled" not in info and info["resumed"][-1]["census_again_for"] == ["bf16-pure"]
    # A mode added before the census knew it: asking again runs only the census.
    tables.write(run_dir, "census", census[census["mode"] != "bf16-pure"])
    resume_study(run_dir, workers=None, force=False, add_modes=("bf16-pure",))
    assert len(tables.read(run_dir, "census")) == len(census)
    assert json.loads((run_dir / "env.json").read_text())["resumed"][-1]["added_modes"] == []
    report = (run_dir / "report.md").read_text()
    # Each census run replaced every census row: only the last one's line says the rows are its.
    assert report.count("The census ran again") == 2
    assert report.count("every census row (all modes) is from this run") == 1
    last = report.rindex("The census ran again")
    assert report.index("every census row (all modes) is from this run") > last
    with pytest.raises(Exception, match="already has"):
        resume_study(run_dir, workers=None, force=False, add_modes=("bf16-pure",))


def test_new_modes_stay_out_of_the_default_cpu_study_where_they_cannot_run(no_torchao):
    from bench.numerics.measure import config

    assert config.supported_modes("cpu") == (
        "fp32",
        "tf32",
        "fp16-amp",
        "fp16-amp-noscale",
        "bf16-amp",
        "bf16-pure",
    )


@pytest.mark.cuda
def test_scaled_mm_in_the_layouts_it_requires():
    reason = fp8.gpu_unsupported_reason("cuda")
    if reason is not None:
        pytest.skip(reason)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for granularity in fp8.GRANULARITIES:
        a, b, sa, sb = fp8.scaled_mm_operands(64, granularity, "cuda", gen)
        assert b.stride() == (1, 64)  # column-major second operand
        out = fp8.scaled_mm(a, b, sa, sb)
        ref = (a.float() @ b.float()) * sa * sb
        torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=0.5)


@pytest.mark.cuda
@pytest.mark.parametrize("mode", ["fp8-tensorwise", "fp8-rowwise"])
def test_fp8_modes_train_on_a_float8_gpu(mode, cpu_ceilings):
    # fc2 (4096 × 4096) passes both modes' size rules; fc1 and fc3 pass tensorwise's only.
    # float8 matmuls need every dimension a multiple of 16, the batch too: it is the inner
    # dimension of the weight-gradient matmul (the tiny preset's batch of 8 is not).
    case = tiny_case(
        mode=mode,
        device="cuda",
        batch_size=256,
        input=2048,
        hidden=4096,
        classes=2048,
    )
    reason = resolve(case).unsupported_reason
    if reason is not None:
        pytest.skip(reason)
    s = build(resolve(case))
    assert type(s.model.fc2).__name__ == "Float8Linear"
    assert all(torch.isfinite(train_step(s)) for _ in range(3))
    row, _ = run_case(resolve(case), _with_matmul(cpu_ceilings, {mode: 8.0}))
    assert row["status"] == "ok" and "fc2 converted" in row["fp8_linears"]
