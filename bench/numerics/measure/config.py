"""The settings of a numerics study (`NumericsConfig`: validated once, recorded in env.json,
rebuilt from it on resume), its defaults per device, and its jobs. Importable without torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.cases import checks
from bench.cases.case import DEVICES, REDUCTIONS, Case
from bench.cases.sizes import Sizes
from bench.ground import cards, catalog, optimizers
from bench.numerics.measure.defaults import COMMON, PER_DEVICE

if TYPE_CHECKING:
    from bench.workloads.base import Workload

KINDS = ("convergence", "census")

RECORD_BEFORE: dict[str, object] = {
    "trace_every": 0,
    "extended_modes": (),
    "extended_steps": 0,
    "model": cards.DEFAULT,
}
"""The settings a study recorded before they existed ran as these (to resume such a folder)."""


def _workload(model: str) -> Workload:
    # Deferred: the registry imports torch, and `numerics --help` makes its options from this
    # module's fields without it.
    from bench.workloads.registry import get

    return get(model)


def defaults(device: str, model: str = cards.DEFAULT) -> dict[str, object]:
    """The settings the user did not give, by field name, for workload `model` on `device`."""
    checks.choice(DEVICES)(option("device"), device)
    workload = _workload(model)
    own = dict(workload.numerics.get(device, {}))
    preset = {"model": model, "preset": workload.default_preset[device]}
    # Every mode that can run here (the float8 ones need a float8 GPU and torchao).
    return {**PER_DEVICE[device], **own, **preset, "modes": supported_modes(device), **COMMON}


def supported_modes(device: str) -> tuple[str, ...]:
    """The modes of the default grid whose mode can run on `device` here."""
    from bench.modes.mode import MODES  # torch: only a new study's defaults need it

    return tuple(
        name for name in catalog.default_modes() if MODES[name].unsupported_reason(device) is None
    )


def option(name: str) -> str:
    """A setting as `python -m bench numerics` takes it: `eval_every` is `--eval-every`."""
    return "--" + name.replace("_", "-")


def _check(ok: bool, name: str, value: object, what: str) -> None:
    if not ok:
        raise checks.refuse(option(name), value, what)


def _setting(check: checks.Check, **more: object) -> dict[str, object]:
    return {"check": check, **more}


_POSITIVE, _NON_NEGATIVE = _setting(checks.POSITIVE_INT), _setting(checks.NON_NEGATIVE_INT)
_FINITE = _setting(checks.POSITIVE_FINITE)
_MODES = _setting(checks.choice(catalog.CARDS), items=True)


@dataclass(frozen=True, kw_only=True)
class Job:
    """One unit of work for a worker (`jobs.run_job`): a convergence run or a census trajectory."""

    kind: str
    """A key of `KINDS`."""
    case: Case
    steps: int
    """Training steps of a convergence run (0 for a census trajectory: it stops at its last one)."""
    noise: float = 2.0
    eval_every: int = 100
    heldout: int = 8192
    trace_every: int = 0
    """Trace period of a convergence run (`training.traced_step`); 0: no traces."""
    checkpoints: tuple[int, ...] = ()
    histogram: bool = False
    """Whether a census trajectory also records the activation-gradient histogram."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown job kind {self.kind!r}; choose from {', '.join(KINDS)}")

    @property
    def key(self) -> str:
        """The job's name in a study's `jobs/` folder; unique within one study."""
        c = self.case
        return f"{self.kind}_{c.mode}_b{c.batch_size}_s{c.seed}_{self.steps}"

    @property
    def label(self) -> str:
        c = self.case
        return f"{self.kind} {c.mode} b{c.batch_size} s{c.seed} ({self.steps} steps)"

    @property
    def cost(self) -> float:
        """Rough relative cost, to hand the longest jobs out first. Read from the mode's card:
        the parent orders the jobs before any worker resolves its case."""
        card = catalog.card(self.case.mode)
        # float32 matmuls run without tensor cores (about 8× a low-precision step); TF32's use them.
        speed = (1.5 if card.tf32 else 8.0) if card and card.kind == "float32" else 1.0
        return self.steps * self.case.batch_size * speed


@dataclass(frozen=True, kw_only=True)
class NumericsConfig:
    device: str = field(metadata={"check": checks.choice(DEVICES), "cli": False})
    """`cuda` or `cpu`."""
    model: str = field(metadata={"check": checks.MODEL, "option": "--model"})
    """The workload the study trains: mlp (the default), gpt, resnet50 (torchvision's ResNet-50;
    the [vision] extra), or your own as package.module:factory (docs/own-model.md)."""
    preset: str = field(metadata={"check": checks.Check("is not a name", str, bool), "cli": False})
    """The workload's size preset (`--preset`)."""
    size: object = field(metadata={"cli": False})
    """The workload's size object for the preset (the MLP's `ModelSize`)."""
    modes: tuple[str, ...] = field(metadata=_MODES)
    """Modes of the convergence runs (keys of `bench.modes.mode.MODES`); the audit covers every
    mode, the census fp16 with and without a scaler and bf16."""
    census_batch_sizes: tuple[int, ...] = field(metadata={**_POSITIVE, "items": True})
    """One census trajectory (fp16 + GradScaler training) per batch size."""
    checkpoints: tuple[int, ...] = field(metadata={**_NON_NEGATIVE, "items": True})
    """Steps of each census trajectory at which every gradient is compared with fp32's."""
    histogram_batch: int = field(metadata=_POSITIVE)
    """The census batch size whose trajectory also records the activation-gradient histogram."""
    conv_batch_sizes: tuple[int, ...] = field(metadata={**_POSITIVE, "items": True})
    """Batch sizes of the convergence runs."""
    seeds: tuple[int, ...] = field(metadata={**_NON_NEGATIVE, "items": True})
    """Seeds of the convergence runs (the census runs the first): weights and batches."""
    steps: int = field(metadata=_POSITIVE)
    """Training steps of every convergence run; the summary compares runs at this step."""
    long_steps: int = field(metadata=_NON_NEGATIVE)
    """One fp16-amp run (first batch size and seed) goes this long if it exceeds `steps`."""
    eval_every: int = field(metadata=_POSITIVE)
    """Held-out evaluation period, in steps; `steps` is a multiple of it."""
    heldout: int = field(metadata=_POSITIVE)
    """Held-out samples."""
    trace_every: int = field(metadata=_NON_NEGATIVE)
    """Trace period of the convergence runs, in steps (`training.traced_step`): per parameter
    gradient zeros, Adam's state, the update's size and the loss scale; 0 turns it off."""
    extended_modes: tuple[str, ...] = field(metadata={**_MODES, "items": "maybe none"})
    """Modes (of `modes`) whose every convergence run, at every batch size and seed, goes
    `extended_steps` steps: the long horizons a divergence question needs. Empty: none."""
    extended_steps: int = field(metadata=_NON_NEGATIVE)
    """Steps of the runs of `extended_modes`, if more than `steps`; 0 with no extended modes."""
    noise: float = field(metadata=_FINITE)
    """Noise of the task (`bench.workloads.tasks`), e.g. the MLP's prototype noise."""
    optimizer: str = field(
        metadata=_setting(checks.choice(optimizers.OPTIMIZERS), aliases=("--optimizers",))
    )
    """Adam implementation, a key of `bench.ground.optimizers.OPTIMIZERS`."""
    lr: float = field(metadata=_FINITE)
    """Adam's learning rate."""
    loss_mult: float = field(metadata=_FINITE)
    """Stress: multiply the loss (1/k as in gradient accumulation over k micro-batches)."""
    reduction: str = field(metadata=_setting(checks.choice(REDUCTIONS)))
    """Stress: CrossEntropyLoss reduction, `mean` or `sum`."""
    init_scale: float = field(metadata=_FINITE)
    """Stress: multiply every initial weight and bias."""
    workers: int = field(metadata=_POSITIVE)
    """Worker processes, one per GPU (1 on the CPU)."""

    def __post_init__(self) -> None:
        workload = _workload(self.model)
        if workload.free_sizes:  # any sizes: each must be a size (Sizes refuses one that is not)
            workload.sizes_at(self.size)
        checks.fields(self, option)
        _check(
            isinstance(self.extended_modes, tuple),
            "extended_modes",
            self.extended_modes,
            "is not a tuple",
        )
        for mode in self.extended_modes:
            what = f"is not one of {option('modes')} {checks.shown(self.modes)}"
            _check(mode in self.modes, "extended_modes", mode, what)
        _check(
            not self.extended_modes or self.extended_steps > 0,
            "extended_steps",
            self.extended_steps,
            f"must be positive with {option('extended_modes')} {checks.shown(self.extended_modes)}",
        )
        _check(
            self.histogram_batch in self.census_batch_sizes,
            "histogram_batch",
            self.histogram_batch,
            f"is not one of {option('census_batch_sizes')} {checks.shown(self.census_batch_sizes)}",
        )
        _check(
            self.steps % self.eval_every == 0,
            "steps",
            self.steps,
            f"is not a multiple of {option('eval_every')} {self.eval_every}",
        )

    @classmethod
    def build(
        cls, *, device: str, options: dict[str, object], workers: int | None
    ) -> NumericsConfig:
        """A new study's settings: `options` over `defaults`; `workers` None: every GPU."""
        model = str(options.get("model", cards.DEFAULT))
        checks.MODEL("--model", model)
        workload = _workload(model)  # a user's factory is imported here: its errors are one line
        given = defaults(device, model)
        unknown = sorted(set(options) - set(given))
        if unknown:
            raise ValueError(f"unknown numerics setting {unknown[0]!r} ({option(unknown[0])})")
        settings = {**given, **options}
        if "histogram_batch" not in options and "census_batch_sizes" in options:
            # The default histogram batch if it is one of the census sizes given, else the last one.
            sizes = tuple(settings["census_batch_sizes"])
            if sizes and settings["histogram_batch"] not in sizes:
                settings["histogram_batch"] = sizes[-1]
        checks.choice(workload.presets)(option("preset"), settings["preset"])
        for name, value in settings.items():
            if isinstance(value, (list, tuple)):
                settings[name] = tuple(sorted(value) if name == "checkpoints" else value)
        return cls(
            device=device,
            size=workload.size(str(settings["preset"])),
            workers=resolve_workers(device, workers),
            **settings,
        )

    def record(self) -> dict[str, object]:
        """The settings as env.json keeps them (a free-sized workload's sizes, the task)."""
        workload = _workload(self.model)
        flat = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del flat["size"]
        # Describing a task builds nothing: its tables are made when it first samples.
        task = workload.make_task(self.size, self.seeds[0], self.noise, "cpu")
        flat["task"] = task.description
        if workload.free_sizes:
            return {**flat, "sizes": workload.sizes_at(self.size).named()}
        return flat

    @classmethod
    def from_record(cls, record: dict, *, workers: int) -> NumericsConfig:
        """The settings of a study from its env.json, to resume it (possibly on other GPUs)."""
        # A folder older than a setting ran without it: no traces, no extended runs, the MLP.
        record = {**RECORD_BEFORE, **record}
        workload = _workload(record["model"])
        if workload.free_sizes:
            size = workload.from_sizes(Sizes.of(record["sizes"]))
            record.setdefault("preset", preset_of(workload, size))
        else:
            size = workload.size(record["preset"])
        names = [f.name for f in dataclasses.fields(cls) if f.name not in ("size", "workers")]
        kept = {n: tuple(record[n]) if isinstance(record[n], list) else record[n] for n in names}
        return cls(size=size, workers=workers, **kept)

    def case(self, mode: str, batch_size: int, seed: int) -> Case:
        # The axes every case of the study shares (its stress settings among them).
        shared = ("optimizer", "device", "lr", "loss_mult", "reduction", "init_scale")
        axes = {name: getattr(self, name) for name in shared}
        workload = _workload(self.model)
        # A workload whose size may be any (the MLP's) gives its case this study's sizes.
        sizes = workload.sizes_at(self.size) if workload.free_sizes else None
        return workload.case(
            self.model, self.preset, sizes, mode=mode, batch_size=batch_size, seed=seed, **axes
        )

    def audit_case(self) -> Case:
        """The case the dtype audit runs every mode on: the smallest census batch, first seed."""
        return self.case(catalog.reference(), min(self.census_batch_sizes), self.seeds[0])

    def jobs(self) -> list[Job]:
        """The census trajectories, then the convergence runs (one goes `long_steps`)."""
        scaled_fp16 = catalog.fp16_pair()[0]
        out = [
            Job(
                kind="census",
                case=self.case(scaled_fp16, b, self.seeds[0]),
                steps=0,
                noise=self.noise,
                checkpoints=self.checkpoints,
                histogram=b == self.histogram_batch,
            )
            for b in self.census_batch_sizes
        ]
        for b in self.conv_batch_sizes:
            for mode in self.modes:
                for seed in self.seeds:
                    first = (scaled_fp16, self.conv_batch_sizes[0], self.seeds[0])
                    long = (mode, b, seed) == first
                    steps = max(self.steps, self.long_steps) if long else self.steps
                    if mode in self.extended_modes:
                        steps = max(steps, self.extended_steps)
                    out.append(
                        Job(
                            kind="convergence",
                            case=self.case(mode, b, seed),
                            steps=steps,
                            noise=self.noise,
                            eval_every=self.eval_every,
                            heldout=self.heldout,
                            trace_every=self.trace_every,
                        )
                    )
        return out


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_workers(device: str, workers: int | None) -> int:
    """Worker processes: one per GPU (every visible one when `workers` is None); one on a CPU."""
    if workers is not None:
        checks.POSITIVE_INT(option("workers"), workers)
    if device != "cuda":
        if workers not in (None, 1):
            raise ValueError(f"{option('workers')} {workers}: a CPU study runs in one process")
        return 1
    visible = gpu_count()
    if workers is None:
        return max(1, visible)
    if workers > visible:
        raise ValueError(f"{option('workers')} {workers}: only {visible} GPU(s) visible")
    return workers


def preset_of(workload: Workload, size: object) -> str:
    """The name of `workload`'s preset of size `size`; `custom` for sizes no preset has."""
    named = [name for name, preset in workload.presets.items() if preset == size]
    return named[0] if named else "custom"


def short_config(
    *,
    device: str,
    size: object,
    modes: list[str],
    batch_sizes: list[int],
    optimizer: str,
    model: str = cards.DEFAULT,
) -> NumericsConfig:
    """The short study `run --numerics` runs in the timing process (to show what it leaves)."""
    return NumericsConfig(
        device=device,
        model=model,
        preset=preset_of(_workload(model), size),
        size=size,
        modes=tuple(modes),
        census_batch_sizes=tuple(batch_sizes),
        checkpoints=(0, 100),
        histogram_batch=min(batch_sizes),
        conv_batch_sizes=(min(batch_sizes),),
        seeds=(0,),
        steps=200,
        long_steps=0,
        eval_every=50,
        heldout=8192 if device == "cuda" else 256,
        trace_every=5 if device == "cuda" else 2,
        workers=1,
        **{**COMMON, "optimizer": optimizer},  # the noise, lr and stress of every study
    )
