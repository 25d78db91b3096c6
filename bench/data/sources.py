"""The data sources by name (`get`: `shakespeare`, `digits`, or a text file's path), each with
its shape (`DataShape`), training batches and a fixed held-out split that every mode and seed
sees; bad input is one line naming the file (`UsageError`)."""

from __future__ import annotations

import functools
import gzip
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from bench.faults import UsageError

FILES = Path(__file__).resolve().parent / "files"
TEXT_TRAIN_SHARE = 0.9
"""nanoGPT's split of a text: the first 90% trains, the last 10% is held out."""
IMAGE_HELDOUT_SHARE = 0.2


@dataclass(frozen=True)
class DataShape:
    """What a model must be sized to for a source: its task and the sizes of its head."""

    task: str
    """`causal-lm` or `image-cls` (`bench.workloads.heads.TASKS`)."""
    vocab: int = 0
    classes: int = 0


Batch = tuple[torch.Tensor, torch.Tensor]
"""(inputs, targets), both on the device: the one batch type of ampbench (a workload's synthetic
batch, a task's, a data source's)."""


def generator(device: torch.device | str, seed: int, stream: int | None = None) -> torch.Generator:
    """The one seed mixing of ampbench: a generator on `device` seeded by `seed` alone (a case's
    synthetic batch, its weights), or by (`seed`, `stream`) for step `stream` of a training run
    (a task's batches, the quality study's), so that step k's batch is the same in every mode
    and run and no two steps share one."""
    mixed = seed if stream is None else seed * 1_000_003 + stream + 1
    return torch.Generator(device=device).manual_seed(mixed)


@dataclass(frozen=True)
class CharText:
    """A text file read as characters; the vocabulary is the text's own characters, sorted (as
    nanoGPT's `shakespeare_char/prepare.py` makes it)."""

    name: str
    path: Path
    synthetic: bool = False

    @functools.cached_property
    def _encoded(self) -> tuple[str, torch.Tensor]:
        text = read_text(self.path)
        chars = "".join(sorted(set(text)))
        lookup = {c: i for i, c in enumerate(chars)}
        ids = torch.tensor(
            [lookup[c] for c in text], dtype=torch.uint8 if len(chars) < 256 else torch.int32
        )
        return chars, ids

    @property
    def shape(self) -> DataShape:
        return DataShape(task="causal-lm", vocab=len(self._encoded[0]))

    @property
    def split(self) -> int:
        return int(len(self._encoded[1]) * TEXT_TRAIN_SHARE)

    @property
    def description(self) -> str:
        ids = self._encoded[1]
        return (
            f"{self.name}: {len(ids):,} characters of text ({self.path.name}), "
            f"{self.shape.vocab} distinct, the first {self.split:,} train and the last "
            f"{len(ids) - self.split:,} are held out"
        )

    @functools.cached_property
    def _on(self) -> dict[str, torch.Tensor]:
        return {}

    def _train_on(self, device: str) -> torch.Tensor:
        """The training split as int64 ids on `device`, copied there once."""
        if device not in self._on:
            self._on[device] = self._encoded[1][: self.split].long().to(device)
        return self._on[device]

    def train_batch(self, n: int, context: int, gen: torch.Generator, device: str) -> Batch:
        """`n` windows of `context + 1` characters at uniform offsets of the training split
        (nanoGPT's `get_batch`), drawn from `gen` (a generator on `device`) and gathered there:
        no copy from the host, so nothing waits for the device."""
        train = self._train_on(device)
        if len(train) <= context + 1:
            raise UsageError(f"--data {self.path}: too short for a context of {context}")
        starts = torch.randint(0, len(train) - context - 1, (n, 1), generator=gen, device=device)
        rows = train[starts + torch.arange(context + 1, device=device)]
        return rows[:, :-1], rows[:, 1:]

    def heldout(self, context: int, batch_size: int, device: str) -> list[Batch]:
        """The held-out split as non-overlapping windows of `context` characters (each
        predicting the next), in batches of `batch_size`: every held-out character is
        predicted once, at the position its window gives it."""
        held = self._encoded[1][self.split :].long()
        windows = (len(held) - 1) // context
        if windows < 1:
            raise UsageError(f"--data {self.path}: the held-out split is shorter than {context}")
        x = held[: windows * context].view(windows, context)
        y = held[1 : windows * context + 1].view(windows, context)
        return [
            (xs.to(device), ys.to(device))
            for xs, ys in zip(x.split(batch_size), y.split(batch_size), strict=True)
        ]


@dataclass(frozen=True)
class Digits:
    """The 1,797 8×8 handwritten digits (UCI, as scikit-learn bundles them; CC BY 4.0), pixel
    counts 0..16 scaled to [0, 1], resized to the model's input side and channels, normalised by
    the training split's mean and standard deviation."""

    name: str = "digits"
    path: Path = FILES / "digits.csv.gz"
    synthetic: bool = False

    @functools.cached_property
    def _arrays(self) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.path.is_file():
            raise UsageError(f"--data {self.path}: no such file")
        with gzip.open(self.path, "rt") as f:
            rows = [[int(v) for v in line.split(",")] for line in f if line.strip()]
        table = torch.tensor(rows, dtype=torch.float32)
        images, labels = table[:, :64].view(-1, 1, 8, 8) / 16.0, table[:, 64].long()
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
        return images[order], labels[order]

    @property
    def split(self) -> int:
        return int(len(self._arrays[1]) * (1 - IMAGE_HELDOUT_SHARE))

    @property
    def shape(self) -> DataShape:
        return DataShape(task="image-cls", classes=int(self._arrays[1].max()) + 1)

    @property
    def description(self) -> str:
        n = len(self._arrays[1])
        return (
            f"{self.name}: {n:,} real 8×8 handwritten digits (UCI, CC BY 4.0), "
            f"{self.split:,} train and {n - self.split:,} held out (a fixed permutation)"
        )

    @functools.cached_property
    def _moments(self) -> tuple[float, float]:
        train = self._arrays[0][: self.split]
        return train.mean().item(), train.std().item()

    def _prepare(self, images: torch.Tensor, side: int, channels: int, device: str) -> torch.Tensor:
        mean, std = self._moments
        x = (images.to(device) - mean) / std
        x = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)
        return x.expand(-1, channels, -1, -1).contiguous(memory_format=torch.channels_last)

    @functools.cached_property
    def _on(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        return {}

    def train_batch(
        self, n: int, side: int, gen: torch.Generator, device: str, channels: int = 3
    ) -> Batch:
        """`n` training images drawn with replacement from `gen` (a generator on `device`), at
        `side` × `side`; the split is copied to the device once."""
        if device not in self._on:
            images, labels = self._arrays
            self._on[device] = images[: self.split].to(device), labels[: self.split].to(device)
        images, labels = self._on[device]
        pick = torch.randint(0, self.split, (n,), generator=gen, device=device)
        return self._prepare(images[pick], side, channels, device), labels[pick]

    def heldout(self, side: int, batch_size: int, device: str, channels: int = 3) -> list[Batch]:
        images, labels = self._arrays[0][self.split :], self._arrays[1][self.split :]
        return [
            (self._prepare(xs, side, channels, device), ys.to(device))
            for xs, ys in zip(images.split(batch_size), labels.split(batch_size), strict=True)
        ]


DataSource = CharText | Digits

SOURCES = {
    "shakespeare": lambda: CharText("shakespeare", FILES / "tinyshakespeare.txt"),
    "digits": Digits,
}
"""The bundled sources by name; any other name is read as the path of a text file."""


def read_text(path: Path) -> str:
    """A text file's characters; a missing, empty or non-UTF-8 file is one line naming it."""
    if not path.is_file():
        raise UsageError(f"--data {path}: no such file")
    raw = path.read_bytes()
    if not raw:
        raise UsageError(f"--data {path}: the file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"--data {path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from exc
    if "\x00" in text:
        raise UsageError(f"--data {path}: not text (it holds NUL bytes)")
    return text


def get(name: str) -> DataSource:
    """The source named `name`, or a text file at that path; checked at once (read once)."""
    source = SOURCES[name]() if name in SOURCES else CharText(Path(name).name, Path(name))
    source.shape  # noqa: B018 — reads the file now, so bad input fails before any work
    return source
