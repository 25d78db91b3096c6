"""The mode a user's run trains under (the driver's `AMPBENCH_MODE`, or what the run's own
settings show, named by the mode table), and the torch optimizer inside a wrapper (`unwrap`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from bench.ground import catalog

MODE, SEED, OUT = "AMPBENCH_MODE", "AMPBENCH_SEED", "AMPBENCH_OUT"
"""The environment the driver (`ampbench sweep`) sets for each run of a user's script: the mode
to apply, the seed, and the folder the probe writes."""
OLD_MODE = "AMPBENCH_RECIPE"
"""The mode's variable before it was `AMPBENCH_MODE`: the driver sets both for now, and `asked`
reads it where the new one is absent, so a script that reads the old name still works."""

SUPPORTED_KINDS = ("float32", "autocast")
"""The kinds of mode a user's loop can take by a switch (autocast, a scaler, TF32). A mode
that changes the model itself (a cast of the parameters, float8 Linears) needs the model built
for it: the driver reports it `unsupported`."""


@dataclass(frozen=True)
class Settings:
    """What a step actually ran under, read on the host at the first forward."""

    autocast_dtype: torch.dtype | None
    scaler: bool
    tf32: bool
    param_dtype: torch.dtype

    def mode(self) -> str:
        """The mode whose card these settings are, or `custom` where none is."""
        names = {torch.float16: "float16", torch.bfloat16: "bfloat16"}
        low = names.get(self.param_dtype)
        if low is not None:  # the parameters themselves are cast: a `cast` card
            mine = ("cast", low, self.scaler, False, False)
        elif self.autocast_dtype is not None:
            mine = ("autocast", names.get(self.autocast_dtype), self.scaler, False, False)
        else:
            mine = ("float32", None, self.scaler, self.tf32, False)
        for card in catalog.CARDS.values():
            theirs = (card.kind, card.low_dtype, card.scale_loss, card.tf32, card.stochastic_round)
            if theirs == mine:
                return card.name
        return "custom"


def read_settings(device: str, param_dtype: torch.dtype, scaler: bool) -> Settings:
    """The settings in force now (called inside the forward, where autocast is on if anywhere)."""
    on = torch.is_autocast_enabled(device)
    dtype = torch.get_autocast_dtype(device) if on else None
    tf32 = device == "cuda" and bool(torch.backends.cuda.matmul.allow_tf32)
    return Settings(autocast_dtype=dtype, scaler=scaler, tf32=tf32, param_dtype=param_dtype)


def variable() -> str:
    """The variable the mode is read from: `MODE`, or `OLD_MODE` where only that one is set
    (what a message about the mode asked for names)."""
    return OLD_MODE if not os.environ.get(MODE) and os.environ.get(OLD_MODE) else MODE


def asked() -> str | None:
    """The mode the driver asked for, checked against the table; None outside the driver."""
    name = os.environ.get(variable()) or None
    if name is None:
        return None
    card = catalog.card(name)
    if card is None:
        raise ValueError(
            f"{variable()}={name!r} is not a mode; choose from {', '.join(catalog.CARDS)}"
        )
    return name


def seed(default: int = 0) -> int:
    """`AMPBENCH_SEED` as an integer (the driver's), else `default`."""
    text = os.environ.get(SEED)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{SEED}={text!r} is not an integer") from None


def unsupported_reason(name: str) -> str | None:
    """Why mode `name` cannot be applied to a user's run by a switch, or None."""
    card = catalog.card(name)
    if card is None:
        return f"{name!r} is not a mode"
    if card.kind not in SUPPORTED_KINDS:
        return (
            f"{name} changes the model ({catalog.KINDS[card.kind]}): a user's script has no "
            "switch for it"
        )
    return None


def sets_tf32(name: str) -> bool:
    """Whether the probe sets TF32 for mode `name`: only a float32 mode, where TF32 is the mode
    (fp32 off, tf32 on); an autocast mode keeps the script's own setting."""
    card = catalog.card(name)
    return card is not None and card.kind == "float32"


def unwrap(optimizer: object) -> torch.optim.Optimizer:
    """The torch optimizer inside a framework's wrapper (accelerate's `AcceleratedOptimizer`,
    itself an Optimizer subclass that never ran Optimizer's constructor, and Lightning's
    `LightningOptimizer` keep it as `.optimizer`): its step hooks are the ones that fire."""
    inner = optimizer
    for _ in range(4):
        nested = getattr(inner, "optimizer", None)
        if not isinstance(nested, torch.optim.Optimizer):
            break
        inner = nested
    if not isinstance(inner, torch.optim.Optimizer):
        raise ValueError(f"optimizer: {type(optimizer).__name__} is not a torch.optim.Optimizer")
    return inner
