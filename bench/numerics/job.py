"""A numerics study as a job: start one in a new folder, resume an interrupted one (or add modes
to a finished one), or run one into a folder another job made (`run --numerics`). Finished jobs
are kept in `jobs/<job key>.json` until the tables are written, so `resume` goes on where it
stopped."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd

from bench.cases.grid import RunConfig
from bench.faults import UsageError
from bench.lifecycle import folder as base
from bench.numerics.analysis.summary import summarize_runs
from bench.numerics.measure import audit, jobs, tables
from bench.numerics.measure.config import NumericsConfig, resolve_workers, short_config
from bench.numerics.measure.jobs import Job
from bench.numerics.measure.training import OWN_MODEL_CENSUS_MODES
from bench.plan.plan import modes_of, resolve
from bench.store import errors, folders, results
from bench.store.run_env import RunEnv
from bench.workloads.registry import get as get_workload

JOBS_DIR = "jobs"
JOB_TABLES = ("failed", "census", "histogram", "fp16_fate", "steps", "evals", "runs", "traces")
"""The tables the jobs' rows go to, in the order they are written."""
CENSUS_TABLES = ("census", "histogram", "fp16_fate")
"""The tables only census jobs write rows to."""


def start(cfg: NumericsConfig, *, results_dir: Path, command: str, tag: str | None) -> Path:
    """Run a new study into a new folder under `results_dir`, named
    `<stamp>_<gpu>_<sha>_numerics[_<tag>]`; returns the folder. `command` is recorded in
    env.json as the command that started it. An interruption (KeyboardInterrupt) propagates and
    leaves every finished job in the folder for `resume`."""
    with base.new_folder(
        results_dir, kind="numerics", device=cfg.device, settings=cfg.record(), command=command,
        suffix="_numerics", tag=tag,
    ) as folder:  # fmt: skip
        base.log(f"numerics folder {folder.path}")
        folder.info["model_description"] = get_workload(cfg.model).description  # for the report
        run_into(cfg, folder.path, folder.info)
    return folder.path


def resume(
    run_dir: Path,
    *,
    workers: int | None,
    force: bool,
    add_modes: tuple[str, ...] = (),
    trace_every: int | None = None,
) -> Path:
    """Finish an interrupted study in its folder with its recorded settings, running only the
    jobs it has not kept; returns the folder. `workers` None: every visible GPU. A complete folder,
    or one made at another commit, torch or GPU model, is refused unless `force` (`UsageError`).
    `add_modes` adds convergence modes (finished study or not) and runs only their jobs, at another
    commit too (env.json's `resumed` records it); a census older than an added mode is run again.
    `trace_every` (with `add_modes`) sets the trace period of the jobs still to run."""
    recorded = results.read_env(run_dir) if (run_dir / results.ENV).is_file() else RunEnv()
    # A study that modes were added to mixes commits by design, also when it is resumed.
    mixed = any(r.get("added_modes") for r in recorded.get("resumed", []))
    allow = ("commit", "dirty") if add_modes or mixed else ()
    with base.resumed_folder(run_dir, kind="numerics", force=force, allow=allow) as folder:
        info = folder.info
        if "ended" in info and not add_modes:
            raise UsageError(f"--resume {run_dir}: the study is complete; `report` re-renders it")
        try:
            cfg = NumericsConfig.from_record(
                folder.settings, workers=resolve_workers(info["device"], workers)
            )
            if add_modes:
                cfg = _add_modes(cfg, add_modes, info, folder.here, run_dir, trace_every)
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"--resume {run_dir}: {exc}") from exc
        folder.save()  # the resumption, recorded before any work
        base.log(f"resuming {run_dir}")
        run_into(cfg, run_dir, info)
    return run_dir


def _add_modes(
    cfg: NumericsConfig,
    add_modes: tuple[str, ...],
    info: RunEnv,
    here: dict,
    run_dir: Path,
    trace_every: int | None = None,
) -> NumericsConfig:
    """The study's settings with `add_modes` among its modes, recorded in `info` (not yet
    written): the settings, the `resumed` entry (added modes, this commit) and, for a finished
    study, `tabled_jobs`, the jobs whose rows its tables already hold."""
    new = tuple(m for m in add_modes if m not in cfg.modes)
    # The census compares its own set of modes at each checkpoint: an added mode it has not seen
    # (a study older than that mode) is measured by running its census jobs again, whose rows
    # then replace the old ones; also for a mode added earlier, before the census knew it.
    unseen = ()
    if "ended" in info:
        seen = set(tables.read(run_dir, "census")["mode"])
        unseen = tuple(m for m in add_modes if m in OWN_MODEL_CENSUS_MODES and m not in seen)
    if not new and not unseen and "ended" in info:
        raise ValueError(f"the study already has modes {', '.join(add_modes)}")
    if not new and not unseen:  # an interrupted addition of these modes: go on with it
        return cfg if trace_every is None else dataclasses.replace(cfg, trace_every=trace_every)
    grown = dataclasses.replace(cfg, modes=cfg.modes + new)  # validates the names
    if trace_every is not None:
        grown = dataclasses.replace(grown, trace_every=trace_every)
        info["resumed"][-1]["trace_every"] = trace_every
    if "ended" in info:
        tabled = {j.key for j in cfg.jobs()} | set(info.get("tabled_jobs", []))
        if unseen:
            tabled -= {j.key for j in cfg.jobs() if j.kind == "census"}
            info["retabled"] = list(CENSUS_TABLES)
            info["resumed"][-1]["census_again_for"] = list(unseen)
        info["tabled_jobs"] = sorted(tabled)
        del info["ended"]
    info["numerics_config"] = grown.record()
    info["resumed"][-1].update(added_modes=list(new), commit=here.get("commit"))
    what = ", ".join(new) + (f" (census again for {', '.join(unseen)})" if unseen else "")
    base.log(f"adding {what} to {run_dir}")
    return grown


def run_into(cfg: NumericsConfig, folder: Path, info: RunEnv) -> None:
    """Run the study, or what is left of it, into `folder`, whose env.json (`info`) the caller
    wrote; then mark it ended. It takes no lock: the caller holds the folder's.
    `info["tabled_jobs"]` names jobs whose rows the folder's tables already hold (a study that
    modes were added to): they are not run, and their rows are kept."""
    _run(cfg, folder, frozenset(info.get("tabled_jobs", ())), set(info.get("retabled", ())))
    info.pop("tabled_jobs", None)  # every job's rows are in the tables now
    info.pop("retabled", None)
    info["ended"] = folders.iso()
    results.write_env(folder, info)


def run_short(cfg: RunConfig, size: object, folder: Path, info: RunEnv) -> None:
    """The short numerics study, before the timed cases (it resumes if it was interrupted)."""
    if (folder / results.ENV).is_file() and "ended" in results.read_env(folder):
        return
    # Only a workload whose card allows the short study gets here (`RunConfig` refuses it else).
    ncfg = short_config(
        device=cfg.device,
        model=cfg.model,
        size=size,
        modes=list(cfg.modes),
        batch_sizes=list(cfg.batch_sizes),
        optimizer="fused" if "fused" in cfg.optimizers else cfg.optimizers[0],
    )
    folder.mkdir(exist_ok=True)
    sub = {
        **info,
        "run_name": f"{info['run_name']}/{results.NUMERICS_DIR}",
        "numerics_config": ncfg.record(),
    }
    for key in ("ceilings", "config", "expected_cases"):
        sub.pop(key, None)
    results.write_env(folder, sub)
    base.log(f"short numerics study into {folder}")
    run_into(ncfg, folder, sub)


def _run(
    cfg: NumericsConfig,
    run_dir: Path,
    tabled: frozenset[str] = frozenset(),
    retabled: set[str] | None = None,
) -> None:
    """Run the study into `run_dir`, or what is left of it: the audit and the jobs already kept
    there (in `jobs/`, or in its tables: `tabled`) are not run again. Writes the tables; of the
    tables named in `retabled` (census jobs run again) the old rows are dropped, and census rows
    of `failed` with them."""
    if not (run_dir / tables.AUDIT_JSON).is_file():
        tensor_rows, op_rows, audit_json = audit.run(resolve(cfg.audit_case()), modes_of())
        _keep_audit_tracebacks(run_dir, audit_json)
        tables.write(run_dir, "audit", tables.frame("audit", tensor_rows))
        tables.write(run_dir, "audit_ops", tables.frame("audit_ops", op_rows))
        (run_dir / tables.AUDIT_JSON).write_text(json.dumps(audit_json, indent=2) + "\n")
        base.log("dtype audit written")
    else:
        _audit_added_modes(cfg, run_dir)
    todo = cfg.jobs()
    kept = _kept(run_dir, todo)
    kept.update({key: {} for key in tabled})  # their rows come from the tables below
    if kept:
        base.log(f"{len(kept)} of {len(todo)} jobs already done, running the rest")
    pending = [j for j in todo if j.key not in kept]
    fresh = jobs.run_all(
        jobs.run_job,
        pending,
        workers=cfg.workers,
        cost=lambda j: j.cost,
        describe=lambda j: j.label,
        on_done=lambda job, out: _keep(run_dir, job, out),
    )
    done = {**kept, **{j.key: out for j, out in zip(pending, fresh, strict=True)}}
    rows: dict[str, list[dict]] = {}
    for job in todo:  # in the jobs' order, resumed or not
        for name, job_rows in done[job.key].items():
            rows.setdefault(name, []).extend(job_rows)
    frames = {name: tables.frame(name, rows.get(name, [])) for name in JOB_TABLES}
    if tabled:  # the rows of the jobs the tables already hold, first, as they were
        frames = {
            name: pd.concat([_old_rows(run_dir, name, retabled or set()), df], ignore_index=True)
            if not df.empty
            else _old_rows(run_dir, name, retabled or set())
            for name, df in frames.items()
        }
    for name, df in frames.items():
        tables.write(run_dir, name, df)
    summary = summarize_runs(frames["steps"], frames["evals"], frames["runs"], cfg.steps)
    tables.write(run_dir, "summary", summary)
    if (run_dir / JOBS_DIR).is_dir():
        shutil.rmtree(run_dir / JOBS_DIR)  # every row is in the tables now


def _old_rows(run_dir: Path, name: str, retabled: set[str]) -> pd.DataFrame:
    """A table's rows as the folder holds them, less those that jobs run again replace."""
    old = tables.read(run_dir, name)
    if name in retabled:
        return old.iloc[:0]
    if name == "failed" and retabled:
        return old[old["kind"] != "census"]
    return old


def _audit_added_modes(cfg: NumericsConfig, run_dir: Path) -> None:
    """Audit the modes of the study that its audit has not seen (modes added to it), appending
    their rows to the audit tables and audit.json."""
    found = tables.audit_json(json.loads((run_dir / tables.AUDIT_JSON).read_text()))
    seen = set(found["chains"]) | set(found["unsupported"])
    missing = tuple(m for m in cfg.modes if m not in seen)
    if not missing:
        return
    tensor_rows, op_rows, more = audit.run_modes(resolve(cfg.audit_case()), modes_of(missing))
    _keep_audit_tracebacks(run_dir, more)
    for name, new_rows in (("audit", tensor_rows), ("audit_ops", op_rows)):
        old = tables.read(run_dir, name)
        tables.write(run_dir, name, pd.concat([old, tables.frame(name, new_rows)]))
    found["chains"].update(more["chains"])
    found["unsupported"].update(more["unsupported"])
    found["tracebacks"].update(more["tracebacks"])
    (run_dir / tables.AUDIT_JSON).write_text(json.dumps(found, indent=2) + "\n")
    base.log(f"dtype audit of {', '.join(missing)} added")


def _keep_audit_tracebacks(run_dir: Path, found: dict) -> None:
    """The tracebacks of the modes the audit failed on saved in `errors/audit_<mode>.txt`;
    `found["tracebacks"]` (audit.json's) names each file instead of holding its text."""
    found["tracebacks"] = {
        mode: errors.save(run_dir, f"audit_{mode}", text)
        for mode, text in found.get("tracebacks", {}).items()
    }


def _keep(run_dir: Path, job: Job, out: dict[str, list[dict]]) -> None:
    """Keep a finished job's rows in `jobs/` (a resumed study does not run it again), the
    tracebacks of its failed rows saved in `errors/` first: in `out` itself, whose rows the
    study's tables get."""
    if out.get("failed"):
        out["failed"] = _keep_job_tracebacks(run_dir, job, out["failed"])
    folder = run_dir / JOBS_DIR
    folder.mkdir(exist_ok=True)
    tmp = folder / f".{job.key}.tmp"
    tmp.write_text(json.dumps(out))
    tmp.replace(folder / f"{job.key}.json")  # atomic: a kill never leaves half a file


def _keep_job_tracebacks(run_dir: Path, job: Job, rows: list[dict]) -> list[dict]:
    """A job's failed rows with their tracebacks in `errors/<job key>.txt`: a census trajectory
    that failed for one of the modes it compares names that mode after the key, and a name that
    repeats (the same mode at another checkpoint) gets `-2`, `-3`, ...."""
    out, used = [], set()
    for row in rows:
        name = job.key if row.get("mode") == job.case.mode else f"{job.key}_{row.get('mode')}"
        unique, n = name, 1
        while unique in used:
            n += 1
            unique = f"{name}-{n}"
        used.add(unique)
        out.append(errors.keep(run_dir, row, unique))
    return out


def _kept(run_dir: Path, todo: list[Job]) -> dict[str, dict[str, list[dict]]]:
    keys = {j.key for j in todo}
    folder = run_dir / JOBS_DIR
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return {f.stem: json.loads(f.read_text()) for f in files if f.stem in keys}
