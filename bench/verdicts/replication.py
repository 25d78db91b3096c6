"""Whether two studies of the same recipes, on disjoint seeds at one commit, agree: a verdict
contradicts another only where both cannot be true (docs/quality.md). Pure Python."""

from __future__ import annotations

from bench.verdicts import training as rules

AGREE, CONTRADICT, UNDECIDED = "agree", "contradict", "undecided in one"
_SIDE = {
    rules.LIKE: "inside",
    rules.WITHIN_WORSE: "inside",
    rules.WITHIN_BETTER: "inside",
    rules.WORSE: "outside",
    rules.BETTER: "outside",
}
_SIGN = {rules.WITHIN_WORSE: 1, rules.WORSE: 1, rules.WITHIN_BETTER: -1, rules.BETTER: -1}


def compare(a: str, b: str) -> str:
    """`AGREE`, `CONTRADICT` or `UNDECIDED` for one recipe's verdict words in two studies."""
    for word in (a, b):
        if word != rules.NOT_KNOWN and word not in _SIDE:
            raise ValueError(f"verdict {word!r} is not one of the training judge's")
    if rules.NOT_KNOWN in (a, b):
        return UNDECIDED
    if _SIDE[a] != _SIDE[b] or _SIGN.get(a, 0) * _SIGN.get(b, 0) < 0:
        return CONTRADICT
    return AGREE


def table(a: dict[str, str], b: dict[str, str]) -> list[dict[str, str]]:
    """One row per recipe in both: its verdict in each and whether they agree."""
    return [
        {"recipe": m, "first": a[m], "second": b[m], "agreement": compare(a[m], b[m])}
        for m in a
        if m in b and m != rules.REFERENCE
    ]
