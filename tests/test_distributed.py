"""Several ranks: two gloo processes under torchrun on the tiny preset (rows, the exchange after
each case, the scaling columns, a failing rank, a hung collective), and the pure parts (merging
rank rows, the collective floor) by hand. CUDA/NCCL tests skip without two GPUs."""

from __future__ import annotations

import math
import os
import socket
from pathlib import Path

import pandas as pd
import pytest
import torch

from bench.cli import main
from bench.execution import launch
from bench.execution.parallel import collective_bytes
from bench.faults import UsageError
from bench.ground.axes import PARALLELS
from bench.measure.ranks import merge
from bench.measure.roofline import comm_floor_columns
from bench.modes.mode import MODES
from bench.publish import readme
from bench.store import results
from bench.store.run_env import Ceilings
from bench.text import tables
from bench.workloads import gpt
from tests.conftest import tiny_case

WORKER = Path(__file__).resolve().parent / "dist_worker.py"
ERROR_CASE = tiny_case(mode="bf16-amp", optimizer="fused", parallel="ddp").case_id
HANG_CASE = tiny_case(mode="fp32", optimizer="fused", parallel="fsdp").case_id
TIMEOUT = "5"
"""Seconds a collective may take. Short, since the hung case waits it out (twice, on the control
group), but not so short that a healthy case's first collectives miss it on a busy machine."""


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    """One run on 2 gloo ranks: fp32 and bf16-amp × none, ddp, ddp-bf16, fsdp; rank 1 raises
    while building bf16-amp/ddp and stalls while building fp32/fsdp."""
    parent = tmp_path_factory.mktemp("dist")
    os.environ["AMPBENCH_TEST_FAULTS"] = f"error|{ERROR_CASE}|1;hang|{HANG_CASE}|1"
    try:
        code = launch.launch(
            2,
            [
                *("run", "--gpus", "2", "--device", "cpu", "--modes", "fp32,bf16-amp"),
                *("--optimizers", "fused", "--parallel", "none,ddp,ddp-bf16,fsdp"),
                *("--batch-sizes", "8", "--steps", "3", "--warmup", "1", "--repeats", "1"),
                "--no-overhead",
                *("--collective-timeout", TIMEOUT, "--results-dir", str(parent)),
            ],
            keep=["--collective-timeout", TIMEOUT],
            worker=[str(WORKER)],
            log=lambda msg: None,
        )
    finally:
        del os.environ["AMPBENCH_TEST_FAULTS"]
    (run_dir,) = [p for p in parent.iterdir() if p.is_dir()]
    return code, run_dir


def test_every_case_is_one_row_and_the_run_finishes(two_ranks):
    code, run_dir = two_ranks
    assert code == 0
    df = results.load(run_dir).set_index("case_id")
    assert len(df) == 8
    assert "ended" in results.read_env(run_dir)
    assert (run_dir / results.REPORT).is_file()
    assert not (run_dir / launch.INFLIGHT).exists()
    ok = df[df["status"] == "ok"]
    assert len(ok) == 6
    assert set(ok["world_size"]) == {2}


def test_rows_carry_the_ranks_and_the_scaling_columns(two_ranks):
    _, run_dir = two_ranks
    df = results.load(run_dir)
    ok = df[df["status"] == "ok"].set_index(["mode", "parallel"])
    ddp = ok.loc[("fp32", "ddp")]
    assert ddp["global_batch_size"] == 16 and ok.loc[("fp32", "none"), "global_batch_size"] == 8
    assert ddp["samples_per_s"] == pytest.approx(16 / ddp["total_ms"] * 1e3)
    assert ddp["samples_per_s_per_gpu"] == pytest.approx(8 / ddp["total_ms"] * 1e3)
    base = ok.loc[("fp32", "none"), "samples_per_s_per_gpu"]
    assert ddp["scaling_efficiency"] == pytest.approx(ddp["samples_per_s_per_gpu"] / base)
    assert math.isnan(ok.loc[("fp32", "none"), "scaling_efficiency"])
    # The row is the slowest rank's, with the spread of the per-rank medians.
    assert ddp["total_ms"] == pytest.approx(ddp["rank_total_ms_max"])
    assert ddp["rank_total_ms_min"] <= ddp["rank_total_ms_max"]
    # The CPU measures no matmul ceiling (bench/measure/ceilings.py): a gloo row has the
    # communication's
    # and the optimizer's floors, and no whole-step floor.
    assert ddp["comm_floor_ms"] > 0 and ddp["step_floor_ms"] > 0 and math.isnan(ddp["floor_ms"])
    assert not math.isnan(ddp["comm_ms"])
    env = results.read_env(run_dir)
    assert env["ceilings"]["all_reduce_busbw_gbps"] > 0
    assert env["ceilings"]["reduce_scatter_busbw_gbps"] > 0


def test_bf16_compressed_ddp_runs_on_gloo(two_ranks):
    # gloo all-reduces bfloat16 on the CPU (torch 2.14): DDP's bf16_compress_hook works there,
    # so its rows are measured, not `unsupported` and not an `error`.
    _, run_dir = two_ranks
    df = results.load(run_dir).set_index(["mode", "parallel"])
    assert list(df.loc[[("fp32", "ddp-bf16"), ("bf16-amp", "ddp-bf16")], "status"]) == ["ok"] * 2


def test_samples_of_every_rank_were_gathered_to_rank_0(two_ranks):
    _, run_dir = two_ranks
    records = {r["case_id"]: r for r in results.read_jsonl(run_dir / results.SAMPLES)}
    rec = records[tiny_case(mode="fp32", optimizer="fused", parallel="ddp").case_id]
    assert len(rec["rank_total_ms"]) == 2 and all(len(t) == 3 for t in rec["rank_total_ms"])
    assert set(rec["nosync_ms"]) == {"fwd", "bwd", "zero"}
    assert len(rec["samples_ms"]["total"]) == 3


def test_a_failing_rank_is_one_row_naming_it(two_ranks):
    _, run_dir = two_ranks
    row = results.load(run_dir).set_index("case_id").loc[ERROR_CASE]
    assert row["status"] == "error"
    assert row["error"].startswith("rank 1: RuntimeError: injected fault on rank 1")
    text = (run_dir / row["traceback"]).read_text()  # the failed rank's, as rank 0 got it
    assert text.startswith("rank 1:\nTraceback") and "injected fault on rank 1" in text


def test_a_hung_collective_is_a_timeout_row_and_the_suite_goes_on(two_ranks):
    _, run_dir = two_ranks
    df = results.load(run_dir).set_index("case_id")
    row = df.loc[HANG_CASE]
    assert row["status"] == "timeout"
    # The rank that never answered, with its place (standalone: one node, this host).
    assert f"rank 1 (node 0, host {socket.gethostname()}) did not reach the end" in row["error"]
    assert f"within {2 * float(TIMEOUT):g} s (RuntimeError: " in row["error"]
    assert row["rank_node_ranks"] == "0,0" and row["nodes"] == 1
    after = tiny_case(mode="bf16-amp", optimizer="fused", parallel="fsdp").case_id
    assert df.loc[after, "status"] == "ok"  # after the relaunch
    assert len(results.read_env(run_dir)["resumed"]) == 1


def test_the_report_has_the_several_gpus_section(two_ranks):
    _, run_dir = two_ranks
    text = (run_dir / results.REPORT).read_text()
    assert "## Several GPUs" in text and "### What bfloat16 reduction saves" in text
    assert "all-reduce bus bandwidth" in text


def test_a_gpt_trains_on_two_ranks_with_ddp_and_fsdp_per_block(tmp_path, monkeypatch):
    # FSDP2 shards each transformer block, then the root (embeddings, final norm, head).
    finalized = tmp_path / "finalized"
    finalized.mkdir()
    monkeypatch.setenv("AMPBENCH_TEST_FINALIZED", str(finalized))
    code = launch.launch(
        2,
        [
            *("run", "--gpus", "2", "--device", "cpu", "--model", "gpt", "--preset", "tiny"),
            *("--modes", "fp32", "--optimizers", "fused", "--parallel", "none,ddp,fsdp"),
            *("--batch-sizes", "2", "--steps", "2", "--warmup", "1", "--repeats", "1"),
            "--no-overhead",
            *("--collective-timeout", "30", "--results-dir", str(tmp_path)),
        ],
        keep=["--collective-timeout", "30"],
        worker=[str(WORKER)],
        log=lambda msg: None,
    )
    assert code == 0
    # The ranks ended without Python's finalization, which torch's C++ threads outlive (gloo's
    # of the groups FSDP2 holds, the autograd engine's) and which has aborted a rank after a
    # run that passed (`distributed.leave`).
    assert not list(finalized.iterdir())
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir() and p != finalized]
    df = results.load(run_dir).set_index("parallel")
    assert set(df["status"]) == {"ok"}, df["error"].to_dict()
    assert set(df["model"]) == {"gpt"}
    ddp, fsdp = df.loc["ddp"], df.loc["fsdp"]
    assert ddp["tokens_per_s"] == pytest.approx(ddp["samples_per_s"] * 32)
    assert ddp["global_batch_size"] == 4
    # Each rank holds half of every sharded parameter (a dimension of odd size splits unevenly).
    assert fsdp["param_gib"] == pytest.approx(df.loc["none", "param_gib"] / 2, rel=0.05)
    # The collectives' bytes come from the parameter count (counted on the meta model).
    params = gpt.num_params(gpt.PRESETS["tiny"])
    assert ddp["comm_gbytes"] == pytest.approx(params * 4 / 1e9)  # 2(n-1)/n = 1 on 2 ranks


def test_parallel_on_one_rank_is_unsupported(tmp_path):
    argv = ["run", "--device", "cpu", "--modes", "fp32", "--optimizers", "fused"]
    argv += ["--parallel", "none,ddp"]
    argv += ["--batch-sizes", "4", "--steps", "2", "--warmup", "0", "--no-overhead"]
    assert main([*argv, "--results-dir", str(tmp_path)]) == 0
    (run_dir,) = list(tmp_path.iterdir())
    df = results.load(run_dir).set_index("parallel")
    assert df.loc["none", "status"] == "ok"
    assert df.loc["ddp", "status"] == "unsupported" and "--gpus" in df.loc["ddp", "error"]


def test_merge_keeps_the_slowest_rank_and_names_failures_first():
    def row(rank, total, status="ok", error="", peak=1.0, residue=0.05):
        return {
            "status": status,
            "error": error,
            "total_ms": total,
            "host": f"h{rank}",
            "peak_alloc_gib": peak,
            "peak_reserved_gib": peak,
            "residue_gib": residue,
        }

    out, samples, extra = merge(
        [
            (row(0, 10.0, peak=2.0, residue=3.0), {"total": [10.0]}),
            (row(1, 12.0), {"total": [12.0]}),
        ]
    )
    assert out["total_ms"] == 12.0 and out["slowest_rank"] == 1
    assert out["residue_gib"] == 3.0  # the largest over the ranks, not the slowest rank's
    assert out["rank_spread_pct"] == pytest.approx(2 / 12 * 100)
    assert out["peak_alloc_gib"] == 2.0 and out["peak_alloc_gib_spread"] == 1.0
    assert out["hosts"] == "h0,h1" and samples == {"total": [12.0]}
    assert out["rank_hosts"] == "h0,h1" and out["rank_node_ranks"] == "0,0"
    assert extra["rank_total_ms"] == [[10.0], [12.0]]
    out, samples, _ = merge(
        [
            (row(0, 1.0, "timeout", "RuntimeError: Timed out waiting 3000ms"), {}),
            (row(1, 1.0, "oom", "OutOfMemoryError: CUDA out of memory"), {}),
        ]
    )
    assert out["status"] == "oom" and samples == {}
    assert out["error"].startswith("rank 1: OutOfMemoryError") and "rank 0: " in out["error"]
    # A non-finite loss keeps the slowest rank's timings, as in a one-process run.
    out, samples, _ = merge(
        [
            (row(0, 10.0, "nonfinite", "loss is nan"), {"total": [10.0]}),
            (row(1, 12.0), {"total": [12.0]}),
        ]
    )
    assert out["status"] == "nonfinite" and out["error"] == "rank 0: loss is nan"
    assert out["total_ms"] == 12.0 and samples == {"total": [12.0]}


def test_the_collective_floor_follows_nccl_tests():
    n = 1_000_000
    ddp = collective_bytes(n, PARALLELS["ddp"], MODES["bf16-amp"])
    assert ddp == {"all_reduce": 4e6, "reduce_scatter": 0.0, "all_gather": 0.0}
    fsdp = collective_bytes(n, PARALLELS["fsdp-bf16"], MODES["bf16-amp"])
    assert fsdp == {"all_reduce": 0.0, "reduce_scatter": 2e6, "all_gather": 4e6}  # 2 × bf16
    assert collective_bytes(n, PARALLELS["fsdp"], MODES["fp32"])["all_gather"] == 8e6  # 2 × float32
    # Pure bf16: DDP all-reduces the bf16 gradients as they are, FSDP2 gathers bf16 parameters.
    assert collective_bytes(n, PARALLELS["ddp"], MODES["bf16-pure"])["all_reduce"] == 2e6
    assert collective_bytes(n, PARALLELS["fsdp"], MODES["bf16-pure"])["all_gather"] == 4e6
    assert (
        collective_bytes(n, PARALLELS["fsdp"], MODES["bf16-pure"])["reduce_scatter"] == 4e6
    )  # float32
    ceilings = Ceilings(busbw_gbps={"all_reduce": 100.0})
    cols = comm_floor_columns(ddp, 2, ceilings)
    # 4 MB all-reduced on 2 ranks: 2(n-1)/n = 1 bus byte per byte, at 100 GB/s: 0.04 ms.
    assert cols["comm_floor_ms"] == pytest.approx(0.04)
    assert cols["comm_gbytes"] == pytest.approx(0.004)


def _run_on_two_gpus(tmp_path: Path, *args: str) -> pd.DataFrame:
    """`run --gpus 2` with NCCL, fused Adam, eager, batch 64, 3 steps: the folder's rows."""
    code = launch.launch(
        2,
        [
            *("run", "--gpus", "2", "--optimizers", "fused", "--variants", "eager"),
            *("--batch-sizes", "64", "--steps", "3", "--warmup", "1", *args),
            *("--results-dir", str(tmp_path)),
        ],
    )
    assert code == 0
    (run_dir,) = list(tmp_path.iterdir())
    return results.load(run_dir)


@pytest.mark.cuda
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpus_with_nccl(tmp_path):
    df = _run_on_two_gpus(
        tmp_path, "--preset", "tiny", "--modes", "bf16-amp", "--collective-timeout", "30"
    )
    assert set(df["status"]) == {"ok"} and len(df) == 5


@pytest.mark.cuda
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_a_ddp_case_leaves_nothing_allocated_for_the_next(tmp_path):
    # The question's model, whose float32 gradients are 1.2 GiB: what a DDP case left behind
    # would show in the next case's residue and blank its peaks.
    df = _run_on_two_gpus(
        tmp_path,
        *("--modes", "bf16-amp", "--parallel", "ddp-bf16,fsdp"),
        *("--collective-timeout", "60", "--no-overhead"),
    ).set_index("parallel")
    assert set(df["status"]) == {"ok"}
    assert df.loc["fsdp", "residue_gib"] < results.RESIDUE_LIMIT_GIB
    assert df.loc["fsdp", "peak_alloc_gib"] > 0


def test_what_cannot_run_distributed_says_why():
    from bench.plan.plan import parallel_unsupported_reason as unsupported_reason

    assert unsupported_reason(PARALLELS["none"], variant="cudagraph", world_size=2) is None
    assert "several ranks" in unsupported_reason(PARALLELS["fsdp"], variant="eager", world_size=1)
    assert "eager only" in unsupported_reason(PARALLELS["ddp"], variant="cudagraph", world_size=2)
    assert unsupported_reason(PARALLELS["ddp-bf16"], variant="eager", world_size=2) is None


def test_a_plan_in_a_run_of_n_ranks_says_its_own_reason_first_then_its_parallelisms():
    """`Plan.unsupported_in` is what a row (`run_case`) and a grid's refusal both ask."""
    from tests.conftest import tiny_plan

    assert "several ranks" in tiny_plan(parallel="fsdp").unsupported_in(1)
    assert tiny_plan(parallel="fsdp").unsupported_in(2) is None
    graphs = tiny_plan(parallel="ddp", variant="cudagraph")  # on the CPU
    assert graphs.unsupported_in(2) == "CUDA graphs need a CUDA device"
    assert tiny_plan(parallel="none").unsupported_in(1) is None


def test_a_folder_older_than_the_ranks_reads_as_one_rank(tmp_path):
    from tests.stored import timing_row

    row = timing_row(mode="fp32")
    for key in ("parallel",):
        row.pop(key)
    results.append_jsonl(tmp_path / results.ROWS, row)
    df = results.load(tmp_path)
    assert df.loc[0, "parallel"] == "none" and df.loc[0, "world_size"] == 1
    assert df.loc[0, "global_batch_size"] == row["batch_size"]
    assert df.loc[0, "samples_per_s_per_gpu"] == pytest.approx(row["samples_per_s"])
    assert math.isnan(df.loc[0, "scaling_efficiency"])
    assert df.loc[0, "nodes"] == 1 and df.loc[0, "node_rank"] == 0


def test_rows_older_than_the_nodes_count_their_hosts(tmp_path):
    from tests.stored import timing_row

    one = {**timing_row(mode="fp32", parallel="ddp"), "world_size": 2, "hosts": "a"}
    two = {**timing_row(mode="bf16-amp", parallel="ddp"), "world_size": 2, "hosts": "a,b"}
    for row in (one, two):
        results.append_jsonl(tmp_path / results.ROWS, row)
    df = results.load(tmp_path).set_index("mode")
    assert list(df["nodes"]) == [1, 2]
    assert df.loc["fp32", "node_rank"] == 0 and math.isnan(df.loc["bf16-amp", "node_rank"])


def test_the_launcher_writes_the_case_in_flight_with_a_ranks_note(tmp_path):
    # As when NCCL's watchdog ended rank 0 inside a collective that rank 1 never joined.
    case = tiny_case(parallel="ddp")
    launch.mark_inflight(tmp_path, {"case_id": case.case_id, "status": "timeout", "error": ""})
    fault = {"case_id": case.case_id, "status": "oom", "error": "OutOfMemoryError: CUDA out"}
    launch.note_fault(tmp_path, 1, fault)
    # Rank 0 went on to the next case and failed there too: that note is the next case's.
    launch.note_fault(tmp_path, 0, {**fault, "case_id": "next", "error": "later"})
    assert launch.complete_inflight(tmp_path, "the run's processes ended")
    (row,) = results.read_jsonl(tmp_path / results.ROWS)
    assert row["status"] == "oom"
    assert row["error"] == "the run's processes ended; rank 1: OutOfMemoryError: CUDA out"
    assert [p.name for p in tmp_path.glob("inflight*")] == ["inflight.json.rank0"]
    launch.clear_inflight(tmp_path, "next")
    assert not list(tmp_path.glob("inflight*"))
    assert not launch.complete_inflight(tmp_path, "again")  # nothing in flight any more


def test_a_resumed_run_keeps_the_folders_device(tmp_path, monkeypatch):
    """The relaunch after a broken group carries only --resume: on a GPU machine `auto` would
    make a gloo run's ranks CUDA ones, with an NCCL group for CPU tensors."""
    import json

    from bench import cli
    from bench.commands import ranks
    from bench.measure import env

    (tmp_path / "env.json").write_text(json.dumps({"device": "cpu"}))
    monkeypatch.setattr(env, "device", lambda requested: "cuda")  # as on a GPU machine
    args = cli.build_parser().parse_args(["run", "--resume", str(tmp_path)])
    assert ranks.world(args).device == "cpu"


def test_a_run_stopped_from_outside_leaves_no_row_for_its_case(tmp_path, monkeypatch):
    """An outer `timeout` or Ctrl-C ends the launcher: the case it was measuring did not fail,
    so `--resume` must measure it again, not record it as a timeout."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()

    def stopped(command, env):
        Path(env[launch.RUN_DIR_VAR]).write_text(str(run_dir))
        launch.mark_inflight(run_dir, {"case_id": "c", "status": "timeout", "error": ""})
        raise SystemExit(128 + 15)  # as the launcher's SIGTERM handler does

    monkeypatch.setattr(launch, "_run", stopped)
    with pytest.raises(SystemExit):
        launch.launch(2, ["run"], log=lambda msg: None)
    assert not (run_dir / launch.INFLIGHT).exists()
    assert not (run_dir / results.ROWS).exists()


def test_the_readme_scaling_table_is_the_runs_scaling_efficiency(two_ranks):
    _, run_dir = two_ranks
    block = f"<!-- ampbench:scaling {run_dir.name} -->\n<!-- /ampbench:scaling -->"
    text, _ = readme.regenerate(block, run_dir.parent)
    ok = results.load(run_dir)
    ok = ok[(ok["status"] == "ok") & (ok["parallel"] != "none")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()]
    assert ["mode", "parallel", "2 GPUs, batch 8"] in cells
    shown = {(r[0], r[1]): r[2] for r in cells if len(r) == 3 and r[1] in PARALLELS}
    assert shown == {
        (r.mode, r.parallel): tables.cell(r.scaling_efficiency * 100) for r in ok.itertuples()
    }
    # The same run twice would put two figures in one cell: refused, not averaged.
    twice = (
        f"<!-- ampbench:scaling {run_dir.name} with={run_dir.name} -->\n<!-- /ampbench:scaling -->"
    )
    with pytest.raises(UsageError, match="one run per GPU count"):
        readme.regenerate(twice, run_dir.parent)


def test_the_scaling_table_puts_gpu_counts_and_batch_sizes_side_by_side_in_order():
    from bench.publish import ranks

    rows = [
        {
            "mode": mode,
            "parallel": par,
            "world_size": n,
            "batch_size": bs,
            "optimizer": "fused",
            "variant": "eager",
            "status": "ok",
            "scaling_efficiency": n / 10 + bs / 1e4 + (0.01 if par == "fsdp" else 0),
        }
        for n in (4, 2)
        for bs in (1024, 256)
        for mode in ("fp32", "bf16-amp")
        for par in ("ddp", "fsdp")
    ]
    lines = ranks.scaling_table(pd.DataFrame(rows)).splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head == [
        "mode",
        "parallel",
        "2 GPUs, batch 256",
        "2 GPUs, batch 1024",
        "4 GPUs, batch 256",
        "4 GPUs, batch 1024",
    ]
    first = [c.strip() for c in lines[2].strip("|").split("|")]
    assert first == ["fp32", "ddp", "22.56", "30.24", "42.56", "50.24"]
    assert [c.strip() for c in lines[3].strip("|").split("|")][:2] == ["fp32", "fsdp"]


def test_a_backend_that_cannot_reduce_bf16_makes_the_case_unsupported(monkeypatch):
    # gloo's bfloat16 support depends on the torch version: where it has none, the all-reduce
    # raises, and the case is a row that says so, not an error.
    from bench.execution import parallel
    from bench.faults import Unsupported, error_summary, fault_status

    def no_bf16(tensor, group=None):
        raise TypeError("Invalid scalar type")

    monkeypatch.setattr(torch.distributed, "get_backend", lambda group=None: "gloo")
    monkeypatch.setattr(torch.distributed, "all_reduce", no_bf16)
    with pytest.raises(Unsupported) as caught:
        parallel.check_reduces(None, torch.bfloat16, "cpu")
    assert fault_status(caught.value) == "unsupported"
    assert error_summary(caught.value).startswith(f"gloo in torch {torch.__version__} cannot")
    assert "bfloat16 (TypeError: Invalid scalar type)" in error_summary(caught.value)
    monkeypatch.setattr(torch.distributed, "get_backend", lambda group=None: "nccl")
    parallel.check_reduces(None, torch.bfloat16, "cuda")  # NCCL is not asked
