"""The one resolver of `--model` (`RESOLVERS`, keyed by the name's prefix before a colon):
built-in workloads, zoo models (`hf:`, `timm:`, `torchvision:`) and a user's
`package.module:factory`; and the bridge from a torch-free case to its workload (`get`,
`size_of`, `make_case`)."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable

from bench.cases.case import Case
from bench.faults import UsageError
from bench.ground import cards
from bench.store import paths
from bench.workloads.base import Workload
from bench.workloads.zoo import hf, timm, torchvision


def carded(workload: Workload) -> Workload:
    """`workload`, a built-in one, once its presets, flags and sizes' names are checked against
    its card: a case checks them without torch, from the card (`bench.ground.cards`), and
    reads an old row's sizes with its names (`bench.store.schema`)."""
    card = cards.CARDS[workload.name]
    names = {workload.sizes(preset).names for preset in workload.presets}
    mine = (tuple(workload.presets), workload.flags(), names)
    if mine != (card.presets, card.flags(), {card.sizes}):
        raise ValueError(
            f"workload {workload.name}: presets, flags and sizes {mine} differ from its card's "
            "in bench.ground.cards"
        )
    return workload


BUILT_IN: dict[str, Workload] = {
    name: carded(importlib.import_module(card.module).WORKLOAD)
    for name, card in cards.CARDS.items()
}
"""The built-in workloads by name: each card of `bench.ground.cards` resolved to the
`WORKLOAD` its module defines from it."""


def _factory(spec: str) -> Workload:
    """The workload a user's `package.module:factory` returns; bad input is one line."""
    module_name, _, attr = spec.partition(":")
    # The module is the user's: looked up from the directory the command was run in (which
    # run_bench.sh leaves for the project's) as well as the project and the installed packages.
    user_dir = str(paths.from_user("."))
    if user_dir not in sys.path:
        sys.path.append(user_dir)
    try:
        module = importlib.import_module(module_name)  # the user's module, named by --model
    except (ImportError, AttributeError, ValueError) as exc:
        raise UsageError(f"--model {spec}: cannot import it ({type(exc).__name__}: {exc})") from exc
    factory = getattr(module, attr, None)
    if factory is None:  # the module imported: it is the factory that is missing
        raise UsageError(f"--model {spec}: module {module_name} has no factory {attr!r}")
    try:
        made = factory()
    except Exception as exc:  # the user's code: whatever it raises is named in one line
        raise UsageError(f"--model {spec}: the factory raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, Workload):
        raise UsageError(
            f"--model {spec}: the factory returned {type(made).__name__}, not a "
            "bench.workloads.base.Workload"
        )
    return made


ZOOS: dict[str, Callable[[str], Workload]] = dict(
    zip(cards.ZOOS, (hf.workload, timm.workload, torchvision.workload), strict=True)
)
"""The zoos by prefix: `PREFIX:NAME` is the workload `ZOOS[PREFIX](NAME)` makes
(`bench.workloads.zoo`); their prefixes are `cards.ZOOS`."""

BUILT_IN_KEY, SPEC_KEY = "", "module:factory"
RESOLVERS: dict[str, Callable[[str], Workload]] = {
    BUILT_IN_KEY: BUILT_IN.__getitem__,
    **ZOOS,
    SPEC_KEY: _factory,
}
"""How each kind of `--model` value becomes a workload, keyed by `kind(name)`: a name without a
colon (`BUILT_IN_KEY`) is a built-in workload, `PREFIX:NAME` a zoo's (called with NAME), any
other `package.module:factory` (`SPEC_KEY`) a user's factory (called with the whole spec)."""


def kind(name: str) -> str:
    """The key of `RESOLVERS` that resolves `name`: a name without a colon is a built-in one,
    `PREFIX:NAME` the resolver of PREFIX where the table has one, anything else a user's
    `package.module:factory` (a bad name is `get`'s to refuse)."""
    prefix, colon, rest = name.partition(":")
    if not colon:
        return BUILT_IN_KEY
    if prefix in RESOLVERS and prefix not in (BUILT_IN_KEY, SPEC_KEY) and rest:
        return prefix
    return SPEC_KEY


@functools.cache
def get(name: str) -> Workload:
    """The workload named `name`, by the resolver its kind names (`RESOLVERS`). Bad input is
    one line (`UsageError`) naming the spec and what is wrong."""
    key = kind(name)
    if key == BUILT_IN_KEY and name not in BUILT_IN:
        raise UsageError(
            f"--model {name}: not a workload; choose from {', '.join(BUILT_IN)}, "
            f"a zoo model ({', '.join(p + ':NAME' for p in ZOOS)}) or package.module:factory"
        )
    rest = name if key in (BUILT_IN_KEY, SPEC_KEY) else name.partition(":")[2]
    return RESOLVERS[key](rest)


def make_case(model: str, preset: str, **axes: object) -> Case:
    """A case of workload `model` at `preset`; `axes` are the other fields. The case carries
    the workload's name, preset and sizes as the workload gives them (`Workload.case`)."""
    return get(model).case(model, preset, **axes)
