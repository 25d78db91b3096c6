"""A run of distributed cases alone: what its headline and scaling table say without a one-GPU
baseline, and a run of several ranks where no case passed, which ends with its report's lines
and exit status 1 rather than torchrun's traceback (gloo ranks on the CPU)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from bench.execution import launch
from bench.publish import ranks, report
from bench.store import results
from tests.conftest import tiny_case

WORKER = Path(__file__).resolve().parent / "dist_worker.py"


def _rows(parallels: tuple[str, ...]) -> pd.DataFrame:
    """Passing rows of a 2-rank run, fp32 at batch 8 per GPU, one per parallelism."""
    return pd.DataFrame(
        [
            {
                "case_id": f"fp32/{p}",
                "mode": "fp32",
                "parallel": p,
                "status": "ok",
                "optimizer": "fused",
                "variant": "eager",
                "batch_size": 8,
                "world_size": 2,
                "global_batch_size": 16,
                "total_ms": ms,
                "samples_per_s": 16 / ms * 1e3,
                "scaling_efficiency": 0.9 if p != "none" and "none" in parallels else math.nan,
            }
            for p, ms in zip(parallels, (2.0, 4.0, 8.0), strict=False)
        ]
    )


def test_distributed_cases_alone_show_their_rows_and_say_the_baseline_is_missing():
    df = _rows(("ddp", "fsdp"))
    text = report.headline(df)
    assert text.startswith(report.NO_BASELINE) and "(no successful cases)" not in text
    assert "Batch size 8 per GPU on 2 ranks, fused Adam, eager:" in text
    lines = [line for line in text.splitlines() if line.startswith("| fp32")]
    assert [line.split("|")[2].strip() for line in lines] == ["ddp", "fsdp"]
    table = ranks.scaling_table(df)
    assert "no scaling efficiency" in table and "add `none` to `--parallel`" in table
    # With the baseline the table is the efficiencies, and the headline the one-GPU rows.
    both = _rows(("none", "ddp", "fsdp"))
    assert "90.00" in ranks.scaling_table(both)
    assert report.NO_BASELINE not in report.headline(both)
    # A run where nothing passed still says so.
    assert report.headline(df.assign(status="error")) == report.NO_HEADLINE


def test_a_distributed_run_where_no_case_passed_ends_with_its_report(tmp_path, capfd, monkeypatch):
    case = tiny_case(mode="fp32", optimizer="fused", parallel="ddp").case_id
    monkeypatch.setenv("AMPBENCH_TEST_FAULTS", f"error|{case}|0;error|{case}|1")  # no one waits
    code = launch.launch(
        2,
        [
            *("run", "--gpus", "2", "--device", "cpu", "--modes", "fp32", "--parallel", "ddp"),
            *("--optimizers", "fused", "--batch-sizes", "8", "--steps", "2", "--warmup", "0"),
            *("--repeats", "1", "--no-overhead", "--results-dir", str(tmp_path)),
        ],
        worker=[str(WORKER)],
        log=lambda msg: None,
    )
    out, err = capfd.readouterr()
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert code == 1
    assert "Traceback" not in err and "ChildFailedError" not in err, err
    assert err.strip().splitlines()[-1] == f"ampbench: wrote {run_dir / results.REPORT}"
    assert out.strip().splitlines()[-1] == str(run_dir)
    assert "**No case passed**" in (run_dir / results.REPORT).read_text()
