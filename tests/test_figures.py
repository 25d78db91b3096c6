"""Figures are written as PNGs of at most 256 colours: the same figure, pixel for pixel but for
some anti-aliased edges, at a third of the weight."""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from bench.text import figures


def _figure():
    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.linspace(0, 10, 400)
    for i, colour in enumerate(("tab:blue", "tab:orange", "tab:green", "tab:red")):
        ax.plot(x, np.sin(x + i), color=colour, label=f"line {i}")
        ax.bar(i, i + 1, color=colour, alpha=0.5)
    ax.set_yscale("linear")
    ax.legend()
    ax.set_title("a figure with text, lines, bars and blends")
    return fig


def test_a_figure_is_a_palette_png_close_to_what_matplotlib_draws(tmp_path):
    fig = _figure()
    figures.save(fig, tmp_path / "a.png", dpi=100)
    full = io.BytesIO()
    fig.savefig(full, format="png", dpi=100)
    figures.save(fig, tmp_path / "b.png", dpi=100)
    plt.close(fig)
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    with Image.open(tmp_path / "a.png") as small, Image.open(full) as whole:
        assert small.mode == "P" and small.size == whole.size
        got = np.asarray(small.convert("RGB"), dtype=int)
        want = np.asarray(whole.convert("RGB"), dtype=int)
    diff = np.abs(got - want).max(axis=2)
    assert (diff == 0).mean() > 0.9  # the flat colours exactly; only blended edges move
    assert np.percentile(diff, 99) <= 16
    assert (tmp_path / "a.png").stat().st_size < full.getbuffer().nbytes


def test_a_figure_written_over_a_link_replaces_the_link_not_its_target(tmp_path):
    # A published figure may be a link to the same bytes in another folder: rendering this folder
    # again must leave the other folder's figure as it was.
    (tmp_path / "other").mkdir()
    target = tmp_path / "other" / "memory.png"
    target.write_bytes(b"the other folder's figure")
    link = tmp_path / "memory.png"
    link.symlink_to(target)
    fig = _figure()
    figures.save(fig, link, dpi=50)
    plt.close(fig)
    assert not link.is_symlink() and link.read_bytes().startswith(b"\x89PNG")
    assert target.read_bytes() == b"the other folder's figure"
