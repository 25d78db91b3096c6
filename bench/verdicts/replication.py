"""Whether two studies of the same modes, on disjoint seeds at one commit, agree: a verdict
contradicts another only where both cannot be true (docs/quality.md). Pure Python."""

from __future__ import annotations

from bench.verdicts import training

AGREE, CONTRADICT, UNDECIDED = "agree", "contradict", "undecided in one"
_SIDE = {
    training.LIKE: "inside",
    training.WITHIN_WORSE: "inside",
    training.WITHIN_BETTER: "inside",
    training.WORSE: "outside",
    training.BETTER: "outside",
}
_SIGN = {
    training.WITHIN_WORSE: 1,
    training.WORSE: 1,
    training.WITHIN_BETTER: -1,
    training.BETTER: -1,
}


def compare(a: str, b: str) -> str:
    """`AGREE`, `CONTRADICT` or `UNDECIDED` for one mode's verdict words in two studies."""
    for word in (a, b):
        if word != training.NOT_KNOWN and word not in _SIDE:
            raise ValueError(f"verdict {word!r} is not one of the training judge's")
    if training.NOT_KNOWN in (a, b):
        return UNDECIDED
    if _SIDE[a] != _SIDE[b] or _SIGN.get(a, 0) * _SIGN.get(b, 0) < 0:
        return CONTRADICT
    return AGREE


def table(a: dict[str, str], b: dict[str, str]) -> list[dict[str, str]]:
    """One row per mode in both: its verdict in each and whether they agree."""
    return [
        {"mode": m, "first": a[m], "second": b[m], "agreement": compare(a[m], b[m])}
        for m in a
        if m in b and m != training.REFERENCE
    ]
