"""A timing session: `python -m bench run` (or `./run_bench.sh`) from its grid to a finished,
rendered results folder.

A session creates its folder (`bench.store.folders`), records the machine and the grid in env.json,
measures the ceilings, optionally runs a short numerics study, times every case
(`bench.measure.runner.run_suite`), measures the harness's overhead, and renders the report. A
resumed
session (`--resume RUN`) reopens the folder after the compatibility check, repairs a half-written
last line, and runs only the cases that are not done. The folder is locked while a process
writes it.

In a run of several ranks (`--gpus N`, `bench.execution.launch`) every rank runs a session: rank 0
opens
or resumes the folder and sends the plan (folder, grid, ceilings already measured) to the
others, which follow it (`follow`); all measure the collective ceilings and the cases together,
and rank 0 alone writes the folder and renders the report. The harness-overhead check and a
short numerics study are one-process measurements and are not made there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from bench.cases.case import Case, grid
from bench.cases.choices import DEFAULT_BATCH_SIZES
from bench.execution import launch
from bench.execution import parallel as parallelisms
from bench.execution import variants as execution_variants
from bench.execution.distributed import World
from bench.execution.parallel import PARALLELS
from bench.execution.variants import DEFAULT_VARIANTS
from bench.faults import Interrupted, UsageError, error_summary
from bench.measure import ceilings, env
from bench.measure.roofline import num_params
from bench.measure.runner import done_cases, free_device_memory, measure_overhead, run_suite
from bench.publish import index, report
from bench.recipes.modes import MODES, OPTIMIZERS
from bench.store import folders, results
from bench.workloads.mlp import PRESETS, ModelSize

CEILING_SIZES = {
    "cuda": {"matmul_n": 8192, "copy_mib": 1024},
    "cpu": {"matmul_n": 256, "copy_mib": 16},
}
"""Ceiling problem sizes: on the GPU large enough to fill the chip and spill the L2 many times."""
DEFAULT_REPEATS = 3
"""Timed windows per case when `--repeats` is not given. `bench compare` needs at least 2 per run
to see run-to-run drift at all, and 3 against 3 give its t-interval 4 degrees of freedom
(t = 2.78) where 2 against 2 give 2 (t = 4.30): in a simulation with 1% drift between windows
and 2% noise between steps, 3 windows call a 5% slowdown `slower` 98% of the time, 2 windows
66%. The two extra windows add 60 steps to a case: under a second for most cases of the default
CUDA grid, 9 s for the slowest (fp32 at batch 4096, 147 ms a step on an H200), milliseconds on
the CPU's tiny preset."""
NUMERICS_DIR = "numerics"
"""Where `run --numerics` puts its short study, inside the run folder."""
_AXIS_OPTIONS = {"parallels": "--parallel", "variants": "--variants", "modes": "--modes"}
"""The grid's axes that can leave nothing to run, with the option that sets each."""
_FALLBACK = {"parallels": ("none",), "variants": ("eager",), "modes": ("fp32",)}
"""A value of each of those axes that runs anywhere: the axis whose values, swapped for this,
would let a case run is the one a refusal names."""


def unsupported_reason(case: Case, world_size: int) -> str | None:
    """Why `case` cannot run here, as its row would say (`bench.measure.runner.run_case`), or
    None."""
    return execution_variants.unsupported_reason(case) or parallelisms.unsupported_reason(
        case.parallel, variant=case.variant, world_size=world_size
    )


def _first_unsupported(cfg: RunConfig) -> str | None:
    """None when some case of `cfg` can run here, else the first case's reason. A reason depends
    on the mode, the variant and the parallelism alone: each such triple is asked once."""
    reasons: dict[tuple[str, str, str], str | None] = {}
    for case in cfg.cases():
        key = (case.mode, case.variant, case.parallel)
        if key not in reasons:
            reasons[key] = unsupported_reason(case, cfg.world_size)
            if reasons[key] is None:
                return None
    return next(iter(reasons.values()), None)


def log(message: str) -> None:
    print(f"ampbench: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """The grid of a timing session, as env.json keeps it (`config`) for --resume."""

    device: str
    preset: str
    input_size: int
    hidden_size: int
    num_classes: int
    modes: tuple[str, ...] = tuple(MODES)
    optimizers: tuple[str, ...] = tuple(OPTIMIZERS)
    variants: tuple[str, ...] = ("eager",)
    parallels: tuple[str, ...] = ("none",)
    batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES
    steps: int = 30
    warmup: int = 5
    repeats: int = 1
    """Timed windows of `steps` steps per case (`--repeats`). 1 here, so that a folder recorded
    before the field resumes as it was measured; a new run takes `DEFAULT_REPEATS`."""
    seed: int = 0
    overhead: bool = True
    numerics: bool = False
    world_size: int = 1
    """Ranks of the run (`--gpus`): a resumed run must have as many."""
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)
    """Modes a CPU run's default grid left out, each with why it cannot run there (float8 needs
    a CUDA GPU; torchao's modes need torchao). A mode asked for with --modes is always in the
    grid, and a row (`unsupported`, with the reason, where it cannot run)."""

    def __post_init__(self) -> None:
        if self.world_size > 1 and self.numerics:
            raise ValueError("--numerics runs in a one-process run; drop it or --gpus")
        for name in ("modes", "optimizers", "variants", "parallels", "batch_sizes"):
            values = getattr(self, name)
            if not values:
                raise ValueError(f"{name} is empty")
            dupes = sorted({v for v in values if values.count(v) > 1}, key=str)
            if dupes:
                raise ValueError(f"{name} lists {dupes[0]!r} twice")
        self.cases()  # every case validates its own fields

    @classmethod
    def build(cls, *, device: str, preset: str | None, **given: object) -> RunConfig:
        """The grid from the options the user gave (None: not given) and the defaults."""
        preset = preset or ("seed" if device == "cuda" else "tiny")
        size = dataclasses.asdict(PRESETS[preset])
        chosen = {k: v for k, v in given.items() if v is not None}
        chosen.setdefault("variants", DEFAULT_VARIANTS if device == "cuda" else ("eager",))
        chosen.setdefault("repeats", DEFAULT_REPEATS)
        several = int(chosen.get("world_size", 1)) > 1
        chosen.setdefault("parallels", tuple(PARALLELS) if several else ("none",))
        if device == "cpu" and "modes" not in chosen:
            # A CPU smoke run's default grid holds the modes that can run on the CPU: the others
            # would be a row per batch size and optimizer saying the same thing (a third of the
            # grid). They are named in the log and the report instead; --modes asks for them.
            why = {name: mode.unsupported_reason(device) for name, mode in MODES.items()}
            chosen["modes"] = tuple(name for name, reason in why.items() if reason is None)
            chosen["left_out"] = {name: reason for name, reason in why.items() if reason}
        for key in ("modes", "optimizers", "variants", "parallels", "batch_sizes"):
            if key in chosen:
                chosen[key] = tuple(chosen[key])
        cfg = cls(device=device, preset=preset, **{**size, **chosen})
        refusal = cfg.nothing_runs()
        if refusal is not None:
            raise ValueError(refusal)
        return cfg

    def nothing_runs(self) -> str | None:
        """None when some case of the grid can run here. Otherwise one line that names the
        option and value that leave nothing to run, and why (`--variants cudagraph: CUDA graphs
        need a CUDA device`): a new run of such a grid is refused before it makes a folder of
        `unsupported` rows."""
        reason = _first_unsupported(self)
        if reason is None:
            return None
        for name, option in _AXIS_OPTIONS.items():
            if _first_unsupported(dataclasses.replace(self, **{name: _FALLBACK[name]})) is None:
                value = ",".join(getattr(self, name))
                return f"{option} {value}: {reason}; no case of this grid can run here"
        return f"no case of this grid can run here: {reason}"

    @classmethod
    def from_record(cls, record: dict) -> RunConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        kept = {k: tuple(v) if isinstance(v, list) else v for k, v in record.items() if k in names}
        return cls(**kept)

    def record(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @property
    def size(self) -> ModelSize:
        return ModelSize.of(self)

    def cases(self) -> list[Case]:
        return grid(
            modes=self.modes,
            optimizers=self.optimizers,
            variants=self.variants,
            parallels=self.parallels,
            batch_sizes=self.batch_sizes,
            size=self.size,
            device=self.device,
            seed=self.seed,
            warmup=self.warmup,
            steps=self.steps,
            repeats=self.repeats,
        )


def start(
    cfg: RunConfig,
    *,
    results_dir: Path,
    command: str,
    tag: str | None = None,
    world: World | None = None,
) -> tuple[Path, int]:
    """A new session into a new folder under `results_dir` (its name ends in `_<tag>` when
    `tag` is given); returns (folder, exit status). A rank other than 0 follows rank 0's
    session."""
    world = world or World.single(cfg.device)
    if not world.leader:
        return follow(world)
    with _plan_errors(world):
        run_dir, info = folders.open_new(
            results_dir,
            device=cfg.device,
            kind="config",
            settings=cfg.record(),
            command=command,
            suffix=folders.tagged("", tag),
        )
    launch.record_run_dir(run_dir)
    log(f"run folder {run_dir}")
    if cfg.device == "cpu":
        log("no GPU, so this is a CPU smoke run: its figures say nothing about GPU speed")
    if cfg.left_out:
        log(f"left out of the CPU grid, as they cannot run here: {report.left_out(cfg.left_out)}")
    with folders.locked(run_dir):
        info["expected_cases"] = len(cfg.cases())
        return run_dir, _execute(cfg, run_dir, info, world)


def resume(run_dir: Path, *, force: bool, world: World | None = None) -> tuple[Path, int]:
    """Finish an interrupted session in its folder with its recorded grid."""
    world = world or World.single()
    if not world.leader:
        return follow(world)
    with contextlib.ExitStack() as stack:
        with _plan_errors(world):
            folders.require_dir(run_dir)
            stack.enter_context(folders.locked(run_dir))
            recorded = results.read_env(run_dir)
            device = recorded.get("device", "cpu")
            here = env.collect(device if device != "cuda" or torch.cuda.is_available() else "cpu")
            info = folders.reopen(run_dir, kind="config", here=here, force=force)
            try:
                cfg = RunConfig.from_record(info["config"])
            except (TypeError, ValueError, KeyError) as exc:
                raise UsageError(
                    f"--resume {run_dir}: its recorded grid is not usable ({exc})"
                ) from exc
            if cfg.world_size != world.size:
                raise UsageError(
                    f"--resume {run_dir}: it ran on {cfg.world_size} rank(s); give --gpus "
                    f"{cfg.world_size}"
                )
            info.setdefault("expected_cases", len(cfg.cases()))
        log(f"resuming {run_dir}")
        launch.record_run_dir(run_dir)
        return run_dir, _execute(cfg, run_dir, info, world)


@contextlib.contextmanager
def _plan_errors(world: World) -> Iterator[None]:
    """On rank 0: bad input ends every rank, not only this one (the others wait for a plan)."""
    try:
        yield
    except UsageError as exc:
        world.broadcast({"error": str(exc)})
        raise


def follow(world: World) -> tuple[Path, int]:
    """A rank other than 0: take rank 0's plan and measure with it; it writes nothing."""
    plan = world.broadcast(None)
    if "error" in plan:
        return Path(), 2
    cfg = RunConfig.from_record(plan["config"])
    info = {"ceilings": plan["ceilings"]}
    run_dir = Path(plan["run_dir"])
    world.run_dir = run_dir if run_dir.is_dir() else None  # on rank 0's host only
    _measure(cfg, cfg.cases(), run_dir, info, world)
    world.close()
    return run_dir, 0


def _execute(cfg: RunConfig, run_dir: Path, info: dict, world: World) -> int:
    """Measure what is not done yet and render the report; the caller holds the folder's lock."""
    for path in (run_dir / results.ROWS, run_dir / results.SAMPLES):
        repaired = results.repair_jsonl(path)
        if repaired:
            log(repaired)
    launch.complete_inflight(run_dir, "the run ended while this case ran")
    if world.distributed:
        info.setdefault("ranks", []).append(
            {"world_size": world.size, "collective_timeout_s": world.collective_timeout_s}
        )
    results.write_env(run_dir, info)
    world.broadcast(
        {"run_dir": str(run_dir), "config": cfg.record(), "ceilings": info.get("ceilings")}
    )
    cases = cfg.cases()
    world.run_dir = run_dir
    try:
        _measure(cfg, cases, run_dir, info, world)
        world.close()
    except KeyboardInterrupt:
        kept = len(done_cases(run_dir) & {c.case_id for c in cases})
        raise Interrupted(
            f"interrupted: {kept} of {len(cases)} cases are kept in {run_dir}; "
            f"finish with: ./run_bench.sh --resume {run_dir}"
        ) from None
    info["ended"] = folders.iso()
    results.write_env(run_dir, info)
    df = report.write(run_dir)
    print(report.headline(df), file=sys.stderr)
    log(f"wrote {run_dir / results.REPORT}")
    index.refresh(run_dir)  # only when the run is in the project's results/
    ok = int((df["status"] == "ok").sum())
    if ok == 0:
        log(f"no case of {len(cases)} passed")
        return 1
    return 0


def _measure(cfg: RunConfig, cases: list[Case], run_dir: Path, info: dict, world: World) -> None:
    if not info.get("ceilings"):
        if world.leader:
            log("measuring ceilings (matmul per dtype, copy bandwidth, collectives)")
        mine = ceilings.measure(cfg.device, **CEILING_SIZES[cfg.device]) if world.leader else {}
        found = world.broadcast(mine)  # every rank's floors use rank 0's ceilings
        # The collectives at this model's float32 gradient size (what DDP all-reduces).
        found.update(ceilings.measure_collectives(world, num_params(cfg.size) * 4))
        free_device_memory()  # the buffers' cached blocks would count in the first case's peak
        info["ceilings"] = found
        if world.leader:
            results.write_env(run_dir, info)
    if cfg.numerics:
        _short_numerics(cfg, run_dir / NUMERICS_DIR, info)
    run_suite(cases, run_dir, info["ceilings"], world=world)
    if not world.leader:
        return
    if world.distributed and cfg.overhead and "overhead" not in info:
        info["overhead"] = {"error": "not measured in a run of several ranks"}
        results.write_env(run_dir, info)
    elif cfg.overhead and "overhead" not in info:
        chosen = overhead_cases(cases)
        if not chosen:
            info["overhead"] = [{"error": "no eager case in the grid (it times the eager step)"}]
        else:
            info["overhead"] = []
            for i, case in enumerate(chosen, 1):
                log(f"harness overhead against a bare loop [{i}/{len(chosen)}] {case.case_id}")
                try:
                    info["overhead"].append(measure_overhead(case))
                except Exception as exc:  # recorded, not fatal: the cases are already on disk
                    info["overhead"].append({"case_id": case.case_id, "error": error_summary(exc)})
        results.write_env(run_dir, info)


def overhead_cases(cases: list[Case]) -> list[Case]:
    """The eager cases the overhead check runs on: bf16-amp (or the grid's first mode) at the
    smallest and the largest eager batch size, with each optimizer of the grid; none without an
    eager case (the bare loop it is compared with is the eager step). The smallest batch is
    where per-step host work (launches, GradScaler's sync) weighs most."""
    eager = [c for c in cases if c.variant == "eager" and c.parallel == "none"]
    if not eager:
        return []
    modes = {c.mode for c in eager}
    mode = "bf16-amp" if "bf16-amp" in modes else eager[0].mode
    sizes = sorted({c.batch_size for c in eager})
    wanted = {sizes[0], sizes[-1]}
    return [c for c in eager if c.mode == mode and c.batch_size in wanted]


def _short_numerics(cfg: RunConfig, folder: Path, info: dict) -> None:
    """The short numerics study, before the timed cases (it resumes if it was interrupted)."""
    from bench.numerics import config, study  # the study's code loads only when asked for

    if (folder / results.ENV).is_file() and "ended" in results.read_env(folder):
        return
    ncfg = config.short_config(
        device=cfg.device,
        size=cfg.size,
        modes=list(cfg.modes),
        batch_sizes=list(cfg.batch_sizes),
        optimizer="fused" if "fused" in cfg.optimizers else cfg.optimizers[0],
    )
    folder.mkdir(exist_ok=True)
    sub = {
        **info,
        "run_name": f"{info['run_name']}/{NUMERICS_DIR}",
        "numerics_config": ncfg.record(),
    }
    for key in ("ceilings", "config", "expected_cases"):
        sub.pop(key, None)
    results.write_env(folder, sub)
    log(f"short numerics study into {folder}")
    study.run_into(ncfg, folder, sub)
