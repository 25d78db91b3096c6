"""rows.jsonl -> DataFrame -> report.md, and the folder rules."""

import json
import math
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest

from bench.publish import report
from bench.store import folders, results
from bench.workloads import structure
from tests.stored import timing_row, write_run


def _row(mode, total_ms, status="ok", optimizer="fused", batch_size=64):
    return {
        "case_id": f"{mode}/{optimizer}/b{batch_size}",
        "mode": mode,
        "optimizer": optimizer,
        "batch_size": batch_size,
        "input_size": 32,
        "hidden_size": 64,
        "num_classes": 10,
        "device": "cpu",
        "seed": 0,
        "status": status,
        "error": "" if status == "ok" else "boom",
        "fwd_ms": total_ms / 4,
        "bwd_ms": total_ms / 2,
        "step_ms": total_ms / 4,
        "total_ms": total_ms,
        "total_ms_iqr": 0.1,
        "samples_per_s": batch_size / total_ms * 1e3,
        "tflops": 1.0,
        "floor_ms": total_ms / 2,
        "pct_of_floor": 50.0,
        "fwd_floor_ms": 1.0,
        "bwd_floor_ms": 1.0,
        "step_floor_ms": 1.0,
        "fwd_pct_of_floor": 40.0,
        "bwd_pct_of_floor": 50.0,
        "step_pct_of_floor": 60.0,
        "peak_alloc_gib": 1.5,
        "peak_reserved_gib": 2.0,
        "output_dtype": "float16",
        "loss_dtype": "float32",
        "param_grad_dtype": "float32",
        "noisy": False,
    }


@pytest.fixture
def run_dir(tmp_path):
    for row in (
        _row("fp32", 40.0),
        _row("tf32", 20.0),
        _row("bf16-amp", 10.0),
        _row("fp16-amp", 8.0, status="oom"),
    ):
        results.append_jsonl(tmp_path / results.ROWS, row)
    env = {"run_name": "r1", "device": "cpu", "command": "python -m bench run", "gpu": "cpu"}
    results.write_env(tmp_path, env)
    return tmp_path


def test_load_derives_speedups_in_one_direction(run_dir):
    df = results.load(run_dir).set_index("mode")
    assert df.loc["bf16-amp", "speedup_vs_fp32"] == pytest.approx(4.0)  # 40 ms / 10 ms
    assert df.loc["bf16-amp", "speedup_vs_tf32"] == pytest.approx(2.0)
    assert df.loc["fp32", "speedup_vs_fp32"] == pytest.approx(1.0)
    assert df.loc["tf32", "speedup_vs_fp32"] == pytest.approx(2.0)
    assert math.isnan(df.loc["fp16-amp", "speedup_vs_fp32"])  # not ok: no speedup


def test_leading_columns_come_first(run_dir):
    cols = list(results.load(run_dir).columns)
    # The case's axes in the order of Case's fields, then the status and the timings.
    assert cols[:5] == ["mode", "optimizer", "variant", "parallel", "batch_size"]
    status = cols.index("status")
    assert status == len(results.axes())
    assert cols[status : status + 7] == [
        "status", "fwd_ms", "bwd_ms", "step_ms", "total_ms", "total_ms_iqr", "samples_per_s"
    ]  # fmt: skip
    assert cols.index("case_id") > cols.index("param_grad_dtype")  # not a leading column


def test_speedups_match_on_every_other_axis(tmp_path):
    for row in (
        _row("fp32", 40.0, batch_size=64),
        _row("fp32", 80.0, batch_size=128),
        _row("bf16-amp", 10.0, batch_size=128),
    ):
        results.append_jsonl(tmp_path / results.ROWS, row)
    df = results.load(tmp_path).set_index(["mode", "batch_size"])
    assert df.loc[("bf16-amp", 128), "speedup_vs_fp32"] == pytest.approx(8.0)
    assert math.isnan(df.loc[("bf16-amp", 128), "speedup_vs_tf32"])  # no tf32 row at all


def test_peaks_of_a_case_that_began_with_an_earlier_cases_memory_are_not_read(tmp_path):
    clean, dirty = _row("fp32", 40.0), _row("bf16-amp", 10.0)
    clean["residue_gib"] = 0.06  # library workspaces: the peaks stand
    dirty.update(residue_gib=8.5, peak_alloc_gib=-1.5, peak_fwd_gib=-2.0)
    # What a DDP case left on the H200s: the model's float32 gradient, 1.13 GiB, and the 0.06.
    after_ddp = _row("tf32", 20.0)
    after_ddp.update(residue_gib=1.2, error="recompiled during the timed window")
    failed = _row("fp16-amp", 8.0, status="oom")
    failed["residue_gib"] = 3.0
    for row in (clean, dirty, after_ddp, failed):
        results.append_jsonl(tmp_path / results.ROWS, row)
    results.write_env(tmp_path, {"run_name": "r", "device": "cuda", "command": "c", "gpu": "g"})
    df = results.load(tmp_path).set_index("mode")
    assert df.loc["fp32", "peak_alloc_gib"] == 1.5 and df.loc["fp32", "error"] == ""
    assert math.isnan(df.loc["bf16-amp", "peak_alloc_gib"])
    assert math.isnan(df.loc["bf16-amp", "peak_fwd_gib"])
    assert math.isnan(df.loc["bf16-amp", "peak_reserved_gib"])
    assert df.loc["bf16-amp", "status"] == "ok" and "8.50 GiB" in df.loc["bf16-amp", "error"]
    assert math.isnan(df.loc["tf32", "peak_alloc_gib"])
    assert df.loc["tf32", "error"] == (
        "recompiled during the timed window; peak memory not measured: 1.20 GiB of an earlier "
        "case was still allocated at the start"
    )
    assert (
        math.isnan(df.loc["fp16-amp", "peak_alloc_gib"]) and df.loc["fp16-amp", "error"] == "boom"
    )
    report.write(tmp_path)
    text = (tmp_path / results.REPORT).read_text()
    assert "## Notes on cases that passed" in text and "peak memory not measured" in text


def test_report_round_trip(run_dir):
    df = report.write(run_dir)
    text = (run_dir / results.REPORT).read_text()
    assert "CPU smoke run" in text
    assert "### Batch size 64" in text
    assert "| bf16-amp" in text and "oom" in text and "boom" in text
    assert "python -m bench run" in text
    # bf16-amp at batch 64: 10 ms a step, a quarter forward, half backward, a quarter optimizer;
    # 64 samples / 10 ms = 6400/s; fp32's 40 ms over its 10 is 4x, tf32's 20 ms 2x.
    per_step = text.split("## Time per step")[1].split("\n## ")[0]
    line = next(ln for ln in per_step.splitlines() if ln.startswith("| bf16-amp"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:8] == ["bf16-amp", "ok", "2.500", "5.000", "2.500", "10.00", "0.1000", "6400"]
    assert cells[11:13] == ["4.000", "2.000"]
    csv = (run_dir / results.CSV).read_text().splitlines()
    assert csv[0].startswith("mode,optimizer,variant,parallel,batch_size,")
    assert len(csv) == 1 + len(df) == 5
    table = pd.read_csv(run_dir / results.CSV).set_index("mode")
    assert table["speedup_vs_fp32"].to_dict() == pytest.approx(
        {"fp32": 1.0, "tf32": 2.0, "bf16-amp": 4.0, "fp16-amp": math.nan}, nan_ok=True
    )
    assert table.loc["bf16-amp", "samples_per_s"] == 6400.0


def test_report_opens_with_its_findings_and_judges_no_target(tmp_path):
    for row in (
        _row("fp32", 40.0, batch_size=4096),
        _row("bf16-amp", 10.0, batch_size=4096),
        _row("fp16-amp-noscale", 12.5, batch_size=4096),
    ):
        row["pct_of_floor"] = {"fp32": 90.0, "bf16-amp": 85.0}.get(row["mode"], 75.0)
        row["peak_alloc_gib"] = {"fp32": 8.0, "bf16-amp": 6.0}.get(row["mode"], 6.5)
        results.append_jsonl(tmp_path / results.ROWS, row)
    env = {
        "overhead": [
            {
                "case_id": "bf16-amp/fused/b4096",
                "harness_ms": 10.1,
                "bare_ms": 10.0,
                "overhead_pct": 1.0,
                "harness_mean_ms": 10.2,
                "mean_overhead_pct": 2.0,
                "bare_peak_alloc_gib": 5.0,
                "steps_per_window": 30,
            },
            {"case_id": "bf16-amp/fused/b256", "error": "OutOfMemoryError: no room"},
        ]
    }
    df = results.load(tmp_path)
    text = report.render(df, env)
    for word in ("target", "MISSED", "met**"):
        assert word not in text
    found = text.split("## What this run found")[1].split("##")[0]
    # 40 ms / 10 ms: bf16-amp is the fastest, 4x fp32; peaks from 6 (bf16-amp) to 8 GiB (fp32).
    assert "the fastest is bf16-amp (eager), 10.00 ms per step, 4.000× fp32" in found
    assert "peak memory from 6.000 GiB (bf16-amp, eager) to 8.000 GiB (fp32, eager)" in found
    assert text.index("## What this run found") < text.index("## How this run was made")
    plain = text.split("## The harness against a plain loop")[1].split("\n## ")[0]
    # The row's 6 GiB against the plain loop's 5 GiB: 20% more.
    row = next(line for line in plain.splitlines() if "b4096" in line)
    cells = [c.strip() for c in row.split("|")]
    assert cells[7:10] == ["6.000", "5.000", "20.00"]
    assert "OutOfMemoryError: no room" in plain


def test_truncated_last_line_is_tolerated(run_dir):
    with (run_dir / results.ROWS).open("a") as f:
        f.write('{"case_id": "half')
    assert len(results.load(run_dir)) == 4


def test_damage_in_the_middle_is_not_hidden(tmp_path):
    (tmp_path / results.ROWS).write_text('{"a": 1}\nnot json\n{"b": 2}\n')
    with pytest.raises(results.CorruptFolder, match="line 2 is not JSON"):
        results.read_jsonl(tmp_path / results.ROWS)


def test_run_folders_are_never_reused(tmp_path):
    name = folders.run_dir_name(
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc), "NVIDIA H200", "0123456789abcdef"
    )
    assert name == "20260102T030405Z_NVIDIA-H200_0123456"
    first = folders.create(tmp_path, name)
    (first / "rows.jsonl").write_text("keep me")
    second = folders.create(tmp_path, name)
    assert second != first and second.name == name + "-2"
    assert (first / "rows.jsonl").read_text() == "keep me"


def test_float8_is_set_against_the_headline_mode_at_each_ones_fastest_variant():
    import pandas as pd

    from bench.publish import findings

    rows = [
        # (mode, variant, total_ms): bf16-amp's best is 8 ms (compile), fp8-tensorwise's 6 ms
        # (compile) and fp8-rowwise's 10 ms (eager).
        ("bf16-amp", "eager", 10.0),
        ("bf16-amp", "compile", 8.0),
        ("fp8-tensorwise", "eager", 12.0),
        ("fp8-tensorwise", "compile", 6.0),
        ("fp8-rowwise", "eager", 10.0),
    ]
    df = pd.DataFrame(
        [
            {
                "mode": m,
                "variant": v,
                "total_ms": ms,
                "status": "ok",
                "batch_size": 64,
                "optimizer": "fused",
                "parallel": "none",
                "peak_alloc_gib": float("nan"),
            }
            for m, v, ms in rows
        ]
    )
    line = next(x for x in findings.findings(df, "fused") if "float8" in x)
    assert line == (
        "- Batch 64, float8 against bf16-amp (8.000 ms), each at its fastest variant: "
        "fp8-tensorwise 1.333× (compile, 6.000 ms); fp8-rowwise 0.8000× (eager, 10.00 ms). "
        "Below 1×, fp8-rowwise does not pay here."
    )
    # Where every mode is faster, the line does not say that float8 does not pay.
    faster = df.assign(total_ms=df["total_ms"].where(df["mode"] != "fp8-rowwise", 7.0))
    line = next(x for x in findings.findings(faster, "fused") if "float8" in x)
    assert line.endswith("fp8-rowwise 1.143× (eager, 7.000 ms).") and "pay" not in line


def test_a_long_float8_list_is_counted_in_the_report_and_kept_whole_in_the_rows(tmp_path):
    from bench.publish import findings

    blocks = [f"enc.{i}.q" for i in range(6)]
    listed = "; ".join(
        [
            f"{b} kept: too small for tensorwise (in 768 ≤ 4096 and out {i} ≤ 1024)"
            for i, b in enumerate(blocks)
        ]
        + ["enc.ff converted", "dec.ff converted"]
        + [f"lm_head kept: {structure.HEAD_KEPT}; its weight is tied to shared.weight"]
    )
    cell = findings.float8_cell(listed)
    assert cell == (
        "6 kept: too small for tensorwise; 2 converted; "
        "1 kept: the output head stays in higher precision"
    )
    short = "fc1 converted; fc2 kept: the output head"
    assert findings.float8_cell(short) == short and findings.float8_cell(None) is None
    rows = [timing_row(mode="fp8-tensorwise", optimizer="fused") | {"fp8_linears": listed}]
    run = write_run(tmp_path / "run", rows)
    report.write(run)
    text = (run / "report.md").read_text()
    assert cell in text and listed not in text
    assert results.load(run)["fp8_linears"].iloc[0] == listed


def test_a_report_names_every_mode_tied_within_noise_and_no_float8_that_converted_nothing():
    from bench.publish import findings, variants

    rows = [
        # (mode, variant, total_ms, p10, p90): bf16-pure's p10-p90 reaches into bf16-amp's.
        ("fp32", "eager", 80.0, 79.0, 81.0),
        ("bf16-amp", "eager", 22.0, 18.0, 30.0),
        ("bf16-pure", "compile", 20.0, 18.5, 23.0),
        ("fp8-rowwise", "compile", 15.0, 14.9, 15.1),  # an older folder's: converted nothing
    ]
    df = pd.DataFrame(
        [
            {"mode": m, "variant": v, "total_ms": ms, "total_ms_p10": lo, "total_ms_p90": hi}
            for m, v, ms, lo, hi in rows
        ]
    ).assign(status="ok", batch_size=64, optimizer="fused", parallel="none", noisy=False)
    df["peak_alloc_gib"] = float("nan")
    df["fp8_linears"] = ["", "", "", "fc1 kept: too small for rowwise (out 64 ≤ 2048)"]
    found = findings.findings(df, "fused")
    # The old report: "the fastest is fp8-rowwise (compile), 15.00 ms per step".
    assert found[0] == (
        "- Batch 64, fused Adam: tied within noise (p10–p90 overlap): bf16-pure (compile, "
        "20.00 ms) and bf16-amp (eager, 22.00 ms)."
    )
    assert "- fp8-rowwise converts no Linear of this model: unsupported." in found
    table = variants.fastest_table(df)
    assert "| tied: bf16-pure (compile), bf16-amp (eager) |" in table
    assert "fp8-rowwise" not in table and "fp32 (eager), 80 ms" in table  # the runner-up
    headline = report.headline(df.assign(variant="eager"), batch_size=64)
    assert "| fp8-rowwise" not in headline
    assert headline.endswith(
        "Not in the table: fp8-rowwise (unsupported) (see the cases that did not pass)."
    )


def _strict(constant):
    raise ValueError(f"{constant} is not JSON")


def test_a_number_that_is_not_finite_is_written_null_and_read_as_missing(tmp_path):
    path = tmp_path / results.SAMPLES
    row = {"case_id": "a", "samples_ms": {"total": [1.5, math.nan, 2.0]},
           "repeats_ms": {"total": [[1.5, math.nan], [2.0, math.inf]]},
           "peak_fwd_gib": np.float64("nan"), "scale": np.float32(2.0), "steps": np.int64(3),
           "note": None}  # fmt: skip
    results.append_jsonl(path, row)
    line = path.read_text()
    assert "NaN" not in line and "Infinity" not in line
    parsed = json.loads(line, parse_constant=_strict)  # JSON.parse and jq read it
    assert parsed["samples_ms"]["total"] == [1.5, None, 2.0] and parsed["peak_fwd_gib"] is None
    assert parsed["scale"] == 2.0 and parsed["steps"] == 3
    # Read back: a null in a series is NaN, as a skipped step was; one outside stays None.
    (back,) = results.read_rows(path)
    assert back["samples_ms"]["total"][0] == 1.5 and math.isnan(back["samples_ms"]["total"][1])
    assert math.isnan(back["repeats_ms"]["total"][1][1]) and back["note"] is None
    assert results.load_samples(tmp_path)["ms"].isna().sum() == 1


def test_a_folder_written_with_nan_is_still_read(tmp_path):
    (tmp_path / results.SAMPLES).write_text(
        '{"case_id": "a", "samples_ms": {"total": [1.5, NaN]}, "peak_fwd_gib": NaN}\n'
    )
    (back,) = results.read_rows(tmp_path / results.SAMPLES)
    assert math.isnan(back["samples_ms"]["total"][1]) and math.isnan(back["peak_fwd_gib"])


def test_a_column_null_in_every_row_is_read_as_numbers():
    df = results.frame([{"case_id": "a", "peak_fwd_gib": None, "error": ""},
                        {"case_id": "b", "peak_fwd_gib": None, "error": ""}])  # fmt: skip
    assert df["peak_fwd_gib"].dtype == float and df["peak_fwd_gib"].isna().all()
    assert df["error"].tolist() == ["", ""]
