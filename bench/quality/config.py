"""The settings of a time-to-quality study: one frozen dataclass, validated once, with nanoGPT's
`train_shakespeare_char` defaults on a GPU and a smoke study on the CPU. Torch-free."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from bench.cases import checks
from bench.cases.case import DEVICES
from bench.ground import catalog

FP32 = catalog.reference()
"""The reference every mode is judged against."""
MODES_STUDIED = catalog.with_role("quality")
"""The modes a study trains when none are named (the mode table's `quality` role)."""


@dataclass(frozen=True)
class Anchor:
    """A published figure a study of this model, preset and data can be set beside."""

    loss: float
    mode: str
    source: str


ANCHORS = {
    ("gpt", "shakespeare-char", "shakespeare"): Anchor(
        loss=1.4697,
        mode=catalog.autocast_of("bfloat16"),
        source="nanoGPT's best validation loss for config/train_shakespeare_char.py (its README)",
    ),
}
"""(model, preset, data) -> the published result of the same model, mode and data."""

PER_DEVICE: dict[str, dict[str, object]] = {
    "cuda": {
        "preset": "shakespeare-char",
        "steps": 5000,
        "eval_every": 100,
        "batch_size": 64,
        "patience": 8,
        "workers": 0,
    },
    "cpu": {
        "preset": "shakespeare-tiny",
        "steps": 60,
        "eval_every": 20,
        "batch_size": 8,
        "warmup": 5,
        "heldout_limit": 32,
        "patience": 0,
        "workers": 1,
    },
}
"""A device's defaults. On a GPU a run stops 8 evaluations past its best (docs/quality.md, "When
a run stops") and runs train side by side, as many as the CPU's cores and the GPU's memory allow."""

_POSITIVE, _NON_NEGATIVE = {"check": checks.POSITIVE_INT}, {"check": checks.NON_NEGATIVE_INT}
_NUMBER = {"check": checks.POSITIVE_FINITE}
_SHARE = {"check": checks.Check("is not a number in [0, 1)", float, lambda v: 0 <= v < 1)}


@dataclass(frozen=True, kw_only=True)
class QualityConfig:
    device: str = field(metadata={"check": checks.choice(DEVICES), "cli": False})
    """`cuda` or `cpu`."""
    model: str = field(default="gpt", metadata={"check": checks.MODEL})
    """The workload: gpt, an hf: causal LM, a timm: or torchvision: image classifier."""
    preset: str = field(default="", metadata={"cli": False})
    """The workload's size preset (`--preset`)."""
    data: str = field(
        default="shakespeare", metadata={"check": checks.Check("is empty", str, bool)}
    )
    """The data: shakespeare (text), digits (images), or the path of a text file."""
    modes: tuple[str, ...] = field(
        default=MODES_STUDIED, metadata={"check": checks.choice(catalog.CARDS), "items": True}
    )
    """The modes trained (fp32, the reference, is always among them)."""
    seeds: tuple[int, ...] = field(default=(0, 1, 2), metadata={**_NON_NEGATIVE, "items": True})
    """Seeds: each gives the initial weights, the batches and the dropout of every mode."""
    steps: int = field(default=0, metadata=_POSITIVE)
    """The step budget of every run."""
    eval_every: int = field(default=0, metadata=_POSITIVE)
    """Held-out evaluation period, in steps (and at step 0 and the last step)."""
    batch_size: int = field(default=0, metadata=_POSITIVE)
    """Samples (sequences, images) per step."""
    heldout_limit: int = field(default=0, metadata=_NON_NEGATIVE)
    """Held-out samples (windows of text, images) evaluated, from the split's start; 0: all."""
    lr: float = field(default=1e-3, metadata=_NUMBER)
    """Peak learning rate."""
    min_lr: float = field(default=1e-4, metadata=_NUMBER)
    """Learning rate at the end of the cosine decay (the last step)."""
    warmup: int = field(default=100, metadata=_NON_NEGATIVE)
    """Linear warm-up steps."""
    beta2: float = field(default=0.99, metadata=_SHARE)
    """AdamW's beta2 (beta1 is 0.9)."""
    weight_decay: float = field(default=0.1, metadata={"check": checks.NON_NEGATIVE_FINITE})
    """AdamW's weight decay, on the weights of two or more dimensions (nanoGPT's groups)."""
    grad_clip: float = field(default=1.0, metadata={"check": checks.NON_NEGATIVE_FINITE})
    """Gradient-norm clip (0: none); a scaled mode unscales first."""
    patience: int = field(default=0, metadata=_NON_NEGATIVE)
    """Stop a run once this many held-out evaluations in a row bring no new best (0: train the
    whole budget); its best held-out loss is then the best before it stopped."""
    workers: int = field(default=1, metadata=_NON_NEGATIVE)
    """Runs trained side by side, each in a process of its own on the same device (0: on a GPU as
    many as the CPU's cores and the GPU's memory, from each mode's measured peak, allow; on the
    CPU one)."""
    timing_steps: int = field(default=50, metadata=_POSITIVE)
    """Timed steps per mode of the step-time measurement, taken before training, alone."""
    check_points: int = field(default=3, metadata=_NON_NEGATIVE)
    """GradScaler checks per scaled-fp16 run (evenly over the budget, step 0 first)."""
    max_seeds: int = field(default=0, metadata=_NON_NEGATIVE)
    """A sequential study's cap: after judging `--seeds`, add a seed to every mode still not
    known and look again, up to this many seeds (0: one look at `--seeds`); the error rate holds
    over the looks (`bench.verdicts.sequential`)."""

    def __post_init__(self) -> None:
        checks.fields(self, blame=lambda name: "--" + name.replace("_", "-"))
        if FP32 not in self.modes:
            raise ValueError(f"--modes {','.join(self.modes)} leaves out {FP32}, the reference")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"--seeds {','.join(map(str, self.seeds))} repeats a seed")
        if self.min_lr > self.lr:
            raise ValueError(f"--min-lr {self.min_lr:g} is above --lr {self.lr:g}")

    @classmethod
    def build(cls, device: str, options: dict[str, object]) -> QualityConfig:
        """The config of a new study: the options given, else the device's defaults (a model
        other than the gpt is given its own default preset by the job, `bench.quality.job`)."""
        return cls(device=device, **{**PER_DEVICE[device], **options})

    def record(self) -> dict[str, object]:
        """As env.json keeps it."""
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()
        }

    @classmethod
    def from_record(cls, record: dict[str, object]) -> QualityConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in record.items() if k in names}
        )

    @property
    def sequential(self) -> bool:
        """Whether the study adds seeds in looks (`max_seeds` above its first look's)."""
        return self.max_seeds > len(self.seeds)

    def seed_order(self) -> tuple[int, ...]:
        """The seeds in the order a sequential study's looks take them: `seeds`, then the next
        integers above them, up to `max_seeds` in all."""
        top, more = max(self.seeds), max(self.max_seeds - len(self.seeds), 0)
        return (*self.seeds, *range(top + 1, top + 1 + more))

    @property
    def anchor(self) -> Anchor | None:
        return ANCHORS.get((self.model, self.preset, self.data))
