"""Figures of a timing run from small stored rows: valid PNGs of the expected size embedded in
report.md, the rows' values drawn, a panel per combination of the varying axes (a new axis
included), and one colour per mode everywhere."""

import re
import struct
import warnings

import matplotlib.figure
import matplotlib.image
import pandas as pd
import pytest

from bench.ground import catalog
from bench.numerics.render import plots as numerics_plots
from bench.publish import plots, report
from bench.store import results
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
    # figsize x 100 dpi: throughput 12 x (4.2 per panel x 3 panels + 0.8) inches, one panel to a
    # row; the others 2 panels to a row of 7 x 3.8: floor 3 panels (2 rows), phases and memory 6
    # (one per batch size and panel: 3 rows).
    pixels = {
        "throughput": (1200, 1340),
        "floor": (1400, 840),
        "phases": (1400, 1220),
        "memory": (1400, 1220),
    }
    for name, file in plots.FILES.items():
        data = (run / file).read_bytes()
        assert data.startswith(PNG) and data[12:16] == b"IHDR", name
        assert struct.unpack(">II", data[16:24]) == pixels[name], name
        image = matplotlib.image.imread(run / file)  # decodes: chunks and checksums are whole
        assert image.shape[:2] == pixels[name][::-1], name
        assert image[..., :3].std() > 0.05, name  # something is drawn on the white canvas
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


def test_every_mode_has_its_own_colour_and_unknown_modes_a_stable_one():
    colours = {name: catalog.colour(name) for name in catalog.CARDS}
    assert colours["bf16-amp"] == catalog.CARDS["bf16-amp"].colour
    assert len(set(colours.values())) == len(colours)
    new = catalog.colour("fp4-something")
    assert re.fullmatch(r"#[0-9a-f]{6}", new) and new == catalog.colour("fp4-something")
    assert new not in colours.values()


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
    assert colours == {catalog.colour(m) for m in ("fp32", "tf32", "bf16-amp")}

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
        m: catalog.colour(m) for m in ("fp32", "fp16-amp-noscale")
    }


def _bars(ax, x=None):
    """(bottom, height) of the filled bars of `ax`, left to right; only those centred at `x`."""
    bars = sorted((p for p in ax.patches if p.get_fill()), key=lambda p: (p.get_x(), p.get_y()))
    centred = [p for p in bars if x is None or abs(p.get_x() + p.get_width() / 2 - x) < 1e-9]
    return [(round(p.get_y(), 6), round(p.get_height(), 6)) for p in centred]


def test_the_figures_draw_the_rows_values(tmp_path, saved_figures):
    # small_grid: at batch 8 with foreach Adam a step takes 10 ms in fp32, 5 in tf32 and 3.33 in
    # bf16-amp (fused: 0.9 of that); batch 32 is 4x as long, so throughput is the same.
    df = results.load(write_run(tmp_path / "run", small_grid()))
    assert plots.write_all(df, tmp_path / "run") == plots.FILES
    throughput, phases, floor, memory = saved_figures  # the order of plots.FILES

    # Throughput: per panel (foreach, fused), batch 8 then 32, fp32, tf32, bf16-amp in each.
    foreach, fused = throughput.axes[:2]
    assert [h for _, h in _bars(foreach)] == [800.0, 1600.0, 2400.0] * 2  # 8 samples / ms
    assert [h for _, h in _bars(fused)] == pytest.approx([8000 / 9, 16000 / 9, 24000 / 9] * 2)
    labels = [t.get_text() for t in sorted(foreach.texts, key=lambda t: t.get_position()[0])]
    assert labels == ["0.5× tf32", "2× fp32", "3× fp32\n1.5× tf32"] * 2

    # Phases at batch 8, foreach: 30% forward, 50% backward, 20% optimizer, stacked, the total
    # written above, and the floor (0.6 of the step) marked beside each bar.
    first = phases.axes[0]
    assert first.get_title() == "batch size 8, optimizer foreach"
    assert _bars(first, x=0) == [(0.0, 3.0), (3.0, 5.0), (8.0, 2.0)]  # fp32's 10 ms
    assert [t.get_text() for t in first.texts] == ["10", "5", "3.33"]
    floors = [line.get_ydata()[0] for line in first.get_lines()]
    assert floors == pytest.approx([6.0, 3.0, 2.0])

    # Share of floor: every row is at 60%.
    assert {h for ax in floor.axes for _, h in _bars(ax)} == {60.0}

    # Memory: 0.25 parameters + 0.25 gradients + 0.5 Adam + 0.1 GiB saved per 8 samples.
    assert _bars(memory.axes[0], x=0) == [(0.0, 0.25), (0.25, 0.25), (0.5, 0.5), (1.0, 0.1)]
    assert [t.get_text() for t in memory.axes[0].texts] == ["1.1"] * 3
    assert [t.get_text() for t in memory.axes[2].texts] == ["1.4"] * 3  # batch 32
    assert not memory.axes[0].get_lines()  # no peak on the CPU, so no marker


def test_a_traces_panel_with_nothing_above_zero_is_drawn_without_a_log_scale(tmp_path):
    # A model whose Adam second moment stays zero somewhere (an embedding row no batch uses):
    # the panel's min over parameters is 0 at every step, which a log axis cannot show.
    steps = range(0, 40, 10)
    tr = pd.DataFrame(
        {
            "batch_size": 8,
            "mode": "fp32",
            "seed": 0,
            "module": "emb.weight",
            "step": list(steps),
            "grad_zero_share": 0.0,
            "exp_avg_sq_median": 0.0,
            "update_rms_ratio": [1e-3 * (i + 1) for i in range(len(steps))],
            "loss": [2.0 - 0.1 * i for i in range(len(steps))],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns when it cannot log-scale
        numerics_plots.traces(tr, tmp_path / "traces.png")
    assert (tmp_path / "traces.png").is_file()
