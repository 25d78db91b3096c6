"""Figures of a timing run from small stored rows: valid PNGs embedded in report.md, a panel per
combination of the varying axes (a new axis included), and one colour per mode everywhere."""

import re

import matplotlib.figure
import pandas as pd
import pytest

from bench import palette, plots, report, results
from bench.numerics import plots as numerics_plots
from tests.stored import small_grid, timing_row, write_run

PNG = b"\x89PNG\r\n\x1a\n"


def _fused_rows() -> list[dict]:
    """A cudagraph-like variant beside eager: no phase columns, only the whole step."""
    return [
        timing_row(mode=m, optimizer="fused", variant="cudagraph", batch_size=bs, fused=True)
        for m in ("fp32", "bf16-amp")
        for bs in (8, 32)
    ]


def test_report_writes_and_embeds_every_figure(tmp_path):
    run = write_run(tmp_path / "run", small_grid() + _fused_rows())
    report.write(run)
    text = (run / results.REPORT).read_text()
    for name, file in plots.FILES.items():
        data = (run / file).read_bytes()
        assert data.startswith(PNG), name
        assert len(data) > 20_000, name  # bars, labels and legends, not an empty canvas
        assert f"]({file})" in text, name
    # Each figure sits in the section it belongs to.
    assert text.index("](throughput.png)") < text.index("## Where the time goes")
    assert text.index("](memory.png)") > text.index("## Memory")


def test_no_passing_case_draws_nothing_and_removes_old_figures(tmp_path):
    run = write_run(tmp_path / "run", [{**r, "status": "oom"} for r in small_grid()])
    for file in plots.FILES.values():  # figures of an earlier rendering, now without rows
        (run / file).write_bytes(PNG)
    report.write(run)
    assert not any((run / f).exists() for f in plots.FILES.values())
    assert ".png" not in (run / results.REPORT).read_text()


def test_panels_follow_the_axes_that_vary():
    df = pd.DataFrame(small_grid() + _fused_rows())
    assert plots.panel_axes(df) == ["optimizer", "variant"]
    titles = [t for t, _ in plots._panels(df)]
    assert titles == ["optimizer foreach, variant eager", "optimizer fused, variant eager",
                      "optimizer fused, variant cudagraph"]  # fmt: skip
    by_batch = [t for t, _ in plots._panels(df, by_batch=True)]
    assert by_batch[0] == "batch size 8, optimizer foreach, variant eager" and len(by_batch) == 6


def test_a_new_axis_gets_panels_without_a_change_here(knob, tmp_path):
    rows = [
        {**timing_row(mode=m), "knob": k, "case_id": f"{m}/{k}"}
        for m in ("fp32", "bf16-amp")
        for k in ("a", "b")
    ]
    df = results.load(write_run(tmp_path / "run", rows))
    assert "knob" in plots.panel_axes(df)
    assert [t for t, _ in plots._panels(df)] == ["knob a", "knob b"]
    assert plots.write_all(df, tmp_path / "run") == plots.FILES


def test_palette_is_fixed_for_known_modes_and_stable_for_others():
    assert palette.mode_colour("bf16-amp") == palette.MODE_COLOURS["bf16-amp"]
    for planned in ("bf16-pure", "bf16-pure-sr", "fp8-tensorwise", "fp8-rowwise"):
        assert planned in palette.MODE_COLOURS
    assert len(set(palette.MODE_COLOURS.values())) == len(palette.MODE_COLOURS)
    new = palette.mode_colour("fp4-something")
    assert re.fullmatch(r"#[0-9a-f]{6}", new) and new == palette.mode_colour("fp4-something")
    assert new not in palette.MODE_COLOURS.values()


@pytest.fixture
def saved_figures(monkeypatch):
    """Every figure saved during the test, kept open for inspection."""
    figures = []
    original = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        figures.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    return figures


def test_timing_and_numerics_figures_share_the_mode_colours(tmp_path, saved_figures):
    df = results.load(write_run(tmp_path / "run", small_grid()))
    plots.throughput(df, tmp_path / "t.png")
    bars = [p for ax in saved_figures[0].axes for p in ax.patches]
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in bars}
    assert colours == {palette.mode_colour(m) for m in ("fp32", "tf32", "bf16-amp")}

    steps = pd.DataFrame(
        [
            {"mode": m, "batch_size": 8, "seed": 0, "step": s, "loss": 1.0 / (s + 1), "scale": None}
            for m in ("fp32", "fp16-amp-noscale")
            for s in range(30)
        ]
    )
    numerics_plots.loss_curves(steps, 30, tmp_path / "loss.png")
    lines = saved_figures[1].axes[0].get_lines()
    assert {ln.get_label(): ln.get_color() for ln in lines} == {
        m: palette.mode_colour(m) for m in ("fp32", "fp16-amp-noscale")
    }
