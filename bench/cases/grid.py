"""The grid of a timing run (`RunConfig`): the values of each swept axis of `Case`, the model size
and how each case is measured; and the index's grid line. Importable without torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from bench.cases import case, checks
from bench.cases.case import Case
from bench.cases.sizes import Sizes
from bench.ground import axes, cards, catalog, optimizers

DEFAULT_BATCH_SIZES = (256, 1024, 4096)
"""Batch sizes (per GPU) of a timing run when `--batch-sizes` is not given."""

DEFAULT_REPEATS = 3
"""The most timed windows per case when `--repeats` is not given: from `DEFAULT_MIN_REPEATS`
up to this, a case stops once its windows agree (`bench.measure.adaptive`). Two runs of the
same code differ by a few percent on an H200 (results/sessions/NOTES.md, fifteenth session):
more windows of one run do not narrow that, which only rounds measure (`run --rounds`, `ab`)."""
DEFAULT_MIN_REPEATS = 2
"""The fewest timed windows per case when neither `--repeats` nor `--min-repeats` is given: a
case whose first two windows agree stops there (`bench.measure.adaptive`, whose stopping rule
takes it as its floor, and whose report prints it). Two: `compare` needs two windows of a run to
see the drift between them at all. The one copy of this number: `bench.measure` imports it."""
DESCRIBED_FIRST = ("mode", "batch_size", "optimizer")
"""The axes the index's grid line always shows, in the order of its first rows; every other
swept axis follows, in field order, where its values are not just its default."""
GRID_WIDTH = 60
"""Most characters of a grid line; a longer one shows counts instead of values."""


def new_run_default(name: str, device: str, world_size: int = 1, *, full: bool = False) -> tuple:
    """The values a new run on `device` sweeps axis `name` over when none are given: every
    choice of an axis without a default, else the field's default alone, but where a run's
    defaults are wider (the CPU's modes are narrowed further by `bench.jobs.configs.run_config`,
    which needs torch to ask each mode). `full`: the `--full` grid's modes."""
    wider = {
        "mode": catalog.default_modes(full=full),
        "optimizer": optimizers.default_optimizers(),
        "batch_size": DEFAULT_BATCH_SIZES,
        "variant": axes.default_variants() if device == "cuda" else ("eager",),
        "parallel": tuple(axes.PARALLELS) if world_size > 1 else ("none",),
    }
    if name in wider:
        return tuple(wider[name])
    f = _field(name)
    if f.default is not dataclasses.MISSING:
        return (f.default,)
    return tuple(f.metadata["check"].choices or ())


def _field(name: str) -> dataclasses.Field:
    return next(f for f in dataclasses.fields(case.Case) if f.name == name)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """The grid of a timing session, as env.json keeps it (`config`) for --resume: the values of
    every swept axis of `Case` (`case.swept()`), the model size, and how each case is measured.
    The record keeps each axis's values under its plural name (`modes`, `batch_sizes`), as the
    folders made before this class existed do."""

    device: str = field(metadata={"check": checks.choice(case.DEVICES), "cli": False})
    preset: str = field(metadata={"check": checks.Check("is not a name", str, bool), "cli": False})
    model: str = field(default=cards.DEFAULT, metadata={"check": checks.MODEL, "option": "--model"})
    """The workload: mlp (the question's MLP), gpt (a GPT-style transformer, batch sizes in
    sequences), resnet50 (torchvision's ResNet-50, channels-last; the [vision] extra), a zoo
    model by name (hf:NAME[:TASK], timm:NAME, torchvision:NAME; the [zoo] extra), or your own as
    package.module:factory (docs/own-model.md)."""
    sizes: Sizes = field(metadata={"check": case.SIZES, "cli": False})
    """The workload's sizes, by name: its preset's, or (a workload whose sizes are free, the
    MLP's) those its card's options gave (`--input-size`, ...: `bench.cli.run`)."""
    axes: dict[str, tuple] = field(default_factory=dict, metadata={"cli": False})
    """Field name of `Case` -> the values swept; an axis left out takes `new_run_default`."""
    steps: int = field(default=15, metadata={"check": checks.POSITIVE_INT})
    """Timed steps per window (15: a case's median, p10 and p90 over its 30 or more steps, with
    the first step of each window, slower as it waits for the host, above its p90)."""
    warmup: int = field(default=5, metadata={"check": checks.NON_NEGATIVE_INT})
    """Untimed steps per case."""
    repeats: int = field(
        default=1, metadata={"check": checks.POSITIVE_INT, "new_run": DEFAULT_REPEATS}
    )
    """The most timed windows of --steps steps per case, after one warm-up (see --min-repeats);
    compare weighs the spread between them. A folder recorded before the field resumes with 1,
    as it was measured."""
    min_repeats: int = field(
        default=0, metadata={"check": checks.NON_NEGATIVE_INT, "new_run": DEFAULT_MIN_REPEATS}
    )
    """The fewest timed windows per case: from it up to --repeats, a case stops once its windows
    agree (docs/methodology.md, "When a case stops"). Given --repeats alone: that many windows,
    every case. A run of several ranks or rounds times exactly --repeats."""
    rounds: int = field(default=1, metadata={"check": checks.POSITIVE_INT})
    """Passes over the grid, each case's windows interleaved with the others' (as asv's rounds),
    so that drift over the run spreads over every case; a one-process run's option."""
    seed: int = field(default=0, metadata={"check": checks.NON_NEGATIVE_INT})
    """Seed for weights and data."""
    overhead: bool = field(default=True, metadata={"option": "--no-overhead"})
    """Measure the harness against a bare loop (`--no-overhead` skips it; on the CPU it runs
    for the MLP alone)."""
    full: bool = False
    """The full grid: with the modes that vary another one (bf16-pure-sr, fp8-rowwise), which
    the default run leaves out to answer the question within its time (docs/methodology.md,
    "The default grid"). Modes given with --modes are run as given."""
    numerics: bool = False
    """First run a short numerics study in this process into RUN/numerics/ (outside every
    timed region)."""
    world_size: int = field(default=1, metadata={"check": checks.POSITIVE_INT, "option": "--gpus"})
    """Ranks: N > 1 relaunches the run through torchrun, one process per GPU with NCCL (at most
    the GPUs visible); on the CPU, N gloo processes (for tests, not speed; at most the CPU
    cores, unless --oversubscribe). A resumed run must have as many."""
    left_out: dict[str, str] = field(default_factory=dict, metadata={"cli": False})
    """Modes a CPU run's default grid left out, each with why it cannot run there (float8 needs
    a CUDA GPU; torchao's modes need torchao). A mode asked for with --modes is always in the
    grid, and a row (`unsupported`, with the reason, where it cannot run)."""

    def __post_init__(self) -> None:
        checks.fields(self)
        if self.model in cards.CARDS:
            checks.choice(cards.CARDS[self.model].presets)("--preset", self.preset)
        card = cards.card(self.model)
        if self.numerics and not (card and card.short_numerics):
            short = [name for name, c in cards.CARDS.items() if c.short_numerics]
            raise ValueError(
                f"--numerics: the short study is {', '.join(short)}'s; drop it for --model "
                f"{self.model}"
            )
        if self.world_size > 1 and self.numerics:
            raise ValueError("--numerics runs in a one-process run; drop it or --gpus")
        if self.world_size > 1 and self.rounds > 1:
            raise ValueError("--rounds is for a one-process run; a run of several ranks has 1")
        if self.min_repeats > self.repeats:
            raise ValueError(
                f"--min-repeats {self.min_repeats} is above --repeats {self.repeats}, the most "
                "windows a case has"
            )
        swept = case.swept()
        unknown = sorted(set(self.axes) - set(swept))
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a swept axis of a case")
        for name, how in swept.items():
            values = tuple(
                self.axes.get(name) or new_run_default(name, self.device, full=self.full)
            )
            self.axes[name] = checks.items(how.plural, values)
        self.cases()  # every case validates its own fields

    def __getattr__(self, name: str) -> tuple:
        """An axis's values by its plural name: `cfg.modes`, `cfg.batch_sizes`."""
        if name != "axes":
            for axis, how in case.swept().items():
                if how.plural == name:
                    return self.axes[axis]
        raise AttributeError(name)

    @classmethod
    def from_record(cls, record: dict) -> RunConfig:
        """The grid of env.json's `config`: each axis under its plural name; an axis newer than
        the record takes its default (one value: the field's default)."""
        names = {f.name for f in dataclasses.fields(cls)} - {"axes"}
        kept = {k: tuple(v) if isinstance(v, list) else v for k, v in record.items() if k in names}
        # A record of older code is in this shape once read (`bench.store.schema.migrate_env`).
        kept["sizes"] = Sizes.of(record["sizes"])
        axes = {}
        for name, how in case.swept().items():
            if how.plural in record:
                axes[name] = tuple(record[how.plural])
            elif _field(name).default is not dataclasses.MISSING:
                axes[name] = (_field(name).default,)
        return cls(axes=axes, **kept)

    def record(self) -> dict[str, object]:
        """The grid as env.json keeps it: flat, each axis's values under its plural name."""
        flat = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del flat["axes"]
        flat["sizes"] = self.sizes.named()
        swept = case.swept()
        return {**{swept[n].plural: list(v) for n, v in self.axes.items()}, **flat}

    def cases(self) -> list[Case]:
        # A workload whose sizes are its cases' own (the MLP's) leaves their preset empty (their
        # ids are those of every run before workloads); another's carry its preset.
        card = cards.card(self.model)
        free = card is not None and card.free_sizes
        named = {"model": self.model, "preset": "" if free else self.preset}
        return case.sweep(
            self.axes,
            sizes=self.sizes,
            **named,
            device=self.device,
            seed=self.seed,
            warmup=self.warmup,
            steps=self.steps,
            repeats=self.repeats,
            # Every rank, and every round, times as many windows: ranks step together, and a
            # case's windows split evenly into its rounds (`bench.verdicts.sides`).
            min_repeats=self.min_repeats if self.world_size == 1 and self.rounds == 1 else 0,
        )


def describe(record: dict) -> str:
    """A timing run's grid in one line of at most GRID_WIDTH characters, from its env.json
    `config`, as the index shows it: `fp32,bf16-amp × batch 256,1024 × fused`. Each swept axis
    of `Case` is its values or, where the line is too long, its count (`2 modes`, a batch range);
    the longest gives way first, and a line that still does not fit is cut with `…`."""
    swept = case.swept()
    shown = [n for n in DESCRIBED_FIRST if n in swept]
    for name in swept:
        default = _field(name).default
        if name not in shown and record.get(swept[name].plural, [default]) != [default]:
            shown.append(name)
    forms: list[tuple[str, str]] = []  # (values, count) of each axis with values
    for name in shown:
        values, noun = list(record.get(swept[name].plural) or []), swept[name].noun
        if not values:
            continue  # a folder older than the axis
        if _field(name).type in ("int", int):  # numbers: `batch 256,1024`, a range for many
            text = f"{noun} {','.join(map(str, values))}"
            count = f"{noun} {min(values)}–{max(values)}" if len(values) > 2 else text
        else:
            text = ",".join(map(str, values))
            count = f"{len(values)} {noun}s" if len(values) > 1 else text
        forms.append((text, count))
    return fit(forms)


def fit(forms: list[tuple[str, str]], extras: tuple[str, ...] = ()) -> str:
    """`a × b × c, extra` from each axis's (values, count): the longest axis still shown by its
    values gives way to its count until the line fits GRID_WIDTH; then it is cut with `…`."""
    shown = [values for values, _ in forms]

    def text() -> str:
        return ", ".join([" × ".join(shown), *extras])

    while len(text()) > GRID_WIDTH:
        longer = [i for i, (_, count) in enumerate(forms) if len(count) < len(shown[i])]
        if not longer:
            break
        i = max(longer, key=lambda i: len(shown[i]))
        shown[i] = forms[i][1]
    line = text()
    return line if len(line) <= GRID_WIDTH else line[: GRID_WIDTH - 1] + "…"
