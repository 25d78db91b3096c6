"""float16's range, as the census, the histogram and its figure mark it (no torch needed)."""

from __future__ import annotations

SMALLEST_SUBNORMAL_LOG2 = -24
"""2**-24: the smallest positive float16; anything below half of it rounds to zero."""
SMALLEST_NORMAL_LOG2 = -14
"""2**-14: below it float16 is subnormal and keeps fewer than 10 mantissa bits."""
MAX = 65504.0
"""The largest finite float16; anything from 65520 up rounds to infinity."""
