"""The `sweep` driver's next look, planned from what its two judges say: which runs it times
alone (speed), which it packs (training), and how far it may jump (docs/own-loop.md, "Runs
alone and packed; seeds in looks"). Pure: the machine and the clock come in as functions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench.verdicts import sequential


def target(judged: dict[str, sequential.Judged], todo: Sequence[str]) -> int:
    """The seeds a side the training rule projects the undecided modes need (0: none said)."""
    return max((judged[m].verdict.needed for m in todo if m in judged), default=0)


def plan(
    design: sequential.Design,
    seeds: Sequence[int],
    packed_modes: Sequence[str],
    alone_modes: Sequence[str],
    taken: Sequence[int],
    target: int,
    *,
    wave: Callable[[int], int],
    look_s: Callable[[int, int], float],
    left_s: float | None,
) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]] | None:
    """The next look: its seeds a side, its runs alone (each of `alone_modes`, in that order, at
    the look's first new seed) and its packed runs (the look's other seeds of `packed_modes`).
    The next planned look, or, where the training rule projects `target` seeds a side, the
    latest planned look up to it whose packed runs all fit in one wave of the machine
    (`wave(runs)`: how many of them run at once): the looks stay the design's, so each look's
    level is the plan's. None where no planned look is left, or none fits the `left_s` seconds
    of the budget (`look_s(packed, alone)`: a look's time, about)."""
    later = [n for n in design.looks() if n > taken[-1]]
    options = [n for n in later if n <= max(target, later[0] if later else 0)]
    for n in reversed(options):
        new = seeds[taken[-1] : n]
        alone = [(m, new[0]) for m in alone_modes]
        packed = [(m, s) for s in new for m in packed_modes if (m, s) not in alone]
        fits = left_s is None or look_s(len(packed), len(alone)) <= left_s
        if fits and (n == options[0] or len(packed) <= wave(max(len(packed), 1))):
            return n, alone, packed
    return None
