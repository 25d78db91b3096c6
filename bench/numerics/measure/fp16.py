"""float16's range, and the one rule for what it does to a magnitude x (round to nearest, ties to
even): x <= `ZERO_AT_OR_BELOW` (2**-25) is flushed to zero; below `SUBNORMAL_BELOW` (2**-14 -
2**-25) it is kept as a subnormal, at reduced precision (not harm); from there up it is normal."""

from __future__ import annotations

SMALLEST_SUBNORMAL_LOG2 = -24
"""2**-24: the smallest positive float16; anything at or below half of it rounds to zero."""
SMALLEST_NORMAL_LOG2 = -14
"""2**-14: below it float16 is subnormal and keeps fewer than 10 mantissa bits."""
MAX = 65504.0
"""The largest finite float16; anything from 65520 up rounds to infinity."""
ZERO_AT_OR_BELOW = 2.0 ** (SMALLEST_SUBNORMAL_LOG2 - 1)
"""2**-25: a magnitude at or below it rounds to zero in float16 (the module docstring)."""
SUBNORMAL_BELOW = 2.0**SMALLEST_NORMAL_LOG2 - ZERO_AT_OR_BELOW
"""A magnitude above `ZERO_AT_OR_BELOW` and below this rounds to a float16 subnormal."""
