"""Execution variants: the axis, `unsupported` rows, a compiled step on the CPU, and the
hand-captured CUDA graph keeping GradScaler's skipped step (CUDA only)."""

import math

import pandas as pd
import pytest
import torch

from bench.execution import variants
from bench.measure.runner import run_case
from bench.plan.plan import resolve
from bench.plan.step import build
from bench.publish import variants as tables
from bench.store.run_env import Ceilings
from tests.conftest import tiny_case
from tests.stored import timing_row


def test_the_variant_is_an_axis_with_a_default():
    assert tiny_case().variant == "eager"
    assert tiny_case(variant="compile").case_id == tiny_case().case_id + "/variant=compile"
    with pytest.raises(ValueError, match="'jit'"):
        tiny_case(variant="jit")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU's unsupported rows")
@pytest.mark.parametrize("variant", ["cudagraph", "compile-graphs"])
def test_graph_variants_are_unsupported_rows_on_the_cpu(variant, cpu_ceilings):
    row, samples = run_case(resolve(tiny_case(variant=variant)), cpu_ceilings)
    assert row["status"] == "unsupported"
    assert row["error"] == "CUDA graphs need a CUDA device"
    assert row["variant"] == variant and samples == {}


def test_compile_times_its_phases_after_compiling(cpu_ceilings):
    row, samples = run_case(resolve(tiny_case(variant="compile", mode="bf16-amp")), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert set(samples) == {"fwd", "bwd", "step", "total"}
    assert row["prepare_s"] > 0 and row["recompiled"] is False
    assert row["output_dtype"] == "bfloat16"


def test_eager_keeps_its_phases_and_has_no_preparation(cpu_ceilings):
    row, samples = run_case(resolve(tiny_case()), cpu_ceilings)
    assert row["prepare_s"] == 0.0 and row["eager_parts"] == ""
    # Each step's phases add up to its total (medians need not: they come from different steps).
    for i, total in enumerate(samples["total"]):
        assert sum(samples[p][i] for p in ("fwd", "bwd", "step")) == pytest.approx(total)
    for phase in ("fwd", "bwd", "step"):
        assert row[f"{phase}_share"] == pytest.approx(row[f"{phase}_ms"] / row["total_ms"])


@pytest.mark.cuda
@pytest.mark.parametrize("optimizer", ["fused", "foreach"])
def test_cudagraph_keeps_the_skipped_step_after_an_overflow(optimizer):
    case = tiny_case(device="cuda", mode="fp16-amp", optimizer=optimizer, variant="cudagraph")
    s = build(resolve(case), capturable=True)
    prepared = variants.prepare(s)
    (replay,) = prepared.phases.values()
    replay()  # a clean step moves the weights and keeps the scale
    torch.cuda.synchronize()
    scale = s.scaler.get_scale()
    before = [p.detach().clone() for p in s.model.parameters()]
    s.x.fill_(float("inf"))  # the static input: the next replay overflows
    replay()
    torch.cuda.synchronize()
    assert not math.isfinite(prepared.losses[-1].item())
    assert all(torch.equal(b, p) for b, p in zip(before, s.model.parameters(), strict=True))
    assert s.scaler.get_scale() == scale / 2
    assert bool(prepared.eager_parts) == (optimizer == "foreach")


@pytest.mark.cuda
def test_cudagraph_row_times_only_the_whole_step(cpu_ceilings):
    row, samples = run_case(
        resolve(tiny_case(device="cuda", mode="bf16-amp", optimizer="fused", variant="cudagraph")),
        cpu_ceilings,
    )
    assert row["status"] == "ok", row["error"]
    assert set(samples) == {"graph", "total"}
    assert "fwd_ms" not in row and row["prepare_s"] > 0


@pytest.mark.parametrize(
    ("variant", "device"),
    [
        ("eager", "cpu"),
        ("compile", "cpu"),
        pytest.param("cudagraph", "cuda", marks=pytest.mark.cuda),
    ],
)
def test_nothing_of_a_case_outlives_it(variant, device, monkeypatch, cpu_ceilings):
    """A case's model must be unreachable once run_case returns, without another garbage
    collection: memory a case leaves behind would show in the next case's peak (seen on the H200
    before the fix: a CUDA-graph case's state, held in a reference cycle, stayed allocated into
    the next cases)."""
    import weakref

    from bench.measure import runner

    models = []
    real_build = runner.build

    def keep_a_weak_reference(plan, **kwargs):
        s = real_build(plan, **kwargs)
        models.append(weakref.ref(s.model))
        return s

    monkeypatch.setattr(runner, "build", keep_a_weak_reference)
    row, _ = run_case(resolve(tiny_case(variant=variant, device=device)), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert models and models[0]() is None


@pytest.mark.cuda
def test_cudagraph_cases_leave_no_memory_for_the_next_case():
    """Each capture once made a new side stream, and cuBLAS kept a workspace per stream that ran
    a matmul: the allocation at a case's start grew with every cudagraph case before it."""
    ceilings = Ceilings.from_record(
        {"matmul_tflops_float32": 1.0, "matmul_tflops_bfloat16": 1.0, "copy_gbps": 1.0}
    )
    starts = []
    for seed in range(4):
        case = tiny_case(device="cuda", mode="bf16-amp", variant="cudagraph", seed=seed)
        row, _ = run_case(resolve(case), ceilings)
        assert row["status"] == "ok", row["error"]
        starts.append(row["residue_gib"])
        assert row["peak_alloc_gib"] > 0
    assert starts[1:] == [starts[1]] * 3, starts


def test_the_best_variant_is_named_alone_only_outside_the_others_noise():
    # Each row's interval is its median ± 1% (IQR 2%, no p10/p90): fp32's compile is 0.5% under
    # eager, inside the noise; tf32's is 20% under, clear of it.
    rows = [
        timing_row(mode="fp32", variant="eager", total_ms=10.0),
        timing_row(mode="fp32", variant="compile", total_ms=9.95),
        timing_row(mode="tf32", variant="eager", total_ms=10.0),
        timing_row(mode="tf32", variant="compile", total_ms=8.0),
    ]
    df = pd.DataFrame(rows)
    table = {
        cells[0]: cells
        for line in "\n".join(tables.section(df)).splitlines()
        if line.startswith("| fp32") or line.startswith("| tf32")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert table["fp32"][-2] == "tied: compile, eager"
    assert table["tf32"][-2] == "compile"
    assert table["tf32"][-1] == "1.250"


def test_the_variants_table_of_a_readme_says_a_tie_and_shows_no_speed_up_inside_it():
    rows = [  # fused Adam; intervals are the median ± 1%
        timing_row(mode="fp32", optimizer="fused", variant="eager", total_ms=10.0),
        timing_row(mode="fp32", optimizer="fused", variant="compile", total_ms=9.95),
        timing_row(mode="tf32", optimizer="fused", variant="eager", total_ms=10.0),
        timing_row(mode="tf32", optimizer="fused", variant="compile", total_ms=8.0),
        timing_row(mode="tf32", optimizer="fused", variant="cudagraph", total_ms=8.02),
        timing_row(mode="bf16-amp", optimizer="fused", variant="eager", total_ms=10.0),
        timing_row(mode="bf16-amp", optimizer="fused", variant="compile", total_ms=10.02),
        timing_row(mode="bf16-amp", optimizer="fused", variant="cudagraph", total_ms=9.99),
    ]
    text = tables.best_variant_table(pd.DataFrame(rows))
    cells = {
        c[0]: c[1]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| mode")
        for c in [[x.strip() for x in line.strip("|").split("|")]]
    }
    assert cells["fp32"] == "compile ≈ eager (10 → 9.95 ms)"  # eager tied: no speed-up shown
    assert cells["tf32"] == "compile ≈ cudagraph, 1.250× (10 → 8 ms)"
    assert cells["bf16-amp"] == "all 3 tied (10 → 9.99 ms)"
