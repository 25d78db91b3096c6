"""`bench compare`: verdicts on samples with known shifts, case matching, warnings, exit codes."""

import numpy as np
import pytest

from bench import compare, results
from bench.cli import main

RNG = np.random.default_rng(42)


def _samples(center, spread, n=30):
    return center + spread * RNG.standard_normal(n)


@pytest.mark.parametrize(
    ("shift", "spread", "n", "expected"),
    [
        (0.90, 0.3, 30, "faster"),  # 10% faster, tight samples
        (1.10, 0.3, 30, "slower"),
        (1.00, 0.3, 30, "same"),  # no shift: interval well inside ±2%
        (1.03, 15.0, 10, "unclear"),  # 3% shift buried in 15% noise
        (1.005, 0.05, 30, "same"),  # a real but immaterial 0.5% shift
    ],
)
def test_verdicts_on_known_shifts(shift, spread, n, expected):
    a = _samples(100.0, spread, n)
    b = _samples(100.0 * shift, spread, n)
    out = compare.verdict(a, b)
    assert out["verdict"] == expected, out
    assert out["ratio_lo"] <= out["ratio"] <= out["ratio_hi"]


def test_ratio_is_b_over_a():
    out = compare.verdict(np.full(20, 10.0) + RNG.random(20) * 1e-3, np.full(20, 5.0))
    assert out["ratio"] == pytest.approx(0.5, rel=1e-3)
    assert out["verdict"] == "faster"


def _write_run(path, cases, env=None):
    """A run folder with rows and raw total samples: cases = {(mode, optimizer): samples|None}."""
    path.mkdir()
    for (mode, opt), samples in cases.items():
        case_id = f"{mode}/{opt}"
        row = {
            "case_id": case_id,
            "mode": mode,
            "optimizer": opt,
            "batch_size": 64,
            "input_size": 32,
            "hidden_size": 64,
            "num_classes": 10,
            "device": "cpu",
            "seed": 0,
            "status": "ok" if samples is not None else "oom",
            "total_ms": float(np.median(samples)) if samples is not None else None,
        }
        results.append_jsonl(path / results.ROWS, row)
        if samples is not None:
            results.append_jsonl(
                path / results.SAMPLES, {"case_id": case_id, "samples_ms": {"total": list(samples)}}
            )
    env = {"gpu": "NVIDIA H200", "torch": "2.11.0", "started": path.name, **(env or {})}
    results.write_env(path, env)
    return path


def test_cases_match_on_axes_and_missing_ones_are_reported(tmp_path):
    a = _write_run(
        tmp_path / "1a",
        {
            ("fp32", "fused"): _samples(100, 0.3),
            ("bf16-amp", "fused"): _samples(10, 0.03),
            ("tf32", "fused"): _samples(20, 0.1),
        },
    )
    b = _write_run(
        tmp_path / "2b",
        {
            ("fp32", "fused"): _samples(100, 0.3),
            ("bf16-amp", "fused"): _samples(12, 0.03),
            ("tf32", "fused"): None,
        },
    )
    table = compare.compare(a, b).set_index("mode")
    assert table.loc["fp32", "verdict"] == "same"
    assert table.loc["bf16-amp", "verdict"] == "slower"
    assert table.loc["bf16-amp", "ratio"] == pytest.approx(1.2, rel=0.01)
    assert table.loc["tf32", "verdict"] == "missing" and table.loc["tf32", "status_b"] == "oom"


def test_cases_in_one_run_only_are_counted_not_tabled(tmp_path):
    a = _write_run(
        tmp_path / "1a",
        {("fp32", "fused"): _samples(100, 0.3), ("tf32", "fused"): _samples(20, 0.1)},
    )
    b = _write_run(tmp_path / "2b", {("fp32", "fused"): _samples(100, 0.3)})
    table = compare.compare(a, b)
    assert list(table["mode"]) == ["fp32"] and table.attrs == {"only_a": 1, "only_b": 0}
    text = compare.render(
        table, run_a=a, run_b=b, pair=None, min_effect=0.02, confidence=0.95, warnings=[]
    )
    assert "1 case(s) ran only in A and are left out." in text


def test_pair_compares_across_one_axis_within_one_run(tmp_path):
    run = _write_run(
        tmp_path / "r",
        {("bf16-amp", "foreach"): _samples(14, 0.03), ("bf16-amp", "fused"): _samples(12, 0.03)},
    )
    pair = compare.Pair.parse("optimizer=foreach:fused")
    table = compare.compare(run, run, pair=pair)
    assert len(table) == 1 and table.loc[0, "verdict"] == "faster"
    assert compare.output_path(run, run, pair).name == "compare_self_optimizer_foreach_vs_fused.md"


@pytest.mark.parametrize("bad", ["optimizer", "optimizer=fused", "colour=a:b", "=a:b"])
def test_bad_pair_names_the_value(bad):
    with pytest.raises(ValueError, match=r"optimizer=fused|colour|AXIS"):
        compare.Pair.parse(bad)


def test_environment_differences_name_the_fields():
    lines = compare.env_differences(
        {"gpu": "H200", "torch": "2.11", "driver": "580"},
        {"gpu": "H100", "torch": "2.11", "driver": "580"},
    )
    assert lines == ["gpu: 'H200' in A, 'H100' in B"]


def test_cli_exit_codes_and_output_file(tmp_path, capsys):
    a = _write_run(tmp_path / "1a", {("bf16-amp", "fused"): _samples(10, 0.03)})
    b = _write_run(
        tmp_path / "2b", {("bf16-amp", "fused"): _samples(12, 0.03)}, env={"torch": "2.12.0"}
    )
    assert main(["compare", str(a), str(b)]) == 0
    assert main(["compare", str(a), str(b), "--fail-on-slower"]) == 1
    assert main(["compare", str(b), str(a), "--fail-on-slower", "--no-write"]) == 0  # faster
    captured = capsys.readouterr()
    assert "environments differ: torch: '2.11.0' in A, '2.12.0' in B" in captured.err
    # The verdict counts of each table: A->B slower (twice), B->A faster.
    assert captured.out.count("\n1 slower.\n") == 2 and captured.out.count("\n1 faster.\n") == 1
    written = b / "compare_1a.md"
    assert written.is_file() and "Environments differ" in written.read_text()
    assert main(["compare", str(a), str(tmp_path / "nope")]) == 2
    assert main(["compare", str(a), str(b), "--pair", "optimizer"]) == 2
    assert main(["compare", str(a), str(b), "--min-effect", "5"]) == 2
