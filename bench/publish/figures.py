"""How every figure is written: a PNG of at most 256 colours (median cut, no dithering), so the
folders committed to results/ stay small; the figures are opaque and the same figure makes the
same bytes."""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure
from PIL import Image

COLOURS = 256


def save(fig: Figure, path: Path, dpi: float) -> None:
    """`fig` as a PNG of at most `COLOURS` colours at `dpi`."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    buffer.seek(0)
    with Image.open(buffer) as image:
        rgb = image.convert("RGB")
    palette = rgb.quantize(COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    # A published figure may be a link to the same bytes in another folder (docs/results-folder.md):
    # the link goes, never the other folder's figure, which writing through it would replace.
    if path.is_symlink():
        path.unlink()
    palette.save(path, format="PNG", optimize=True)
