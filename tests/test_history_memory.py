"""Peak memory across revisions: each point's peak and its memory verdict against the previous
revision (the rule `compare` uses), the history's list of cases using more memory, its memory
figure, and the site's chart drawing memory beside time."""

from __future__ import annotations

import json

import pytest

from bench.publish import history
from bench.verdicts import history_points
from tests.stored import timing_row, write_run

GPU = "Test GPU 80GB"


def _rows(peak_bf16: float | None) -> list[dict]:
    rows = []
    for mode, peak in (("fp32", 4.0), ("bf16-amp", peak_bf16)):
        row = timing_row(mode=mode, optimizer="fused", batch_size=8)
        if peak is not None:
            row |= {"peak_alloc_gib": peak, "peak_fwd_gib": 1.0, "peak_bwd_gib": peak}
        rows.append(row)
    return rows


@pytest.fixture
def revisions(tmp_path, monkeypatch):
    """Three commits: bf16-amp's peak 3 GiB, then 3.3 GiB (+10%), then 3.3 again."""
    dates = {c * 40: f"2026-11-0{i + 1}T00:00:00+00:00" for i, c in enumerate("abc")}
    monkeypatch.setattr(history_points, "commit_date", lambda sha, root=None: dates.get(sha))
    for i, (c, peak) in enumerate((("a", 3.0), ("b", 3.3), ("c", 3.3))):
        write_run(tmp_path / c, _rows(peak), gpu=GPU, commit=c * 40, seed=i,
                  started=f"2026-11-0{i + 1}T01:00:00+00:00")  # fmt: skip
    return tmp_path


def test_each_point_has_its_peak_and_memory_verdict(revisions):
    _, points = history_points.collect(revisions, GPU)
    bf16 = points[points["mode"] == "bf16-amp"].set_index("label")
    assert list(bf16["memory_verdict"]) == ["first", "more memory", "same memory"]
    assert bf16.loc["R2", "peak_alloc_gib"] == pytest.approx(3.3)
    assert bf16.loc["R2", "memory_change_pct"] == pytest.approx(10.0)
    fp32 = points[points["mode"] == "fp32"]
    assert list(fp32["memory_verdict"]) == ["first", "same memory", "same memory"]


def test_the_history_lists_more_memory_and_draws_memory(revisions):
    (md,) = history.write(revisions, GPU)
    text = md.read_text()
    assert "**More memory than the revision before**:" in text
    assert "R2 against R1, +10%" in text
    assert "3.300 GiB (**more memory** +10%)" in text
    assert (md.parent / f"{md.stem}-memory.png").is_file()
    assert "![peak memory per revision](" in text


def test_a_history_without_peaks_says_nothing_of_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(history_points, "commit_date", lambda sha, root=None: None)
    for i in range(2):
        rows = [timing_row(mode="fp32", optimizer="fused", batch_size=8)]  # the CPU's NaN peak
        write_run(tmp_path / f"r{i}", rows, gpu=GPU, started=f"2026-11-0{i + 1}T00:00:00+00:00")
    revs, points = history_points.collect(tmp_path, GPU)
    text = history.render(revs, points, GPU, results_dir=tmp_path, figure="x.png")
    assert "Peak memory" not in text and "memory.png" not in text


def test_the_site_chart_draws_memory_beside_time(revisions):
    charts = pytest.importorskip("bench.publish.site.charts")
    revs, points = history_points.collect(revisions, GPU)
    found = {c.mode: c for c in charts.charts(revs, points)}
    assert found["bf16-amp"].more_memory and not found["fp32"].more_memory
    figure = json.loads(found["bf16-amp"].figure)
    memory_trace = [t for t in figure["data"] if t.get("yaxis") == "y2"]
    assert len(memory_trace) == 1 and memory_trace[0]["customdata"][1][3] == "more memory +10%"
    assert memory_trace[0]["marker"]["symbol"][1] == "triangle-up"
