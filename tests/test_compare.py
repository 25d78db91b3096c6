"""`bench compare`: verdicts on samples with known shifts, case matching, warnings, exit codes."""

import math

import numpy as np
import pytest

from bench.cli import main
from bench.publish import compare
from bench.store import results


def _samples(rng, center, spread, n=30):
    return center + spread * rng.standard_normal(n)


def _windows(rng, center, *, repeats=3, steps=30, drift=0.01, noise=0.02):
    """One simulated run of a case: `repeats` windows whose medians drift by a random factor
    (`drift`, relative) each, of `steps` steps with relative noise `noise`."""
    return [
        center * (1 + drift * rng.standard_normal()) * (1 + noise * rng.standard_normal(steps))
        for _ in range(repeats)
    ]


def _exact_windows(log_medians, steps=5):
    """Windows whose medians are exactly exp(log_medians), for hand-computed expectations."""
    return [np.full(steps, math.exp(m)) for m in log_medians]


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
    rng = np.random.default_rng(42)
    a = _samples(rng, 100.0, spread, n)
    b = _samples(rng, 100.0 * shift, spread, n)
    out = compare.verdict(a, b)
    assert out["verdict"] == expected, out
    assert out["ratio_lo"] <= out["ratio"] <= out["ratio_hi"]


def test_ratio_is_b_over_a():
    rng = np.random.default_rng(1)
    out = compare.verdict(np.full(20, 10.0) + rng.random(20) * 1e-3, np.full(20, 5.0))
    assert out["ratio"] == pytest.approx(0.5, rel=1e-3)
    assert out["verdict"] == "faster"


def test_repeat_verdict_by_hand_two_windows_each():
    # log medians: A 0, 0.02; B 0.05, 0.07. Difference of means 0.05; each run's deviations
    # are ±0.01, so the pooled variance is 4 × 0.01² / (2 + 2 - 2) = 0.0002, and the standard
    # error sqrt(0.0002) × sqrt(1/2 + 1/2). t(0.975, 2 dof) = 4.3027.
    out = compare.repeat_verdict(_exact_windows([0, 0.02]), _exact_windows([0.05, 0.07]))
    se = math.sqrt(0.0002)
    assert out["ratio"] == pytest.approx(math.exp(0.05))
    assert out["ratio_lo"] == pytest.approx(math.exp(0.05 - 4.302653 * se))
    assert out["ratio_hi"] == pytest.approx(math.exp(0.05 + 4.302653 * se))
    assert out["noise"] == pytest.approx(2 * se)
    assert out["ratio_lo"] < 1  # 0.989: two windows a run cannot tell 5% from this drift
    assert out["verdict"] == "unclear"


def test_repeat_verdict_by_hand_three_windows_each():
    # Deviations -0.01, 0, 0.01 in each run: pooled variance 4 × 0.01² / 4, spread 0.01;
    # standard error 0.01 × sqrt(2/3); t(0.975, 4 dof) = 2.7764.
    out = compare.repeat_verdict(
        _exact_windows([0, 0.01, 0.02]), _exact_windows([0.05, 0.06, 0.07])
    )
    se = 0.01 * math.sqrt(2 / 3)
    assert out["ratio"] == pytest.approx(math.exp(0.05))
    assert out["ratio_lo"] == pytest.approx(math.exp(0.05 - 2.776445 * se))  # 1.028
    assert out["noise"] == pytest.approx(0.02)
    assert out["verdict"] == "slower"  # interval above 1, ratio 1.051 beyond 1 + max(2%, 2%)
    assert out["p_value"] < 0.05


def test_repeat_verdict_noise_floor_outranks_a_narrow_interval():
    # Five windows a run with a spread of exactly 0.02 (deviations ±a, ±0.01, 0 with
    # 2a² + 2 × 0.01² = 4 × 0.02²); B 3.5% above A. The interval, 0.035 ± 2.306 × 0.02 ×
    # sqrt(2/5), excludes 1 and the ratio is beyond min_effect, but not beyond the noise, 4%.
    a = math.sqrt(0.0008 - 0.0001)
    devs = np.array([-a, -0.01, 0, 0.01, a])
    windows_a, windows_b = _exact_windows(devs), _exact_windows(devs + 0.035)
    out = compare.repeat_verdict(windows_a, windows_b)
    assert out["noise"] == pytest.approx(0.04)
    assert out["ratio_lo"] == pytest.approx(math.exp(0.035 - 2.306004 * 0.02 * math.sqrt(0.4)))
    assert out["ratio_lo"] > 1 and out["ratio"] > 1.02
    assert out["verdict"] == "unclear"
    assert compare.repeat_verdict(windows_a, windows_b, noise_k=0)["verdict"] == "slower"


def test_repeat_verdict_needs_two_windows_a_run():
    with pytest.raises(ValueError, match="2 windows"):
        compare.repeat_verdict(_exact_windows([0]), _exact_windows([0, 0.01]))


def test_same_code_run_twice_is_same_or_unclear():
    """A/A: two runs of one true distribution, each window drifting by ~1% and each step by ~2%:
    at least 95% of 200 simulated cases come out `same` or `unclear`."""
    calls = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        out = compare.repeat_verdict(_windows(rng, 10.0), _windows(rng, 10.0))
        calls.append(out["verdict"])
    assert sum(v in ("same", "unclear") for v in calls) >= 190, calls


def test_five_percent_slower_is_slower():
    calls = []
    for seed in range(200):
        rng = np.random.default_rng(1000 + seed)
        out = compare.repeat_verdict(_windows(rng, 10.0), _windows(rng, 10.5))
        calls.append(out["verdict"])
    assert sum(v == "slower" for v in calls) >= 190, calls


@pytest.mark.parametrize("shift", [1.01, 0.99])
def test_a_one_percent_shift_is_never_called_at_min_effect_two_percent(shift):
    """Tiny noise, a real 1% shift: it is real, and it is below the smallest effect that
    matters, so neither test ever calls it; the intervals lie within ±2%, so it is `same`."""
    for seed in range(50):
        rng = np.random.default_rng(2000 + seed)
        a = _windows(rng, 10.0, drift=0.0005, noise=0.001)
        b = _windows(rng, 10.0 * shift, drift=0.0005, noise=0.001)
        by_repeats = compare.repeat_verdict(a, b, min_effect=0.02)
        by_steps = compare.verdict(np.concatenate(a), np.concatenate(b), min_effect=0.02)
        assert by_repeats["verdict"] == "same", by_repeats
        assert by_steps["verdict"] == "same", by_steps


def _write_run(path, cases, env=None):
    """A run folder with rows and raw total samples: cases = {(mode, optimizer): samples}, where
    samples is an array (a run without repeats), a list of windows (`repeats_ms`), or None."""
    path.mkdir()
    for (mode, opt), samples in cases.items():
        case_id = f"{mode}/{opt}"
        windows = samples if isinstance(samples, list) else None
        flat = np.concatenate(windows) if windows else samples
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
            "total_ms": float(np.median(flat)) if samples is not None else None,
        }
        results.append_jsonl(path / results.ROWS, row)
        if samples is not None:
            record = {"case_id": case_id, "samples_ms": {"total": list(flat)}}
            if windows:
                record["repeats_ms"] = {"total": [list(w) for w in windows]}
            results.append_jsonl(path / results.SAMPLES, record)
    env = {"gpu": "NVIDIA H200", "torch": "2.11.0", "started": path.name, **(env or {})}
    results.write_env(path, env)
    return path


def _render(table, a, b, pair=None):
    return compare.render(
        table, run_a=a, run_b=b, pair=pair, min_effect=0.02, confidence=0.95, warnings=[]
    )


def test_cases_match_on_axes_and_missing_ones_are_reported(tmp_path):
    rng = np.random.default_rng(3)
    a = _write_run(
        tmp_path / "1a",
        {
            ("fp32", "fused"): _samples(rng, 100, 0.3),
            ("bf16-amp", "fused"): _samples(rng, 10, 0.03),
            ("tf32", "fused"): _samples(rng, 20, 0.1),
        },
    )
    b = _write_run(
        tmp_path / "2b",
        {
            ("fp32", "fused"): _samples(rng, 100, 0.3),
            ("bf16-amp", "fused"): _samples(rng, 12, 0.03),
            ("tf32", "fused"): None,
        },
    )
    table = compare.compare(a, b).set_index("mode")
    assert table.loc["fp32", "verdict"] == "same"
    assert table.loc["bf16-amp", "verdict"] == "slower"
    assert table.loc["bf16-amp", "ratio"] == pytest.approx(1.2, rel=0.01)
    assert table.loc["tf32", "verdict"] == "missing" and table.loc["tf32", "status_b"] == "oom"
    assert set(table["method"].dropna()) == {"steps"}


def test_runs_with_repeats_are_judged_by_their_windows(tmp_path):
    # Window medians: fp32 A e^0, e^0.01, e^0.02 and B 5% above (hand-computed in
    # test_repeat_verdict_by_hand_three_windows_each: slower); bf16-amp identical in both.
    a = _write_run(
        tmp_path / "1a",
        {
            ("fp32", "fused"): _exact_windows([0, 0.01, 0.02]),
            ("bf16-amp", "fused"): _exact_windows([0, 0.01, 0.02]),
        },
    )
    b = _write_run(
        tmp_path / "2b",
        {
            ("fp32", "fused"): _exact_windows([0.05, 0.06, 0.07]),
            ("bf16-amp", "fused"): _exact_windows([0, 0.01, 0.02]),
        },
    )
    table = compare.compare(a, b).set_index("mode")
    assert list(table["method"]) == ["repeats", "repeats"]
    assert table.loc["fp32", "ratio"] == pytest.approx(math.exp(0.05))
    assert table.loc["fp32", "noise"] == pytest.approx(0.02)
    assert table.loc["fp32", "verdict"] == "slower"
    assert table.loc["bf16-amp", "ratio"] == pytest.approx(1.0)
    # Interval ±2.7764 × 0.01 × sqrt(2/3) = ±2.3%, wider than max(2%, noise 2%): not `same`.
    assert table.loc["bf16-amp", "verdict"] == "unclear"
    assert (table["repeats_a"] == 3).all() and (table["repeats_b"] == 3).all()
    text = _render(compare.compare(a, b), a, b)
    assert "Timed windows per case: 3 in A, 3 in B." in text
    assert "ignore run-to-run noise" not in text
    assert "±2.0%" in text  # the noise column


def test_a_run_without_repeats_falls_back_to_steps_and_says_so(tmp_path):
    rng = np.random.default_rng(4)
    a = _write_run(
        tmp_path / "1a",
        {
            ("fp32", "fused"): _windows(rng, 100.0),
            ("tf32", "fused"): _windows(rng, 20.0),
        },
    )
    b = _write_run(
        tmp_path / "2b",
        {
            ("fp32", "fused"): _windows(rng, 100.0),
            ("tf32", "fused"): _samples(rng, 20.0, 0.4, n=90),  # an older folder's case
        },
    )
    table = compare.compare(a, b).set_index("mode")
    assert table.loc["fp32", "method"] == "repeats" and table.loc["tf32", "method"] == "steps"
    assert table.loc["tf32", "repeats_b"] == 1 and math.isnan(table.loc["tf32", "noise"])
    text = _render(compare.compare(a, b), a, b)
    assert "**1 case(s) without repeats in A or B**: the verdicts ignore run-to-run noise" in text
    assert "windows (A:B)" in text and "| steps " in text  # mixed: both columns shown


def test_cases_in_one_run_only_are_counted_not_tabled(tmp_path):
    rng = np.random.default_rng(5)
    a = _write_run(
        tmp_path / "1a",
        {("fp32", "fused"): _samples(rng, 100, 0.3), ("tf32", "fused"): _samples(rng, 20, 0.1)},
    )
    b = _write_run(tmp_path / "2b", {("fp32", "fused"): _samples(rng, 100, 0.3)})
    table = compare.compare(a, b)
    assert list(table["mode"]) == ["fp32"] and table.attrs == {"only_a": 1, "only_b": 0}
    text = _render(table, a, b)
    assert "1 case(s) ran only in A and are left out." in text
    assert "Every case without repeats in A or B" in text


def test_pair_compares_across_one_axis_within_one_run(tmp_path):
    rng = np.random.default_rng(6)
    run = _write_run(
        tmp_path / "r",
        {
            ("bf16-amp", "foreach"): _samples(rng, 14, 0.03),
            ("bf16-amp", "fused"): _samples(rng, 12, 0.03),
        },
    )
    pair = compare.Pair.parse("optimizer=foreach:fused")
    table = compare.compare(run, run, pair=pair)
    assert len(table) == 1 and table.loc[0, "verdict"] == "faster"
    assert compare.output_path(run, run, pair).name == "compare_self_optimizer_foreach_vs_fused.md"


def test_a_folder_against_itself_says_so(tmp_path, capsys):
    rng = np.random.default_rng(7)
    run = _write_run(
        tmp_path / "r",
        {
            ("bf16-amp", "foreach"): _windows(rng, 14.0),
            ("bf16-amp", "fused"): _windows(rng, 12.0),
        },
    )
    assert main(["compare", str(run), str(run / ".." / "r")]) == 0
    out = capsys.readouterr().out
    assert out.strip() == f"A and B are the same folder ({run}): nothing to compare"
    assert not list(run.glob("compare_*.md"))
    # Two values of an axis within it are still compared.
    assert main(["compare", str(run), str(run), "--pair", "optimizer=foreach:fused"]) == 0
    assert "\n1 faster.\n" in capsys.readouterr().out
    assert (run / "compare_self_optimizer_foreach_vs_fused.md").is_file()


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
    rng = np.random.default_rng(8)
    a = _write_run(tmp_path / "1a", {("bf16-amp", "fused"): _samples(rng, 10, 0.03)})
    b = _write_run(
        tmp_path / "2b", {("bf16-amp", "fused"): _samples(rng, 12, 0.03)}, env={"torch": "2.12.0"}
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
