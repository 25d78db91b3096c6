"""A grid's plans into a folder: the loop of a timing run, in rounds (`run --rounds N`, interleaved
as asv's: docs/methodology.md). Rows and samples are appended as each case ends, so a kill loses
only the case in flight and a resume skips every case whose row is there."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.cases.case import Case
from bench.execution import launch
from bench.execution.distributed import GroupBroken, World
from bench.measure import derived, ranks, runner
from bench.plan.plan import Plan
from bench.store import errors, results
from bench.store.run_env import Ceilings


def run_suite(
    plans: list[Plan],
    run_dir: Path,
    ceilings: Ceilings,
    *,
    world: World | None = None,
    rounds: int = 1,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True),
) -> None:
    """Run every plan's case not yet done in `run_dir`, `rounds` passes over the grid, appending
    rows and samples as it goes. A case is done when its row is there and, for an `ok` row, its
    samples too (a kill between the two writes re-runs it). On several ranks (one round) every rank
    calls this and rank 0 alone writes, marking the case in flight (`bench.execution.launch`);
    `GroupBroken` ends the suite with the case's `timeout` row written."""
    world = world or World.single()
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    if rounds > 1 and world.distributed:
        raise ValueError("--rounds is for a one-process run; a run of several ranks has 1")
    done = world.broadcast(done_cases(run_dir) if world.leader else None)
    start = time.monotonic()
    for r in range(1, rounds + 1):
        kept = kept_rounds(run_dir) if rounds > 1 else {}
        for i, plan in enumerate(plans, 1):
            case = plan.case
            if case.case_id in done or (r < rounds and len(kept.get(case.case_id, [])) >= r):
                continue
            if world.leader:
                passes = f" round {r}/{rounds}" if rounds > 1 else ""
                elapsed = time.monotonic() - start
                log(f"[{i}/{len(plans)}]{passes} {case.case_id} (elapsed {elapsed:.0f} s)")
            row, samples, extra = _measure(plan, ceilings, world, run_dir)
            if not world.leader:
                continue
            if r < rounds and row["status"] == "ok":
                windows = split_windows(case, samples)
                results.append_jsonl(
                    run_dir / results.ROUNDS,
                    {"case_id": case.case_id, "round": r, "repeats_ms": windows},
                )
                log(f"    round {r}: {row['total_ms']:.3f} ms/step")
                continue
            if rounds > 1 and row["status"] == "ok":
                samples = _with_rounds(samples, kept.get(case.case_id, []))
                row = {**derived.rederive(plan, row, samples), "rounds": rounds}
            done.add(case.case_id)
            row = _write(run_dir, case, row, samples, extra, elapsed_s=time.monotonic() - start)
            summary = f"{row['total_ms']:.3f} ms/step" if row["status"] == "ok" else row["error"]
            if row.get(errors.COLUMN):
                summary += f" (traceback: {run_dir / row[errors.COLUMN]})"
            log(f"    {row['status']}: {summary}")


def _measure(
    plan: Plan, ceilings: Ceilings, world: World, run_dir: Path
) -> tuple[dict, dict[str, list[float]], dict]:
    """One case's row, samples and (on several ranks) the ranks' extra samples."""
    if not world.distributed:
        return (*runner.run_case(plan, ceilings), {})
    if world.leader:
        launch.mark_inflight(run_dir, ranks.skeleton(plan, world))
    try:
        return ranks.run_case_on_ranks(plan, ceilings, world)
    except GroupBroken as exc:
        if world.leader:
            launch.complete_inflight(run_dir, str(exc))
        raise


def _write(
    run_dir: Path, case: Case, row: dict, samples: dict, extra: dict, *, elapsed_s: float
) -> dict:
    """Append the case's row (its traceback saved in `errors/`) and samples; returns the row as
    written."""
    row = errors.keep(run_dir, {**row, "elapsed_s": elapsed_s}, case.case_id)
    results.append_jsonl(run_dir / results.ROWS, row)
    if samples:
        results.append_jsonl(
            run_dir / results.SAMPLES,
            {
                "case_id": case.case_id,
                "samples_ms": samples,
                **repeat_windows(case, samples),
                **extra,
            },
        )
    launch.clear_inflight(run_dir, case.case_id)
    return row


def _with_rounds(
    samples: dict[str, list[float]], earlier: list[dict[str, list[list[float]]]]
) -> dict[str, list[float]]:
    """The last round's samples after the windows of the rounds before it, phase by phase."""
    merged = {}
    for name, values in samples.items():
        before = [ms for windows in earlier for w in windows.get(name, []) for ms in w]
        merged[name] = before + values if not name.startswith("nosync_") else values
    return merged


def kept_rounds(run_dir: Path) -> dict[str, list[dict[str, list[list[float]]]]]:
    """case id -> the `repeats_ms` of each round before the last already timed, in order."""
    out: dict[str, list[dict]] = {}
    for rec in sorted(results.read_rows(run_dir / results.ROUNDS), key=lambda r: r["round"]):
        out.setdefault(rec["case_id"], []).append(rec["repeats_ms"])
    return out


def split_windows(case: Case, samples: dict[str, list[float]]) -> dict[str, list[list[float]]]:
    """Each timed phase's samples split into windows of `case.steps` steps (the samples of a
    distributed case's window without gradient sync are left out)."""
    n = case.steps
    total = len(samples.get("total", []))
    count = total // n if total % n == 0 else 0
    return {
        name: [values[i * n : (i + 1) * n] for i in range(count)]
        for name, values in samples.items()
        if not name.startswith("nosync_") and len(values) == count * n
    }


def repeat_windows(case: Case, samples: dict[str, list[float]]) -> dict[str, object]:
    """samples.jsonl's `repeats_ms` (only for a case timed in more than one window, over its
    repeats and rounds): `{phase: [[window 1], [window 2], ...]}`. The flat `samples_ms` beside
    it keeps every step, as a folder without repeats has it."""
    windows = split_windows(case, samples)
    return {"repeats_ms": windows} if len(windows.get("total", [])) >= 2 else {}


def done_cases(run_dir: Path) -> set[str]:
    sampled = {r["case_id"] for r in results.read_rows(run_dir / results.SAMPLES)}
    return {
        r["case_id"]
        for r in results.read_rows(run_dir / results.ROWS)
        if r.get("status") != "ok" or r["case_id"] in sampled
    }
