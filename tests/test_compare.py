"""`bench compare`: verdicts on samples with known shifts, case matching, warnings, exit codes."""

import json
import math
import re

import numpy as np
import pytest

from bench.cli import main
from bench.publish import compare
from bench.store import results
from bench.verdicts import rounds
from tests.per_step import per_step_verdict


def _samples(rng, center, spread, n=30):
    return center + spread * rng.standard_normal(n)


def _windows(rng, center, *, repeats=3, steps=30, drift=0.01, noise=0.02):
    """One simulated run of a case: `repeats` windows whose medians drift by a random factor
    (`drift`, relative) each, of `steps` steps with relative noise `noise`."""
    return [
        center * (1 + drift * rng.standard_normal()) * (1 + noise * rng.standard_normal(steps))
        for _ in range(repeats)
    ]


def _medians(windows):
    return [float(np.median(w)) for w in windows]


def _exact_windows(log_medians, steps=5):
    """Windows whose medians are exactly exp(log_medians), for hand-computed expectations."""
    return [np.full(steps, math.exp(m)) for m in log_medians]


def test_one_round_a_side_is_too_few_to_judge_and_two_are_enough():
    # Below `MIN_ROUNDS` (2) a side the judge calls nothing, however far apart the rounds are:
    # one round shows nothing of the spread. From two on the t-test on the means holds its rate
    # (tests/test_verdicts_rounds.py), and a change as large as this one is called.
    out = rounds.rounds_verdict([10.0], [20.0])
    assert out["too_few"] and out["verdict"] == "unclear", out
    assert out["ratio"] == pytest.approx(2.0) and math.isnan(out["ratio_lo"])
    two = rounds.rounds_verdict([10.0, 10.1], [20.0, 20.3])
    assert not two["too_few"] and two["verdict"] == "slower"


def test_rounds_verdict_by_hand_five_rounds_each():
    # log medians: A 0, 0.01, 0.02, 0.03, 0.04; B the same plus 0.05: the means' difference is
    # 0.05. The spread: deviations -0.02..0.02 on each side, pooled variance 2 × 0.001 / 8 =
    # 0.00025, so the difference's standard error is sqrt(0.00025 × (1/5 + 1/5)) = 0.01 and
    # t = 5 on 8 degrees of freedom: p = 0.00105 (t tables), the interval 0.05 ± 2.306 × 0.01.
    a = _exact_windows([0, 0.01, 0.02, 0.03, 0.04])
    b = _exact_windows([0.05, 0.06, 0.07, 0.08, 0.09])
    out = rounds.rounds_verdict([np.median(w) for w in a], [np.median(w) for w in b])
    assert out["ratio"] == pytest.approx(math.exp(0.05))
    assert out["ratio_lo"] == pytest.approx(math.exp(0.05 - 0.02306), rel=1e-4)
    assert out["ratio_hi"] == pytest.approx(math.exp(0.05 + 0.02306), rel=1e-4)
    assert out["noise"] == pytest.approx(math.sqrt(0.002 / 8))  # one round's SD: 1.58%
    assert out["p_value"] == pytest.approx(0.00105, abs=1e-5) and out["df"] == 8
    assert out["verdict"] == "slower"  # p below 5%, ratio 1.051 beyond 1 + 2%


def test_a_noise_floor_is_only_there_when_asked_for():
    # The rounds of the test above, B 4% above A: the interval [exp(0.01), exp(0.07)] excludes 1
    # and 1.041 is beyond 1 + the smallest effect (2%): slower, with no floor by default. With
    # noise_k 3 the floor is 3 × 1.58% = 4.74%, and the same interval no longer makes it one.
    a = [math.exp(x) for x in (0, 0.01, 0.02, 0.03, 0.04)]
    b = [v * math.exp(0.04) for v in a]
    assert rounds.NOISE_K == 0 and rounds.rounds_verdict(a, b)["verdict"] == "slower"
    out = rounds.rounds_verdict(a, b, noise_k=3)
    assert out["ratio_lo"] > 1 and 3 * out["noise"] > out["ratio"] - 1
    assert out["verdict"] == "unclear"


def test_a_rounds_verdict_needs_a_round_a_side():
    with pytest.raises(ValueError, match="a round on each side"):
        rounds.rounds_verdict([], [1.0, 2.0])


def test_same_code_run_twice_is_same_or_unclear():
    """A/A: two sides of one true distribution, 5 rounds each, each round drifting by ~1% and
    each step by ~2%: at least 95% of 200 simulated cases come out `same` or `unclear` (the
    test's 5%, with no noise floor to spare it)."""
    calls = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        a, b = _windows(rng, 10.0, repeats=5), _windows(rng, 10.0, repeats=5)
        calls.append(rounds.rounds_verdict(_medians(a), _medians(b))["verdict"])
    assert sum(v in ("same", "unclear") for v in calls) >= 190, calls


def test_five_percent_slower_is_slower():
    calls = []
    for seed in range(200):
        rng = np.random.default_rng(1000 + seed)
        a, b = _windows(rng, 10.0, repeats=5), _windows(rng, 10.5, repeats=5)
        calls.append(rounds.rounds_verdict(_medians(a), _medians(b))["verdict"])
    assert sum(v == "slower" for v in calls) >= 196, calls


@pytest.mark.parametrize("shift", [1.01, 0.99])
def test_a_one_percent_shift_is_never_called_at_min_effect_two_percent(shift):
    """Tiny noise, a real 1% shift: it is real, and it is below the smallest effect that
    matters, so neither the rounds nor the old per-step test ever calls it; the intervals lie
    within ±2%, so it is `same`."""
    for seed in range(50):
        rng = np.random.default_rng(2000 + seed)
        a = _windows(rng, 10.0, repeats=5, drift=0.0005, noise=0.001)
        b = _windows(rng, 10.0 * shift, repeats=5, drift=0.0005, noise=0.001)
        by_rounds = rounds.rounds_verdict(_medians(a), _medians(b), min_effect=0.02)
        by_steps = per_step_verdict(np.concatenate(a), np.concatenate(b), min_effect=0.02)
        assert by_rounds["verdict"] == "same", by_rounds
        assert by_steps["verdict"] == "same", by_steps


def _write_run(path, cases, env=None, passes=None):
    """A run folder with rows and raw total samples: cases = {(mode, optimizer): samples}, where
    samples is an array (a run without repeats), a list of windows (`repeats_ms`), or None.
    `passes`: the windows are that many passes over the grid (`run --rounds`)."""
    path.mkdir(parents=True)
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
        if passes:
            row["rounds"] = passes
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
            ("fp32", "fused"): _windows(rng, 100, repeats=5, drift=0.001, noise=0.003),
            ("bf16-amp", "fused"): _windows(rng, 10, repeats=5),
            ("tf32", "fused"): _windows(rng, 20, repeats=5),
        },
    )
    b = _write_run(
        tmp_path / "2b",
        {
            ("fp32", "fused"): _windows(rng, 100, repeats=5, drift=0.001, noise=0.003),
            ("bf16-amp", "fused"): _windows(rng, 12, repeats=5),
            ("tf32", "fused"): None,
        },
    )
    table = compare.compare(a, b).set_index("mode")
    assert table.loc["fp32", "verdict"] == "same"
    assert table.loc["bf16-amp", "verdict"] == "slower"
    assert table.loc["bf16-amp", "ratio"] == pytest.approx(1.2, rel=0.02)
    assert table.loc["tf32", "verdict"] == "missing" and table.loc["tf32", "status_b"] == "oom"
    assert set(table["unit_a"].dropna()) == {"windows"}
    text = _render(compare.compare(a, b), a, b)
    assert "**Rounds of one process**" in text  # windows cannot see between-run drift


def test_a_run_with_passes_is_judged_by_its_passes(tmp_path):
    # Two passes of 3 windows each (`run --rounds 2 --repeats 3`): 2 rounds, the fewest the
    # judge takes, not 6 windows; 5 passes of one window each are 5 rounds.
    six = _exact_windows([0, 0.01, 0.02, 0.03, 0.04, 0.05])
    a = _write_run(tmp_path / "1a", {("fp32", "fused"): six}, passes=2)
    b = _write_run(tmp_path / "2b", {("fp32", "fused"): [w * 1.2 for w in six]}, passes=2)
    row = compare.compare(a, b).iloc[0]
    assert row["unit_a"] == "rounds" and row["rounds_a"] == 2 and not row["too_few"]
    assert row["verdict"] == "slower" and row["ratio"] == pytest.approx(1.2)
    assert "Too few rounds" not in _render(compare.compare(a, b), a, b)
    five = _exact_windows([0, 0.01, 0.02, 0.03, 0.04])
    a = _write_run(tmp_path / "3a", {("fp32", "fused"): five}, passes=5)
    b = _write_run(tmp_path / "4b", {("fp32", "fused"): [w * 1.2 for w in five]}, passes=5)
    row = compare.compare(a, b).iloc[0]
    assert row["unit_a"] == "rounds" and row["rounds_b"] == 5 and row["verdict"] == "slower"
    assert "Rounds of one process" not in _render(compare.compare(a, b), a, b)


HOLM = (
    "Verdicts hold the chance of any false `faster` or `slower` across the {} at 5% (Holm's "
    "correction)."
)


def test_the_cases_of_a_comparison_are_judged_as_one_family(tmp_path):
    """Ten cases of five modes, B's rounds each 3% above A's, with a spread of their own: each
    case's p is multiplied by ten (Holm's correction when all are alike), and the report's header
    names the procedure and the error it controls. A case's spread is moderated across the
    cases (two of a mode are too few to fit a prior: they share the family's), so each t has
    more degrees of freedom than its own 8."""
    modes = ("fp32", "tf32", "fp16-amp", "bf16-amp", "bf16-pure")
    cases = [(mode, opt) for mode in modes for opt in ("foreach", "fused")]
    passes = 5
    windows = _exact_windows([0.004 * i for i in range(passes)])
    slower = [w * 1.03 for w in windows]
    a = _write_run(tmp_path / "a", dict.fromkeys(cases, windows), passes=passes)
    b = _write_run(tmp_path / "b", dict.fromkeys(cases, slower), passes=passes)
    table = compare.compare(a, b)
    p = table["p_value"].iloc[0]
    assert 0 < p < 0.005 / 10
    assert table["p_holm"].tolist() == pytest.approx([10 * p] * 10)
    assert (table["df"] > 8).all() and set(table["verdict"]) == {"slower"}
    text = _render(table, a, b)
    assert HOLM.format("10 cases") in text
    assert "**Procedure**: a t-test per case on the mean of the log of each round's" in text
    assert "**Error controlled**: the family-wise error rate" in text
    assert re.search(r"\|\s+p_value\s+\|\s+p_holm\s+\|", text)
    assert "95% interval" in text


def test_a_folder_of_runs_is_one_round_per_run(tmp_path):
    """Repeated runs of one commit (a revision of `ampbench ab`): each run folder is one round,
    whatever its windows; a case that failed in one run has a round fewer."""
    rng = np.random.default_rng(9)
    for side, center in (("A", 10.0), ("B", 11.0)):
        for i in range(5):
            cases = {("fp32", "fused"): _windows(rng, center * (1 + 0.005 * i))}
            cases[("tf32", "fused")] = None if (side, i) == ("B", 0) else _windows(rng, 5.0)
            _write_run(tmp_path / side / f"run{i}", cases)
    table = compare.compare(tmp_path / "A", tmp_path / "B").set_index("mode")
    assert table.loc["fp32", "unit_a"] == "runs" and table.loc["fp32", "rounds_a"] == 5
    assert table.loc["fp32", "verdict"] == "slower"
    assert table.loc["tf32", "rounds_b"] == 4 and table.loc["tf32", "status_b"] == "oom"
    assert table.loc["tf32", "verdict"] in ("same", "unclear")


def test_one_window_a_side_is_too_few_to_judge_and_says_so(tmp_path):
    rng = np.random.default_rng(4)
    a = _write_run(tmp_path / "1a", {("fp32", "fused"): _samples(rng, 100.0, 0.3, n=90)})
    b = _write_run(tmp_path / "2b", {("fp32", "fused"): _samples(rng, 150.0, 0.3, n=90)})
    row = compare.compare(a, b).iloc[0]
    assert row["rounds_a"] == 1 and row["too_few"] and row["verdict"] == "unclear"
    assert row["ratio"] == pytest.approx(1.5, rel=0.01)
    text = _render(compare.compare(a, b), a, b)
    assert "**Too few rounds to judge**: Every case had fewer than 2 rounds a side" in text


def test_the_p10_statistic_judges_the_lower_tail(tmp_path):
    # Rounds whose fastest steps agree, while other work slowed a different share of each
    # round's steps: the medians drift apart, the 10th percentiles do not.
    rng = np.random.default_rng(5)
    rounds = {}
    for side, slowed in (("1a", 0.1), ("2b", 0.6)):
        windows = []
        for _ in range(5):
            steps = 10.0 * (1 + 0.002 * rng.standard_normal(50))
            steps[: int(50 * slowed)] *= 1.3
            windows.append(steps)
        rounds[side] = _write_run(tmp_path / side, {("fp32", "fused"): windows})
    by_median = compare.compare(rounds["1a"], rounds["2b"]).iloc[0]
    by_p10 = compare.compare(rounds["1a"], rounds["2b"], statistic="p10").iloc[0]
    assert by_median["verdict"] == "slower" and by_p10["verdict"] == "same"
    assert _render(compare.compare(rounds["1a"], rounds["2b"], statistic="p10"), "a", "b").count(
        "summed up by the p10 of its step times"
    )


def test_cases_in_one_run_only_are_counted_not_tabled(tmp_path):
    rng = np.random.default_rng(5)
    a = _write_run(
        tmp_path / "1a",
        {("fp32", "fused"): _samples(rng, 100, 0.3), ("tf32", "fused"): _samples(rng, 20, 0.1)},
    )
    b = _write_run(tmp_path / "2b", {("fp32", "fused"): _samples(rng, 100, 0.3)})
    table = compare.compare(a, b)
    assert list(table["mode"]) == ["fp32"]
    assert (table.attrs["only_a"], table.attrs["only_b"]) == (1, 0)
    text = _render(table, a, b)
    assert "1 case(s) ran only in A and are left out." in text


def test_pair_compares_across_one_axis_within_one_run(tmp_path):
    rng = np.random.default_rng(6)
    run = _write_run(
        tmp_path / "r",
        {
            ("bf16-amp", "foreach"): _windows(rng, 14.0, repeats=5),
            ("bf16-amp", "fused"): _windows(rng, 12.0, repeats=5),
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
            ("bf16-amp", "foreach"): _windows(rng, 14.0, repeats=5),
            ("bf16-amp", "fused"): _windows(rng, 12.0, repeats=5),
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
    a = _write_run(tmp_path / "1a", {("bf16-amp", "fused"): _windows(rng, 10.0, repeats=5)})
    b = _write_run(
        tmp_path / "2b",
        {("bf16-amp", "fused"): _windows(rng, 12.0, repeats=5)},
        env={"torch": "2.12.0"},
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
    assert main(["compare", str(a), str(b), "--statistic", "mean"]) == 2


def _save(path, benchmarks, *, data=True):
    """A pytest-benchmark save: benchmarks = {name: rounds in seconds}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, times_s in benchmarks.items():
        stats_ = {"median": float(np.median(times_s)), "rounds": len(times_s)}
        if data:
            stats_["data"] = [float(r) for r in times_s]
        entries.append({"name": name, "stats": stats_, "extra_info": {"gpu": "cpu"}})
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": entries}))
    return path


def test_two_pytest_benchmark_saves_get_verdicts_from_their_rounds(tmp_path, capsys):
    rng = np.random.default_rng(10)

    def rounds(center):
        return center * (1 + 0.01 * rng.standard_normal(10))

    a = _save(
        tmp_path / "0001_aaaaaaa.json",
        {"fp32-b8-step": rounds(1e-3), "fp32-b8-forward": rounds(4e-4)},
    )
    b = _save(
        tmp_path / "0002_bbbbbbb.json",
        {"fp32-b8-step": rounds(1.2e-3), "fp32-b8-forward": rounds(4e-4)},
    )
    table = compare.compare(a, b).set_index("benchmark")
    assert table.loc["fp32-b8-step", "verdict"] == "slower"
    assert table.loc["fp32-b8-step", "median_ms_a"] == pytest.approx(1.0, rel=0.02)  # ms
    assert table.loc["fp32-b8-forward", "verdict"] in ("same", "unclear")
    assert set(table["unit_a"]) == {"calls"} and set(table["rounds_b"]) == {10}
    assert main(["compare", str(a), str(b), "--fail-on-slower"]) == 1
    out = capsys.readouterr().out
    assert "**Rounds of one process**" in out and "| fp32-b8-step " in out
    assert (tmp_path / "compare_0001_aaaaaaa.md").is_file()
    # Saved without --benchmark-save-data: the median alone, too few to judge.
    c = _save(tmp_path / "old" / "0003.json", {"fp32-b8-step": rounds(1e-3)}, data=False)
    row = compare.compare(c, b).iloc[0]
    assert row["rounds_a"] == 1 and row["verdict"] == "unclear" and row["too_few"]


def test_a_folder_of_saves_is_one_round_per_save(tmp_path):
    rng = np.random.default_rng(11)
    for side, center in (("A", 1e-3), ("B", 1.1e-3)):
        for i in range(5):
            drift = center * (1 + 0.004 * i)
            _save(
                tmp_path / side / f"000{i}.json", {"x": drift * (1 + 0.01 * rng.standard_normal(8))}
            )
    row = compare.compare(tmp_path / "A", tmp_path / "B").iloc[0]
    assert row["unit_a"] == "saves" and row["rounds_a"] == 5 and row["verdict"] == "slower"


def test_a_save_and_a_run_do_not_compare_and_a_stray_path_is_named(tmp_path, capsys):
    rng = np.random.default_rng(12)
    save = _save(tmp_path / "0001.json", {"x": [1e-3, 1.1e-3]})
    run = _write_run(tmp_path / "r", {("fp32", "fused"): _windows(rng, 10.0)})
    assert main(["compare", str(save), str(run)]) == 2
    assert "pytest-benchmark saves" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(run), str(tmp_path / "empty")]) == 2
    assert "is not a run folder, a folder of run folders" in capsys.readouterr().err


def _comparison_of_many_cases(rng, *, cases, processes, slower=1.0, layout=0.0):
    """One simulated comparison of `cases` cases, `processes` fresh processes a side, judged by the
    verdict code compare runs (`judge_family`: the cases of one mode, their spreads moderated
    together, Holm's correction across them) and case by case (`rounds_verdict` alone, each on
    its own spread, no correction). A round's value is
    10 ms × B's `slower` × lognormal noise: each process's own speed (0.2%, shared by all its
    cases), each case's (0.3%), and, with `layout`, a second speed `layout` slower that each
    process lands on for each case by a coin toss (a kernel or an allocation that a fresh
    process picks anew): a spread the noise bound underrates when one side's coins fall alike."""

    def side(scale):
        process = rng.normal(0, 0.002, (1, processes))
        logs = process + rng.normal(0, 0.003, (cases, processes))
        logs += math.log1p(layout) * (rng.random((cases, processes)) < 0.5)
        return 10.0 * scale * np.exp(logs)

    a, b = side(1.0), side(slower)
    alone = [rounds.rounds_verdict(a[c], b[c]) for c in range(cases)]
    family = rounds.judge_family([("fp32", a[c], b[c]) for c in range(cases)])
    return [v["verdict"] for v in alone], [v["verdict"] for v in family]


def test_holms_correction_holds_false_alarms_across_the_cases():
    """A/A: 80 simulated comparisons of one code with itself, 32 cases each (the largest grid
    the gate is meant for), 7 rounds a side (ab's default), with the two-speed layout noise (3%
    apart). Case by case, coin tosses that put most of one side's rounds on the slow speed are
    now and then called `slower`, and over 32 cases that happens in more than 5% of the
    comparisons (10 of these 80 without the correction). With 80 comparisons a rate of 5% would
    show 4 ± 2: the family's rule must show at most 4 (5%), the rule without it at least 8."""
    rng = np.random.default_rng(20261202)
    runs = [_comparison_of_many_cases(rng, cases=32, processes=7, layout=0.03) for _ in range(80)]
    without = sum("slower" in alone for alone, _ in runs)
    with_holm = sum("slower" in family for _, family in runs)
    assert with_holm <= 4, (with_holm, without)
    assert without >= 8, (with_holm, without)


def test_holms_correction_still_catches_a_five_percent_slowdown():
    """Every case 5% slower, low noise (0.2% per process, 0.3% per case), 32 cases, 7 rounds a
    side: each case's t is far beyond what Holm's correction across 32 asks, and every case of
    every comparison is `slower`."""
    rng = np.random.default_rng(7)
    for _ in range(5):
        _, family = _comparison_of_many_cases(rng, cases=32, processes=7, slower=1.05)
        assert family == ["slower"] * 32, family


def test_a_window_gradscaler_skipped_whole_is_no_round():
    from bench.verdicts import sides

    nan = float("nan")
    rec = {
        "samples_ms": {"total": [nan, nan, 2.0, 2.1, 2.2, 2.3]},
        "repeats_ms": {"total": [[nan, nan], [2.0, 2.1], [2.2, 2.3]]},
    }
    unit, rounds = sides._run_rounds(rec, {})
    assert unit == "windows" and [list(r) for r in rounds] == [[2.0, 2.1], [2.2, 2.3]]
    # Passes of a `--rounds` run are grouped first, and a pass with no training step dropped.
    unit, rounds = sides._run_rounds(rec | {"repeats_ms": {"total": [[nan], [nan], [2.0], [2.1]]}},
                                     {"rounds": 2})  # fmt: skip
    assert unit == "rounds" and [list(r) for r in rounds] == [[2.0, 2.1]]
