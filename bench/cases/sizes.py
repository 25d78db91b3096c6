"""A workload's own sizes, by name (the MLP's input, hidden and classes; a GPT's context, width and
vocabulary): what a case carries of its model's size. Names and numbers only, without torch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SEPARATOR = "x"
"""Between the values in a case id (`256x384x65`), as every id since the first runs."""
UNNAMED = ("size1", "size2", "size3")
"""The names of three sizes nothing names: a row of older code of a workload without a card (a
zoo's, a user's: its names are known only to its workload, with torch), and a user's model
that gives none (`bench.workloads.base.from_model`, whose ids have always spelled `1x1x1`)."""


@dataclass(frozen=True, order=True)
class Sizes:
    """The sizes in the workload's order. Two are equal when their values are: the values are
    what a case id spells, so a case of a folder whose rows did not record the names (older
    code's `input_size`, `hidden_size`, `num_classes`) is still the same case as today's; the
    names say what each value is."""

    values: tuple[int, ...]
    names: tuple[str, ...] = field(compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.values, tuple) or not isinstance(self.names, tuple):
            raise ValueError(f"sizes {self.values!r} named {self.names!r}: give two tuples")
        if len(self.values) != len(self.names) or not self.values:
            raise ValueError(f"sizes {self.values!r}: one name each, not {self.names!r}")
        for name, value in zip(self.names, self.values, strict=True):
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"size name {name!r} is not a name")
            # bool is an int to Python; a size of True is a mistake
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"size {name}={value!r} is not a positive integer")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"sizes named {self.names!r}: each name once")

    @classmethod
    def of(cls, named: Mapping[str, int] | None = None, /, **more: int) -> Sizes:
        """Sizes from names to values, in the order given: `Sizes.of(input=32, hidden=64)`, or
        `Sizes.of({"input": 32, ...})` (a row's JSON object)."""
        pairs = {**(named or {}), **more}
        return cls(values=tuple(pairs.values()), names=tuple(pairs))

    @classmethod
    def unnamed(cls, values: tuple[int, ...]) -> Sizes:
        """Three values whose names nothing records (`UNNAMED`)."""
        return cls(values=tuple(values), names=UNNAMED[: len(values)])

    def named(self) -> dict[str, int]:
        """Name -> value, in order: how a row and a folder's config record them."""
        return dict(zip(self.names, self.values, strict=True))

    def __getitem__(self, name: str) -> int:
        # By name only, and no __iter__: pandas keeps a Sizes in a cell as one value (an
        # iterable would be taken for a list of values).
        return self.named()[name]

    def __str__(self) -> str:
        """The values as a case id spells them: `256x384x65`."""
        return SEPARATOR.join(map(str, self.values))

    def words(self) -> str:
        """`context 256 × width 384 × vocab 65`, for a reader."""
        return " × ".join(f"{n} {v}" for n, v in zip(self.names, self.values, strict=True))
