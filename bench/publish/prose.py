"""Figures and lists in sentences, as the README's summary writes them: a figure to 3
significant digits, items joined as prose, batch sizes as a list or a range.
"""

from __future__ import annotations

from bench.publish.tables import number


def figure(x: float) -> str:
    """A figure in a sentence: 3 significant digits."""
    return number(float(x), 3)


def joined(items: list[str]) -> str:
    """Items joined as prose: a; a and b; a, b and c."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def batch_sizes(sizes: list[int]) -> str:
    """`[256]` → "256"; `[256, 1024]` → "256 and 1024"; three or more → "256–4096"."""
    sizes = sorted(int(s) for s in sizes)
    return joined([str(s) for s in sizes]) if len(sizes) < 3 else f"{sizes[0]}–{sizes[-1]}"
