"""A run folder's record, env.json, as one typed mapping (`RunEnv`): every key it may hold is
named once, in `FIELDS`, and a key outside it raises at write and at read, so a misspelled key
fails where it is spelled, not as an empty cell on a page. The measured ceilings it records are a
typed object (`Ceilings`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_MACHINE = {
    "device": "`cpu` or `cuda`: where the job ran.",
    "gpu": "The GPU's name (`cpu` on a CPU run).",
    "gpu_count": "GPUs visible to torch.",
    "driver": "The NVIDIA driver's version; None without a GPU.",
    "cuda": "The CUDA version torch was built with; None on a CPU run.",
    "cudnn": "cuDNN's version; None where absent.",
    "torch": "torch's version.",
    "python": "Python's version.",
    "cpu": "The CPU's name.",
    "cpu_count": "Logical CPUs.",
    "platform": "The operating system (`platform.platform()`).",
    "git": "`git --version`.",
    "commit": "The code's full sha (`bench.measure.env.Code`); None where unknown.",
    "dirty": "Uncommitted changes to the code; None: not known.",
    "diff_hash": "Where dirty, a hash of the changes (`bench.measure.env.Code.diff_hash`).",
    "commit_source": "`git`, or the variable that named the commit.",
    "commit_note": "A note, written by hand, on the commit of an older folder.",
    "argv": "The command line as shown (`bench.store.paths.shown_argv`).",
    "tf32_matmul": "TF32 allowed for matmuls as the job started.",
    "tf32_cudnn": "TF32 allowed for cuDNN convolutions as the job started.",
    "fp16_reduced_precision_reduction": "torch's flag of that name as the job started.",
    "gpu_memory_gib": "The GPU's memory (GiB, 2**30 bytes).",
    "gpu_sm_count": "The GPU's streaming multiprocessors.",
    "gpu_capability": "The GPU's compute capability, `major.minor`.",
}
_FOLDER = {
    "schema": "The folder's version (`bench.store.schema.SCHEMA_VERSION`).",
    "kind": "The job that wrote the folder (`bench.store.schema.KINDS`).",
    "started": "When the job started (ISO 8601, UTC).",
    "ended": "When the job ended; absent while it runs or after it was killed.",
    "command": "The command that started the job.",
    "run_name": "The folder's name as made.",
    "resumed": "One entry per resumption: when, the command line, what differed.",
    "copied_from": "Where a folder was copied from (older folders).",
    "damage": "Set by the reader only: why a damaged folder's env.json could not be read.",
}
_SETTINGS = {
    "config": "A timing run's settings (`bench.jobs.configs.RunConfig.record`).",
    "numerics_config": "A numerics study's settings.",
    "maxbatch_config": "A largest-batch search's settings.",
    "ab_config": "`ampbench ab`'s settings.",
    "quality_config": "A time-to-quality study's settings.",
}
_JOB = {
    "ceilings": "The measured ceilings (`Ceilings.record`).",
    "expected_cases": "Cases in the timing run's grid.",
    "missing_cases": "Cases of the grid with no row at the end.",
    "model_description": "The workload's description.",
    "data_description": "The quality study's data, in words.",
    "size": "The quality study's model size.",
    "step_options": "The timed step's options, in words.",
    "overhead": "The harness's overhead checks, one dict each.",
    "ranks": "Per session of a distributed run: world size and collective timeout.",
    "own_loop": "True for a folder an own-loop probe wrote.",
    "start_step": "The framework's global step as training began (`bench.ownloop.folder`).",
    "tabled_jobs": "Numerics jobs whose rows the folder's tables already hold.",
    "retabled": "Numerics tables rebuilt on a resume.",
    "rounds": "`ab`'s rounds as they ran.",
    "stopped": "Why and when `ab` stopped.",
    "looks": "The seed counts looked at (sequential studies).",
    "design": "The sequential design (`bench.verdicts.sequential`).",
    "seed_order": "The sweep's seeds, in the order they run.",
    "timed_looks": "The sweep's looks that timed modes alone.",
    "looks_ended": "Why the sweep's looks ended.",
    "undecided": "Modes the sweep left undecided.",
    "undecided_speed": "Modes whose speed the sweep left undecided.",
    "speed_plan": "The sweep's plan for timing (`SpeedPlan.record`).",
    "min_effect": "The sweep's smallest effect worth telling.",
    "reruns": "The quality study's reruns on other code.",
}
FIELDS: dict[str, str] = {**_MACHINE, **_FOLDER, **_SETTINGS, **_JOB}
"""Every key env.json may hold -> what it records. Adding a key means adding it here."""


def known(key: str) -> str:
    if key not in FIELDS:
        raise KeyError(f"env.json has no field {key!r}; its fields are bench.store.run_env.FIELDS")
    return key


class RunEnv(dict):
    """env.json as a dict whose keys are `FIELDS`: setting, reading (`[]`, `get`, `in`) or
    removing any other name raises `KeyError`; a known key that is absent reads as usual (`get`
    gives None). Keys of an older folder that `FIELDS` does not name are kept in `extra` and
    written back unchanged."""

    def __init__(self, items: Mapping[str, object] | Iterable = (), /, **kw: object) -> None:
        super().__init__()
        self.extra: dict[str, object] = {}
        self.update(items, **kw)

    @classmethod
    def read(cls, found: Mapping[str, object]) -> RunEnv:
        """An env.json as read: keys outside `FIELDS` go to `extra`."""
        out = cls({k: v for k, v in found.items() if k in FIELDS})
        out.extra = {k: v for k, v in found.items() if k not in FIELDS}
        return out

    def record(self) -> dict[str, object]:
        """What env.json holds: the fields, then the older folder's keys kept as they were."""
        return {**self, **self.extra}

    def __getitem__(self, key: str) -> object:
        return super().__getitem__(known(key))

    def __setitem__(self, key: str, value: object) -> None:
        super().__setitem__(known(key), value)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(known(key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(known(str(key)))

    def get(self, key: str, default: object = None) -> object:
        return super().get(known(key), default)

    def pop(self, key: str, *default: object) -> object:
        return super().pop(known(key), *default)

    def setdefault(self, key: str, default: object = None) -> object:
        return super().setdefault(known(key), default)

    def update(self, items: Mapping[str, object] | Iterable = (), /, **kw: object) -> None:
        for key, value in {**dict(items), **kw}.items():
            self[key] = value

    def copy(self) -> RunEnv:
        out = RunEnv(self)
        out.extra = dict(self.extra)
        return out


MATMUL, BUSBW = "matmul_tflops_", "_busbw_gbps"
PLAIN = ("ceiling_matmul_n", "ceiling_copy_mib", "copy_gbps", "collective_mib")
"""The ceilings' keys in env.json besides the matmul rates and bus bandwidths."""


@dataclass(frozen=True)
class Ceilings:
    """The device's ceilings a run measured (`bench.measure.ceilings`), as env.json's
    `ceilings` records them flat (`record`, `from_record`)."""

    ceiling_matmul_n: int | None = None
    """The square GEMM's size the matmul rates were measured on; None: nothing measured."""
    ceiling_copy_mib: int | None = None
    """The buffer the copy bandwidth was measured on (MiB)."""
    copy_gbps: float = math.nan
    """Device-to-device copy bandwidth, read + write (GB/s); NaN: not measured."""
    matmul_tflops: Mapping[str, float] = field(default_factory=dict)
    """Matmul dtype (`fp32`, `tf32`, `fp16`, `bf16`, `fp8-<granularity>`) -> dense rate
    (TFLOP/s); empty on a device whose matmul rate is not measured (the CPU)."""
    busbw_gbps: Mapping[str, float] = field(default_factory=dict)
    """Collective (`all_reduce`, ...) -> bus bandwidth (GB/s); empty in a one-rank run."""
    collective_mib: float | None = None
    """The buffer the collectives were measured on (MiB); None in a one-rank run."""

    def matmul(self, dtype: str | None) -> float:
        """The matmul ceiling of `dtype` (TFLOP/s), NaN where none was measured."""
        return self.matmul_tflops.get(str(dtype), math.nan)

    def busbw(self, collective: str) -> float:
        return self.busbw_gbps[collective]

    def record(self) -> dict[str, float]:
        """The flat dict env.json holds, in the order earlier code wrote it."""
        out = {"ceiling_matmul_n": self.ceiling_matmul_n, "ceiling_copy_mib": self.ceiling_copy_mib}
        out |= {MATMUL + k: v for k, v in self.matmul_tflops.items()}
        out |= {"copy_gbps": None if math.isnan(self.copy_gbps) else self.copy_gbps}
        out |= {"collective_mib": self.collective_mib}
        out |= {k + BUSBW: v for k, v in self.busbw_gbps.items()}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_record(cls, found: Mapping[str, float] | Ceilings | None) -> Ceilings:
        """From env.json's flat dict (any folder's; None or empty: nothing measured); an
        unknown key raises `KeyError`."""
        found = found or {}
        if isinstance(found, Ceilings):
            return found
        matmul = {k.removeprefix(MATMUL): v for k, v in found.items() if k.startswith(MATMUL)}
        bus = {k.removesuffix(BUSBW): v for k, v in found.items() if k.endswith(BUSBW)}
        plain = {
            k: v for k, v in found.items() if not k.startswith(MATMUL) and not k.endswith(BUSBW)
        }
        unknown = set(plain) - set(PLAIN)
        if unknown:
            raise KeyError(f"ceilings have no field {sorted(unknown)[0]!r}")
        return cls(matmul_tflops=matmul, busbw_gbps=bus, **plain)  # type: ignore[arg-type]
