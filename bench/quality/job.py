"""A time-to-quality study as a job (docs/quality.md): every mode's step timed alone first, then
each (mode, seed) run trained, `workers` side by side, its row naming the code it trained at;
sequential looks, `resume` (at the study's one commit: `bench.quality.commit`) and
`replicate`."""

from __future__ import annotations

import dataclasses
import math
import multiprocessing as mp
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from bench import quiet
from bench.cases import checks
from bench.data import sources
from bench.faults import UsageError, fault
from bench.lifecycle import packing
from bench.lifecycle.folder import log, new_folder, resumed_folder
from bench.modes.mode import MODES
from bench.plan import plan
from bench.quality import commit as quality_commit
from bench.quality import looks, tables, train
from bench.quality.config import FP32, QualityConfig
from bench.quality.feed import fit
from bench.quality.train import Resolved, safe_train, time_step
from bench.store import paths, schema
from bench.verdicts import sequential
from bench.verdicts.sequential import DEFAULT_MAX_SEEDS
from bench.workloads import registry
from bench.workloads.base import Workload

KIND = "quality"
START_S = 30.0
"""What a budget keeps back for starting the workers and building their models."""
EVAL_SHARE = 0.1
"""What evaluation adds to a run's training steps, at most (the default study's: 7 held-out
batches of forward passes every 100 steps)."""
REPLICA_OFFSET = 1000
"""`--replicate`'s second study starts its seeds here: its seeds, and those its looks add, stay
apart from the first's (a cap below this many seeds)."""


def config(device: str, given: dict[str, object], *, budget: bool = False) -> QualityConfig:
    """A new study's config from the options the user gave (`QualityConfig.build`, a model's
    default preset filled in); a device-time `budget` without `max_seeds` makes the study
    sequential, capped at `DEFAULT_MAX_SEEDS` (a budget stops a sequential study between looks)."""
    if budget and "max_seeds" not in given:
        given = {**given, "max_seeds": DEFAULT_MAX_SEEDS}
    model = str(given.get("model", "gpt"))
    workload = registry.get(model)
    if model != "gpt":  # its own default preset, which only its registry knows
        given = {"preset": workload.default_preset[device], **given}
    cfg = QualityConfig.build(device, given)
    # A preset the model does not have is bad input, before any folder (not a study of
    # `unsupported` rows).
    checks.choice(tuple(workload.presets))("--preset", cfg.preset)
    if cfg.max_seeds:
        try:  # the design the looks will follow, checked before any folder or GPU time
            sequential.Design(first=len(cfg.seeds), max_seeds=cfg.max_seeds)
        except ValueError as exc:
            seeds = ",".join(map(str, cfg.seeds))
            raise UsageError(f"--max-seeds {cfg.max_seeds} with --seeds {seeds}: {exc}") from exc
    return cfg


def study(cfg: QualityConfig, workload: Workload | None = None) -> Resolved:
    """What the study's runs train with, looked up once at a job's entry (a worker's too, in a
    process of its own): fp32's plan by the one resolver (`bench.plan.plan.resolve`), with the
    study's step options, at the size of its model sized to its data; each mode's is
    `Resolved.with_mode`. ValueError where the model cannot be sized to the data."""
    workload = registry.get(cfg.model) if workload is None else workload
    fitted = fit(cfg, workload)
    case = train.case(cfg, workload, FP32)
    sized = plan.resolve(case, step_options=train.options(cfg)).with_size(fitted.size)
    return Resolved(sized, fitted, sized.mode)


def one_run(cfg: QualityConfig, mode: str) -> Resolved:
    """What a run of `mode` trains with, in a process that trains it alone (a worker, the rerun
    check)."""
    return study(cfg).with_mode(MODES[mode])


def _study_or_why(cfg: QualityConfig, workload: Workload | None = None) -> Resolved | str:
    """`study`, or why the model cannot be sized to the data (a string: every run says it)."""
    try:
        return study(cfg, workload)
    except ValueError as exc:
        return str(exc)


def _time(
    folder_path: Path, cfg: QualityConfig, modes: tuple[str, ...], found: Resolved | str | None
) -> None:
    """Time each mode of `modes` not yet timed, alone (`found`: the study's `_study_or_why`,
    looked up here where None and needed)."""
    timed = {r["mode"] for r in tables.load(folder_path)["timing"].to_dict("records")}
    if found is None and set(modes) - timed:
        found = _study_or_why(cfg)
    for mode in modes:
        if mode in timed:
            continue
        # Why the mode cannot train the study's model here: the one rule every job asks
        # (`Plan.unsupported_reason`), or why the model could not be sized to the data.
        resolved = found.with_mode(MODES[mode]) if isinstance(found, Resolved) else None
        why = found if resolved is None else resolved.plan.unsupported_reason
        if why is not None:
            tables.append(
                folder_path, "timing", [{"mode": mode, "status": "unsupported", "error": why}]
            )
            continue
        log(f"timing {mode}")
        try:
            row = {**time_step(cfg, resolved), "status": "ok", "error": ""}
        except Exception as exc:  # a mode that fails here is a row; the study goes on
            info = fault(exc)
            row = {"mode": mode, "status": info["status"], "error": info["error"]}
        tables.append(folder_path, "timing", [row])


def _work(args: tuple[dict, str, int]) -> dict[str, list[dict]]:
    """One run in a worker process (spawned: CUDA cannot be forked)."""
    quiet.quiet()
    record, mode, seed = args
    cfg = QualityConfig.from_record(record)
    return safe_train(cfg, mode, seed, lambda: one_run(cfg, mode))


def _within(
    todo: list[tuple[str, int]], cfg: QualityConfig, timing, budget_s: float
) -> list[tuple[str, int]]:
    """The runs of `todo`, in order, whose summed cost fits `budget_s`: each costs its steps ×
    its mode's step time alone, plus what evaluation and starting a process add. An estimate:
    side by side on one GPU, runs bound by its matmuls take about as long as one after another
    or longer, runs bound by the CPU's launches less."""
    step_s = dict(zip(timing["mode"], timing["step_ms"] / 1e3, strict=True))
    chosen, spent = [], START_S
    for mode, seed in todo:
        cost = cfg.steps * step_s[mode] * (1 + EVAL_SHARE)
        if spent + cost > budget_s:
            continue
        chosen.append((mode, seed))
        spent += cost
    return chosen


def pack(cfg: QualityConfig, timing: pd.DataFrame, runs: int) -> tuple[int, str]:
    """How many runs train side by side, and why (`bench.lifecycle.packing`, at the largest
    mode's measured reservation)."""
    ok = timing[timing["status"] == "ok"]
    peaks = pd.to_numeric(ok.get("peak_gib", pd.Series()), errors="coerce")
    # Timed before peaks were kept: nothing to size from.
    peak = None if peaks.empty or peaks.isna().any() else float(peaks.max())
    return packing.side_by_side(cfg.workers, cfg.device, peak, runs)


def _train(
    folder_path: Path, cfg: QualityConfig, budget_s: float = 0, only: tuple[str, ...] = ()
) -> bool:
    """Train the runs of `cfg`'s modes and seeds (`only` those modes') not yet trained,
    those that fit `budget_s` where one is given; whether none was left for lack of budget."""
    timing = tables.load(folder_path)["timing"]
    skip = dict(zip(timing["mode"], timing["status"], strict=True))
    finished = tables.done(folder_path)
    # fp32 first, the costliest: the target is its; then mode by mode.
    todo = [
        (m, s)
        for m in cfg.modes
        for s in cfg.seeds
        if (m, s) not in finished and skip.get(m) == "ok" and (not only or m in only)
    ]
    # A study may be resumed: each row says which code made it (`quality_commit.guard` reads it).
    made_by = quality_commit.made_by()
    for m in cfg.modes:
        if skip.get(m, "ok") != "ok":  # an unsupported mode: one row per seed says so
            why = timing[timing["mode"] == m]["error"].iloc[0]
            rows = [{"mode": m, "seed": s, "status": skip[m], "error": why, **made_by}
                    for s in cfg.seeds]  # fmt: skip
            tables.append(folder_path, "runs", [r for r in rows if (m, r["seed"]) not in finished])
    whole = True
    if budget_s:
        chosen = _within(todo, cfg, timing, budget_s)
        left = [f"{m} seed {s}" for m, s in todo if (m, s) not in chosen]
        if left:
            whole = False
            log(
                f"the budget ({budget_s:.0f} s left) leaves {len(left)} runs for --resume: "
                f"{', '.join(left)}"
            )
        todo = chosen
    workers, why = pack(cfg, timing, len(todo))
    if workers > 1:
        # Side by side, the longest runs first (their mode's step time alone): none starts
        # last and trains alone while the other slots stand empty. One at a time, fp32 first.
        step_ms = dict(zip(timing["mode"], timing["step_ms"], strict=True))
        todo.sort(key=lambda run: -step_ms[run[0]])
    record = cfg.record()
    jobs = [(record, m, s) for m, s in todo]
    log(f"training {len(jobs)} runs, {workers} at a time ({why})")

    def keep(result: dict[str, list[dict]]) -> None:
        result["runs"][0].update(made_by)
        for table in ("curves", "checks", "runs"):  # runs last: it marks the run done
            tables.append(folder_path, table, result[table])
        run = result["runs"][0]
        log(f"{run['mode']} seed {run['seed']}: {run['status']}")

    if not jobs:
        return whole
    if workers == 1:
        for job in jobs:
            keep(_work(job))
        return whole
    with mp.get_context("spawn").Pool(workers) as pool:
        for result in pool.imap_unordered(_work, jobs):
            keep(result)
    return whole


def start(
    cfg: QualityConfig, *, results_dir: Path, tag: str | None, command: str, budget_s: float = 0
) -> Path:
    data = sources.get(cfg.data)  # bad data is bad input: one line, before any folder
    workload = registry.get(cfg.model)
    found = _study_or_why(cfg, workload)  # a model that cannot be sized to it: its rows say why
    size = f"not sized to the data: {found}" if isinstance(found, str) else repr(found.plan.size)
    suffix = f"_quality_{cfg.model.replace(':', '-')}-{cfg.preset}"
    with new_folder(
        results_dir, kind=KIND, device=cfg.device, settings=cfg.record(), command=command,
        suffix=suffix, tag=tag,
    ) as folder:  # fmt: skip
        folder.info["data_description"] = data.description
        folder.info["model_description"] = workload.description
        folder.info["size"] = size
        folder.save()
        started = looks.clock()
        _time(folder.path, cfg, cfg.modes, found)
        if looks.design_of(cfg) is not None:
            looks.run(folder, cfg, _train, budget_s, started)
            return folder.path
        _train(folder.path, cfg, budget_s)
        _finish(folder, cfg)
        return folder.path


def replicate(
    cfg: QualityConfig, *, results_dir: Path, tag: str | None, command: str, budget_s: float = 0
) -> Iterator[Path]:
    """`--replicate`: the study, then the same study on its seeds moved by `REPLICA_OFFSET`
    (`replica1`, `replica2`), each folder given as it ends; each has half the budget. UsageError
    first where the seeds it may reach are not below the offset."""
    if max(cfg.seed_order()) >= REPLICA_OFFSET:
        raise UsageError(
            f"--replicate: seeds reach {max(cfg.seed_order())}, not below {REPLICA_OFFSET}"
        )
    second = dataclasses.replace(cfg, seeds=tuple(s + REPLICA_OFFSET for s in cfg.seeds))
    for i, one in enumerate((cfg, second)):
        yield start(
            one, results_dir=results_dir, tag="-".join(filter(None, (tag, f"replica{i + 1}"))),
            command=command, budget_s=budget_s / 2,
        )  # fmt: skip


def _finish(folder, cfg: QualityConfig) -> None:
    """Mark the study ended when every run it names has a row."""
    if all((m, s) in tables.done(folder.path) for m in cfg.modes for s in cfg.seeds):
        tables.compact(folder.path)
        folder.finish()


def _best_again(cfg: QualityConfig, mode: str, seed: int) -> float:
    """Train (mode, seed) of the study again here; its best held-out loss (the rerun check's)."""
    result = safe_train(cfg, mode, seed, lambda: one_run(cfg, mode))
    losses = [c["heldout_loss"] for c in result["curves"] if math.isfinite(c["heldout_loss"])]
    return min(losses) if losses else math.nan


def _seeds_join(folder, cfg: QualityConfig, add_seeds: tuple[int, ...]) -> None:
    """Refuse (UsageError) seeds added by hand where the study's rule has not planned them: a
    sequential study adds its own in looks; a fixed study's one look, once any loss is on disk,
    has spent its whole error rate, and judging it again at more seeds is optional stopping
    (docs/quality.md, "Adding seeds in looks"). Before any run finished, its plan may grow."""
    new = [s for s in add_seeds if s not in cfg.seeds]
    if not new:
        return
    given = f"--add-seeds {','.join(map(str, add_seeds))} with --resume {folder.path}"
    if looks.design_of(cfg) is not None:
        raise UsageError(f"{given}: a sequential study adds its own seeds in looks "
                         f"(--max-seeds {cfg.max_seeds})")  # fmt: skip
    if tables.load(folder.path)["curves"].empty:
        return
    seeds = ",".join(map(str, cfg.seeds))
    command = paths.shown_command(str(folder.info.get("command") or "python -m bench quality"))
    raise UsageError(
        f"{given}: a fixed study's one look at seeds {seeds} spent its whole 5% error rate, "
        "and judging it again at more seeds is optional stopping; declare the cap before the "
        f"first look, in a new study: {command} --seeds {seeds} --max-seeds "
        f"{len(cfg.seeds) + len(new)}"
    )


def resume(
    run_dir: Path,
    *,
    add_modes: tuple[str, ...] = (),
    add_seeds: tuple[int, ...] = (),
    workers: int | None = None,
    budget_s: float = 0,
    only: tuple[str, ...] = (),
    rerun_check: bool = False,
) -> Path:
    """Train what the study in `run_dir` has not: after `add_modes` and `add_seeds` (where its
    rule allows them: `_seeds_join`), `only` those modes' runs; a sequential study goes on from
    its last look. Every resume passes `quality_commit.guard` first: a study is one commit.
    Another GPU or torch may not resume it. A refusal changes nothing in the folder."""
    started = looks.clock()
    with resumed_folder(run_dir, kind=KIND, force=False, allow=("commit", "dirty")) as folder:
        cfg = QualityConfig.from_record(folder.settings)
        _seeds_join(folder, cfg, add_seeds)
        quality_commit.guard(
            folder, cfg, rerun_check=rerun_check,
            retrain=lambda mode, seed: _best_again(cfg, mode, seed),
        )  # fmt: skip
        modes = tuple(dict.fromkeys((*cfg.modes, *add_modes)))
        seeds = tuple(dict.fromkeys((*cfg.seeds, *add_seeds)))
        workers = cfg.workers if workers is None else workers
        cfg = dataclasses.replace(cfg, modes=modes, seeds=seeds, workers=workers)
        folder.info[schema.settings_key(KIND)] = cfg.record()
        folder.info.pop("ended", None)
        folder.save()
        _time(folder.path, cfg, cfg.modes, None)
        if looks.design_of(cfg) is not None:
            looks.run(folder, cfg, _train, budget_s, started)
            return folder.path
        _train(folder.path, cfg, budget_s, only)
        _finish(folder, cfg)
        return folder.path
