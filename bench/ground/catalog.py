"""The precision modes as plain data, without torch: the one table every mode is defined in (a card
per mode: its kind, its words and colour, the reference and baselines). Nothing else branches on
a mode's name: a new mode is a new card here. The Adams' table is `bench.ground.optimizers`."""

from __future__ import annotations

import colorsys
import hashlib
from dataclasses import dataclass, field

LOW_DTYPES = ("float16", "bfloat16")
"""The dtypes a card's `low_dtype` may name for an autocast or a cast mode (a float8 mode's
is `float8`)."""

KINDS = {
    "float32": "float32 throughout (the reference, or TF32's 10-bit-mantissa matmuls)",
    "autocast": "autocast around the forward; float32 parameters, gradients and Adam state",
    "cast": "the parameters cast to the low dtype: gradients and Adam state in it too",
    "float8": "float8 Linears (torchao) inside bf16 autocast; float32 master weights",
}
"""A mode's kind -> what it does, in words. `cast` and `float8` change the model."""

ROLES = {
    "reference": "the float32 reference: numerics compare against it, speedups divide by it",
    "speedup": "a speedup column (`speedup_vs_<mode>`) divides by this mode's step time",
    "headline": "the mixed-precision mode a report leads with, and the harness-overhead check",
    "quality": "trained by a time-to-quality study when no --modes are given",
}
"""What a mode can be to the others."""


GRIDS = ("default", "full", "asked")
"""The grids a mode's card may name (`ModeCard.grid`), widest last but one."""


@dataclass(frozen=True, kw_only=True)
class ModeCard:
    name: str
    """The name on the command line and in every row."""
    label: str
    """The mode in a sentence of a report ("fp16 with GradScaler")."""
    kind: str
    """A key of `KINDS`."""
    colour: str
    """`#rrggbb`, the same in every figure. Families share a hue: greys and blue for float32,
    reds and orange for float16, greens and browns for bfloat16, purples for float8."""
    low_dtype: str | None = None
    """The low-precision dtype of the mode (`float16`, `bfloat16`), None for float32."""
    scale_loss: bool = False
    """GradScaler multiplies the loss before backward."""
    tf32: bool = False
    """TF32 for float32 matmuls."""
    stochastic_round: bool = False
    """Adam's update rounded stochastically into bf16 parameters (torchao's `_AdamW`)."""
    fp8_scaling: str | None = None
    """torchao's float8 scaling (`tensorwise`, `rowwise`) for a `float8` mode."""
    baseline: str | None = None
    """The mode this one departs from by one change, which reports read it
    against (fp16 without a scaler against fp16 with one; pure bf16 against bf16 autocast)."""
    roles: frozenset[str] = field(default_factory=frozenset)
    """Keys of `ROLES`."""
    grid: str = "default"
    """Which runs take it when no `--modes` are given (`GRIDS`): `default`, every run; `full`,
    a timing run's `--full` grid and every study (a variant of another mode, which the default
    run leaves out to stay within its time); `asked`, only a run that names it (a mode kept
    for the question it answers)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"mode {self.name!r}: unknown kind {self.kind!r}")
        if self.grid not in GRIDS:
            raise ValueError(f"mode {self.name!r}: unknown grid {self.grid!r}")
        unknown = set(self.roles) - set(ROLES)
        if unknown:
            raise ValueError(f"mode {self.name!r}: unknown role {sorted(unknown)[0]!r}")
        why = self._refused()
        if why is not None:
            raise ValueError(f"mode {self.name!r}: {why}")

    def _refused(self) -> str | None:
        """What of this mode torch (or torchao) would refuse when it runs, or None."""
        wants_low = self.kind in ("autocast", "cast")
        if wants_low and self.low_dtype not in LOW_DTYPES:
            return f"kind {self.kind} needs low_dtype, one of {', '.join(LOW_DTYPES)}"
        if not wants_low and self.kind != "float8" and self.low_dtype is not None:
            return f"kind {self.kind} runs no low dtype (low_dtype={self.low_dtype!r})"
        if (self.kind == "float8") != (self.fp8_scaling is not None):
            return "fp8_scaling goes with kind float8, and kind float8 needs one"
        if self.kind == "cast" and self.low_dtype == "float16" and self.scale_loss:
            # GradScaler.unscale_ raises "Attempting to unscale FP16 gradients": it keeps the
            # unscaled gradients in the parameters' dtype, where float16 would overflow again.
            return "GradScaler cannot unscale float16 gradients: a cast to float16 scales no loss"
        if self.stochastic_round and (self.kind, self.low_dtype) != ("cast", "bfloat16"):
            # torchao's _AdamW rounds stochastically into bfloat16 parameters only.
            return "stochastic_round needs kind cast with low_dtype bfloat16"
        if self.baseline is not None and self.baseline == self.name:
            return "a mode is not its own baseline"
        return None

    @property
    def changes_model(self) -> bool:
        """The mode changes the model itself (a cast of its parameters, float8 Linears), not
        only the context its forward runs in: "beyond autocast"."""
        return self.kind in ("cast", "float8")

    @property
    def autocast_dtype(self) -> str | None:
        """The dtype autocast runs in (bf16 for the float8 modes' other ops), or None."""
        if self.kind == "autocast":
            return self.low_dtype
        return "bfloat16" if self.kind == "float8" else None

    @property
    def param_dtype(self) -> str | None:
        """The dtype the parameters are cast to, None for float32 parameters."""
        return self.low_dtype if self.kind == "cast" else None


_CARDS = (
    ModeCard(
        name="fp32",
        label="float32",
        kind="float32",
        colour="#4d4d4d",
        roles=frozenset({"reference", "speedup", "quality"}),
    ),
    ModeCard(
        name="tf32",
        label="TF32 matmuls",
        kind="float32",
        colour="#1f77b4",
        tf32=True,
        baseline="fp32",
        roles=frozenset({"speedup", "quality"}),
    ),
    ModeCard(
        name="fp16-amp",
        label="fp16 with GradScaler",
        kind="autocast",
        colour="#d62728",
        low_dtype="float16",
        scale_loss=True,
        baseline="fp32",
        roles=frozenset({"quality"}),
    ),
    # The configuration the original question asks about: is the scaler needed at all?
    ModeCard(
        name="fp16-amp-noscale",
        label="fp16 without a scaler",
        kind="autocast",
        colour="#ff7f0e",
        low_dtype="float16",
        baseline="fp16-amp",
        roles=frozenset({"quality"}),
    ),
    # bfloat16 has float32's exponent range, so it is run without a scaler.
    ModeCard(
        name="bf16-amp",
        label="bf16 autocast",
        kind="autocast",
        colour="#2ca02c",
        low_dtype="bfloat16",
        baseline="fp32",
        roles=frozenset({"headline", "quality"}),
    ),
    # Beyond autocast. Pure bf16: parameters, gradients and Adam's state all bf16, no float32
    # master weights, no casts; half the optimizer bytes.
    ModeCard(
        name="bf16-pure",
        label="pure bf16",
        kind="cast",
        colour="#8c564b",
        low_dtype="bfloat16",
        baseline="bf16-amp",
        roles=frozenset({"quality"}),
    ),
    ModeCard(
        name="bf16-pure-sr",
        label="pure bf16 with stochastic rounding",
        kind="cast",
        colour="#bcbd22",
        low_dtype="bfloat16",
        stochastic_round=True,
        baseline="bf16-pure",
        grid="full",
    ),
    # Pure fp16: parameters, gradients and Adam's state in float16, no master weights and no
    # scaler (GradScaler cannot unscale float16 gradients). Small gradients flush to zero below
    # 2**-24 and Adam's eps (1e-8) rounds to zero in float16: asked for, to show why fp16 needs
    # autocast's float32 master weights, not in every run.
    ModeCard(
        name="fp16-pure",
        label="pure fp16",
        kind="cast",
        colour="#e7969c",
        low_dtype="float16",
        baseline="fp16-amp-noscale",
        grid="asked",
    ),
    # float8 Linears (torchao) inside bf16 autocast, float32 master weights: e4m3 for inputs and
    # weights, e5m2 for the output gradients, scales from each tensor's (or row's) amax.
    ModeCard(
        name="fp8-tensorwise",
        label="float8, tensorwise scales",
        kind="float8",
        colour="#9467bd",
        low_dtype="float8",
        fp8_scaling="tensorwise",
        baseline="bf16-amp",
        roles=frozenset({"quality"}),
    ),
    ModeCard(
        name="fp8-rowwise",
        label="float8, rowwise scales",
        kind="float8",
        colour="#e377c2",
        low_dtype="float8",
        fp8_scaling="rowwise",
        baseline="bf16-amp",
        grid="full",
    ),
)

CARDS: dict[str, ModeCard] = {c.name: c for c in _CARDS}
"""Every mode, in the order of reports and the default grid."""


def register(new: ModeCard) -> ModeCard:
    """Add a mode to the table (a test's, or a user's who imports this before the run): it is
    then a choice of `--modes` and runs like every row. A name the table has is refused."""
    if new.name in CARDS:
        raise ValueError(f"mode {new.name!r} is in the table already")
    CARDS[new.name] = new
    return new


def default_modes(*, full: bool = True) -> tuple[str, ...]:
    """The modes run when none are asked for, in table order: a timing run's default grid
    (`full=False`), or its `--full` grid, which every study runs."""
    grids = ("default", "full") if full else ("default",)
    return tuple(name for name, c in CARDS.items() if c.grid in grids)


def card(name: str) -> ModeCard | None:
    """The card of a mode, None for a name no card has (a row of a folder from other code)."""
    return CARDS.get(name)


def with_role(role: str) -> tuple[str, ...]:
    """The modes that play `role` (a key of `ROLES`), in table order."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; choose from {', '.join(ROLES)}")
    return tuple(name for name, c in CARDS.items() if role in c.roles)


def reference() -> str:
    """The float32 reference mode."""
    return with_role("reference")[0]


def headline() -> str:
    """The mode a report leads with."""
    return with_role("headline")[0]


def speedup_baselines() -> tuple[str, ...]:
    """The modes a `speedup_vs_<mode>` column divides by."""
    return with_role("speedup")


def fp16_pair() -> tuple[str, str]:
    """(fp16 autocast with GradScaler, the same without): the pair the question asks about."""
    fp16 = [c for c in CARDS.values() if c.kind == "autocast" and c.low_dtype == "float16"]
    scaled = next(c.name for c in fp16 if c.scale_loss)
    bare = next(c.name for c in fp16 if not c.scale_loss and c.baseline == scaled)
    return scaled, bare


def autocast_modes() -> dict[str, str]:
    """Each autocast mode that scales as its dtype is meant to (fp16 with a scaler, bf16 without)
    -> its dtype: the modes PyTorch's AMP documents."""
    scaled, _ = fp16_pair()
    return {
        c.name: c.low_dtype
        for c in CARDS.values()
        if c.kind == "autocast" and (c.low_dtype != "float16" or c.name == scaled)
    }


def tf32() -> str:
    """The float32 mode whose matmuls run in TF32."""
    return next(name for name, c in CARDS.items() if c.kind == "float32" and c.tf32)


def autocast_of(dtype: str) -> str:
    """The autocast mode of `dtype` (`bfloat16`, `float16`) that PyTorch's AMP documents."""
    return next(name for name, low in autocast_modes().items() if low == dtype)


def beyond_autocast() -> tuple[str, ...]:
    """The modes that change the model (a cast of its parameters, float8 Linears)."""
    return tuple(name for name, c in CARDS.items() if c.changes_model)


def label(name: str) -> str:
    """A mode in words; its name when no card has it."""
    c = CARDS.get(name)
    return c.label if c else name


def colour(name: str) -> str:
    """The mode's colour as `#rrggbb`: its card's, or, for a mode no card has, one derived from
    its name by a stable hash (not Python's `hash`, which changes between processes), so that
    it too keeps its colour from one figure and one run to the next."""
    c = CARDS.get(name)
    if c is not None:
        return c.colour
    digest = hashlib.sha256(name.encode()).digest()
    hue = digest[0] / 256
    # Mid saturation and value: readable on white, and distinct from the greys of fp32.
    saturation = 0.55 + 0.3 * digest[1] / 255
    value = 0.55 + 0.3 * digest[2] / 255
    r, g, b = colorsys.hsv_to_rgb(hue, saturation, value)
    return "#{:02x}{:02x}{:02x}".format(*(round(c * 255) for c in (r, g, b)))
