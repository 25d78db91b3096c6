"""One colour per precision mode, the same in every figure of the project (timing reports,
numerics reports, history). Needs neither torch nor matplotlib.

Known modes have fixed colours, grouped by family so that a reader sees the dtype at a glance:
greys and blue for float32, reds and orange for float16, greens and browns for bfloat16, purples
for float8. A mode not listed gets a colour derived from its name by a stable hash (not Python's
`hash`, which changes between processes), so it too keeps its colour from one figure and one run
to the next.
"""

from __future__ import annotations

import colorsys
import hashlib

MODE_COLOURS: dict[str, str] = {
    "fp32": "#4d4d4d",
    "tf32": "#1f77b4",
    "fp16-amp": "#d62728",
    "fp16-amp-noscale": "#ff7f0e",
    "bf16-amp": "#2ca02c",
    "bf16-pure": "#8c564b",
    "bf16-pure-sr": "#bcbd22",
    "fp8-tensorwise": "#9467bd",
    "fp8-rowwise": "#e377c2",
}
"""Fixed colours of the modes that exist or are planned (matplotlib's tab10, without cyan, which
the fallback's hues may approach)."""


def mode_colour(mode: str) -> str:
    """The mode's colour as `#rrggbb`: fixed for a known mode, else derived from the name."""
    if mode in MODE_COLOURS:
        return MODE_COLOURS[mode]
    digest = hashlib.sha256(mode.encode()).digest()
    hue = digest[0] / 256
    # Mid saturation and value: readable on white, and distinct from the greys of fp32.
    saturation = 0.55 + 0.3 * digest[1] / 255
    value = 0.55 + 0.3 * digest[2] / 255
    r, g, b = colorsys.hsv_to_rgb(hue, saturation, value)
    return "#{:02x}{:02x}{:02x}".format(*(round(c * 255) for c in (r, g, b)))
