"""Step time across runs: cases matched by id, runs ordered by commit date (start time where the
commit is unknown), each point's verdict against the previous run of its case."""

import pytest

from bench.faults import UsageError
from bench.publish import history
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
    monkeypatch.setattr(history, "commit_date", lambda sha, root=None: dates.get(sha))
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
    assert "**Slower than the run before**" in text
    assert "bf16-amp/fused/b8" in text.split("## Runs")[0]  # the regression is named up top
    bf16 = text.split("## bf16-amp")[1]
    assert "(**slower** 1.2" in bf16 and "(same" in bf16
    assert "| R1 " in text and "[A](../A/report.md)" in text
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
