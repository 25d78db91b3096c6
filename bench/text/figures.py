"""How every figure is written: a PNG of at most 256 colours (median cut, no dithering), so the
folders committed to results/ stay small; the figures are opaque and the same figure makes the
same bytes. Saving closes the figure: a report draws many, and pyplot keeps each open."""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from PIL import Image

COLOURS = 256


def save(fig: Figure, path: Path, dpi: float) -> None:
    """`fig` as a PNG of at most `COLOURS` colours at `dpi`, then closed."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    plt.close(fig)
    buffer.seek(0)
    with Image.open(buffer) as image:
        rgb = image.convert("RGB")
    palette = rgb.quantize(COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    # A published figure may be a link to the same bytes in another folder (docs/results-folder.md):
    # the link goes, never the other folder's figure, which writing through it would replace.
    if path.is_symlink():
        path.unlink()
    palette.save(path, format="PNG", optimize=True)


def panels(
    n: int,
    title: str,
    *,
    width: float = 7.0,
    height: float = 3.8,
    cols: int = 2,
    extra: float = 0.8,
    sharey: bool = False,
) -> tuple[Figure, list[Axes]]:
    """A grid of `n` panels, `cols` to a row, under one title, `extra` inches for title and
    legend. Constrained layout keeps room for a legend outside the panels, where it hides no bar."""
    cols = min(n, cols)
    rows = math.ceil(n / cols)
    fig, grid = plt.subplots(
        rows,
        cols,
        figsize=(width * cols, height * rows + extra),
        squeeze=False,
        sharey=sharey,
        layout="constrained",
    )
    for ax in grid.flat[n:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=11)
    return fig, list(grid.flat[:n])
