"""Step time across revisions: cases matched on their axes, the runs of a commit one revision,
revisions ordered by commit date (start time where the commit is unknown), each point's verdict
against the previous revision of its case judged from rounds, as `compare` judges."""

import json

import numpy as np
import pytest

from bench.faults import UsageError
from bench.publish import compare, history
from bench.store import results
from bench.verdicts import history_points, sides
from tests.per_step import per_step_verdict
from tests.stored import timing_row, write_run

GPU = "Test GPU 80GB"


def _rows(ms_fp32: float, ms_bf16: float) -> list[dict]:
    return [
        timing_row(mode="fp32", optimizer="fused", batch_size=8, total_ms=ms_fp32),
        timing_row(mode="bf16-amp", optimizer="fused", batch_size=8, total_ms=ms_bf16),
    ]


@pytest.fixture
def three_runs(tmp_path, monkeypatch):
    """Run A (commit a, oldest), B (no commit, started after A's commit): bf16-amp 20% slower,
    C (commit c, committed after B started, but started first): like B. A CPU run is left out."""
    dates = {"a" * 40: "2026-11-01T00:00:00+00:00", "c" * 40: "2026-11-20T00:00:00+00:00"}
    monkeypatch.setattr(history_points, "commit_date", lambda sha, root=None: dates.get(sha))
    write_run(tmp_path / "A", _rows(10.0, 5.0), gpu=GPU, commit="a" * 40,
              started="2026-11-02T00:00:00+00:00", seed=1)  # fmt: skip
    write_run(tmp_path / "B", _rows(10.0, 6.0), gpu=GPU, started="2026-11-10T00:00:00+00:00",
              seed=2)  # fmt: skip
    write_run(tmp_path / "C", _rows(10.0, 6.0), gpu=GPU, commit="c" * 40,
              started="2026-11-05T00:00:00+00:00", seed=3)  # fmt: skip
    write_run(tmp_path / "cpu-run", _rows(99.0, 99.0))
    return tmp_path


def test_verdicts_against_the_previous_run_of_each_case(three_runs):
    runs, points = history.collect(three_runs, GPU)
    assert list(runs["run"]) == ["A", "B", "C"]  # by commit date, else start
    assert list(runs["dated_by"]) == ["commit", "start", "commit"]
    v = points.set_index(["mode", "label"])["verdict"]
    assert v[("fp32", "R1")] == "first" and v[("bf16-amp", "R1")] == "first"
    assert v[("bf16-amp", "R2")] == "slower"  # 6 ms against 5 ms, 1% spread
    assert v[("fp32", "R2")] == "same" and v[("bf16-amp", "R3")] == "same"
    assert points.set_index(["mode", "label"]).loc[("bf16-amp", "R2"), "ratio"] == pytest.approx(
        1.2, rel=0.02
    )


def test_history_writes_a_table_and_a_plot_per_gpu(three_runs):
    (md,) = history.write(three_runs)  # every GPU model but the CPU
    assert md == three_runs / "history" / "Test-GPU-80GB.md"
    text = md.read_text()
    assert "**Slower than the revision before**" in text
    assert "bf16-amp/fused/b8" in text.split("## Runs")[0]  # the regression is named up top
    bf16 = text.split("## bf16-amp")[1]
    assert "(**slower** 1.2" in bf16 and "(same" in bf16
    assert "| R1 " in text and "[A](../A/report.md)" in text
    assert "**Rounds of one process**: 4 verdicts" in text  # each revision one run's windows
    png = md.with_suffix(".png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000  # drawn (a palette PNG)


def test_an_unknown_gpu_is_named(three_runs):
    with pytest.raises(UsageError, match=r"'H100'.*Test GPU 80GB"):
        history.write(three_runs, "H100")


def test_a_read_only_results_folder_is_one_line_naming_it(three_runs, read_only, capsys):
    from bench.cli import main

    read_only(three_runs)
    assert main(["history", "--results-dir", str(three_runs)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"ampbench: error: cannot make {three_runs / 'history'} (Read-only file system)"


def test_a_read_only_history_folder_is_named_before_any_work(three_runs, read_only, capsys):
    from bench.cli import main

    (three_runs / "history").mkdir()
    read_only(three_runs / "history")
    assert main(["history", "--results-dir", str(three_runs)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{three_runs / 'history'} is not writable")


# --- Rounds, not steps: history judges as compare does ---------------------------------------

RUN_FACTORS = {"a": (1.00, 1.04, 0.97, 1.02, 0.99), "b": (1.03, 0.98, 1.01, 0.96, 1.04)}
"""Five runs a commit, each moved as a whole by ±4% (what a machine's clocks and load do to a
fresh process), the two commits' code the same: the steps inside a run spread by 0.1% only."""


def _commits(root, factors, slower=1.0):
    """results/c<name>/<run>: five runs of each commit, the bf16-amp case of commit b `slower`."""
    dates = {name * 40: f"2026-11-0{i + 1}T00:00:00+00:00" for i, name in enumerate(factors)}
    for day, (name, moves) in enumerate(factors.items(), start=1):
        for i, move in enumerate(moves):
            bf16 = 5.0 * move * (slower if name == "b" else 1.0)
            write_run(root / f"c{name}" / f"run{i}", _rows(10.0 * move, bf16), gpu=GPU,
                      commit=name * 40, started=f"2026-11-{day:02d}T0{i}:00:00+00:00",
                      spread=0.001, seed=10 * day + i)  # fmt: skip
    return dates


def test_run_to_run_noise_is_no_change_though_the_per_step_test_calls_one(tmp_path, monkeypatch):
    """The old per-step test, between the last run of commit a and the first of b (what history
    compared), calls a 4% move of the same code `slower`: their steps barely spread. Judged with
    each run a round, the ±4% between runs of one commit is the noise, and the change is not
    called."""
    dates = _commits(tmp_path, RUN_FACTORS)
    monkeypatch.setattr(history_points, "commit_date", lambda sha, root=None: dates.get(sha))
    last_a = sides.of_runs([tmp_path / "ca" / "run4"]).cases.set_index("mode")
    first_b = sides.of_runs([tmp_path / "cb" / "run0"]).cases.set_index("mode")
    for mode in ("fp32", "bf16-amp"):
        steps_a = np.concatenate(last_a.loc[mode, "rounds"])
        steps_b = np.concatenate(first_b.loc[mode, "rounds"])
        assert per_step_verdict(steps_a, steps_b)["verdict"] == "slower"
    revs, points = history_points.collect(tmp_path, GPU)
    assert list(revs["run"]) == ["5 runs", "5 runs"] and list(revs["commit"]) == [
        "aaaaaaa",
        "bbbbbbb",
    ]
    second = points[points["label"] == "R2"].set_index("mode")
    assert set(second["verdict"]) <= {"same", "unclear"} and set(second["rounds"]) == {5}
    assert (second["unit"] == "runs").all() and not second["one_process"].any()


def test_history_and_compare_give_the_same_verdicts_on_a_pair_of_commits(tmp_path, monkeypatch):
    dates = _commits(tmp_path, RUN_FACTORS, slower=1.3)
    monkeypatch.setattr(history_points, "commit_date", lambda sha, root=None: dates.get(sha))
    _, points = history_points.collect(tmp_path, GPU)
    by_history = points[points["label"] == "R2"].set_index("mode")
    by_compare = compare.compare(tmp_path / "ca", tmp_path / "cb").set_index("mode")
    assert by_history.loc["bf16-amp", "verdict"] == "slower"
    for mode in ("fp32", "bf16-amp"):
        for column in ("verdict", "too_few"):
            assert by_history.loc[mode, column] == by_compare.loc[mode, column], (mode, column)
        for column in ("ratio", "p_value", "p_holm"):
            assert by_history.loc[mode, column] == pytest.approx(by_compare.loc[mode, column])


def test_a_commit_of_too_few_rounds_is_unclear_and_says_so(tmp_path, monkeypatch):
    # One run a commit, its windows left out (a run without repeats): one round a side.
    dates = _commits(tmp_path, {"a": (1.0,), "b": (1.3,)})
    for path in tmp_path.glob("c*/run0/" + results.SAMPLES):
        recs = [{k: v for k, v in r.items() if k != "repeats_ms"} for r in results.read_rows(path)]
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    monkeypatch.setattr(history_points, "commit_date", lambda sha, root=None: dates.get(sha))
    revs, points = history_points.collect(tmp_path, GPU)
    second = points[points["label"] == "R2"]
    assert set(second["verdict"]) == {"unclear"} and second["too_few"].all()  # 1 round a side
    text = history.render(revs, points, GPU, results_dir=tmp_path)
    assert "(unclear: too few rounds)" in text and "**Too few rounds**: 2 of the 2" in text
    # No verdict could have found a slowdown, so the page does not say there is none.
    assert "Not known whether any case is slower" in text and "No case is slower" not in text
    assert text.count("[run0](../ca/run0/report.md)") == 1


def test_a_case_that_failed_in_one_run_of_a_revision_is_judged_on_the_others(tmp_path):
    rows = _rows(10.0, 5.0)
    failed = [dict(rows[0], status="oom", error="out of memory"), rows[1]]
    write_run(tmp_path / "c1" / "run0", rows, gpu=GPU, commit="1" * 40, seed=1)
    write_run(tmp_path / "c1" / "run1", failed, gpu=GPU, commit="1" * 40, seed=2,
              started="2026-11-29T11:00:00+00:00")  # fmt: skip
    revs, points = history_points.collect(tmp_path, GPU)
    fp32 = points.set_index("mode").loc["fp32"]
    assert fp32["status"] == "oom" and fp32["rounds"] == 1 and fp32["median_ms"] > 0
    assert "(oom in a run)" in history.render(revs, points, GPU, results_dir=tmp_path)
