"""What a float8 mode's plan converts, and why a mode that converts no Linear is
`unsupported`: the rule planning a case asks (`bench.execution.variants`), without pandas, so
that planning imports none; `bench.verdicts.timing` applies it to a run's rows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

CONVERTED = "converted"
"""A Linear's decision in a float8 plan when the mode converts it (else `kept: why`)."""
ENTRY = re.compile(r"; (?=[^\s;:]+ (?:converted|kept:))")
"""Where one Linear's entry of a row's `fp8_linears` ends: a reason may itself hold "; "."""
WHOLE_PLAN_UP_TO = 4
"""A plan of at most this many Linears is said Linear by Linear; a longer one is counted."""
NO_LINEAR = re.compile(r"converts no Linear|no Linear of .+ is convertible")
"""What the reason of an `unsupported` float8 row says when its mode converts no Linear (the
second form: folders from before the rule covered torchao's size thresholds)."""


def plan_of(listed: object) -> dict[str, str]:
    """A row's `fp8_linears` ("fc1 converted; fc2 kept: too small ...") as the plan it was
    written from (Linear name -> decision); empty where the row lists nothing."""
    if not isinstance(listed, str) or not listed:
        return {}
    entries = (entry.partition(" ") for entry in ENTRY.split(listed))
    return {name: what for name, _, what in entries}


def plan_summary(plan: Mapping[str, str]) -> str:
    """A float8 plan in one line: each Linear's decision for a model of a few Linears, else
    how many Linears took each decision, without their sizes (`72 converted; 24 kept: too
    small for tensorwise`). A transformer's plan runs to tens of KB."""
    if len(plan) <= WHOLE_PLAN_UP_TO:
        return "; ".join(f"{name} {what}" for name, what in plan.items())
    decisions = Counter(what.split(" (")[0] for what in plan.values())
    return "; ".join(f"{n} {what}" for what, n in decisions.items())


def float8_unsupported_reason(plan: Mapping[str, str], model: str) -> str | None:
    """Why a float8 mode whose `plan` on `model` (Linear name -> `converted` or `kept: why`,
    `bench.modes.fp8.plan`) converts nothing is `unsupported`, with each decision summed up
    (`plan_summary`); None where it converts a Linear."""
    if CONVERTED in plan.values():
        return None
    return f"float8 converts no Linear of {model}: {plan_summary(plan) or 'it has none'}"
