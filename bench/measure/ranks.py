"""A case in a run of several ranks: every rank measures it, and rank 0 makes one row of them,
the slowest rank's (a synchronized step is as slow as its slowest rank) with the spread over
ranks; a case that failed on any rank is one row naming the first real failure."""

from __future__ import annotations

import math

from bench.execution import launch
from bench.execution.distributed import World
from bench.faults import TRACEBACK_TEXT
from bench.measure.runner import global_batch_size, run_case
from bench.plan.plan import Plan
from bench.store import errors
from bench.store.run_env import Ceilings

BROKEN = ("error", "oom", "timeout")
"""Statuses after which a rank may have left a collective that its peers joined unanswered."""


def skeleton(plan: Plan, world: World) -> dict[str, object]:
    """The row a case gets when the run ends while it runs (`bench.execution.launch` completes
    it)."""
    case = plan.case
    return {
        "case_id": case.case_id,
        **case.axes(),
        "status": "timeout",
        "error": "",
        "world_size": world.size,
        **world.place(),
        **place_columns(world.places),
        "global_batch_size": global_batch_size(plan, world.size),
    }


def place_columns(places: list[dict]) -> dict[str, object]:
    """Where the ranks ran, from each rank's place (host, node rank) in rank order: `hosts` (the
    distinct hosts), `rank_hosts` and `rank_node_ranks` (one entry a rank, comma-separated, in
    rank order) and `nodes` (how many torchrun agents). Empty without places."""
    if not places:
        return {}
    hosts = [str(p.get("host")) for p in places]
    node_ranks = [p.get("node_rank", 0) for p in places]
    return {
        "hosts": ",".join(sorted(set(hosts))),
        "rank_hosts": ",".join(hosts),
        "rank_node_ranks": ",".join(map(str, node_ranks)),
        "nodes": len(set(node_ranks)),
    }


def run_case_on_ranks(
    plan: Plan, ceilings: Ceilings, world: World
) -> tuple[dict, dict[str, list[float]], dict[str, object]]:
    """(row, the slowest rank's samples, extra samples: every rank's totals and the window
    without gradient synchronization). Raises `GroupBroken` when a rank never answers."""
    case = plan.case
    row, samples = run_case(plan, ceilings, world)
    if row["status"] in BROKEN and world.run_dir is not None:
        # Should the group break over this case (another rank stuck in a collective this rank
        # never joined, and ended by its watchdog), the launcher finds this rank's own account
        # of it here: rank 0's too, which could not write its row.
        launch.note_fault(world.run_dir, world.rank, row)
    outcomes = world.exchange((row, samples), f"case {case.case_id}")
    merged = merge(outcomes)
    statuses = {r["status"] for r, _ in outcomes}
    if plan.parallel.distributed:
        if statuses & set(BROKEN):
            world.renew()  # a collective some rank never joined leaves the group out of step
        else:
            world.drain()
    return merged


MEASURED = ("ok", "nonfinite")
"""Statuses whose rows hold real timings."""


def merge(
    outcomes: list[tuple[dict, dict[str, list[float]]]],
) -> tuple[dict, dict[str, list[float]], dict[str, object]]:
    """One row of every rank's (row, samples), in rank order."""
    rows = [row for row, _ in outcomes]
    # A non-finite loss is measured like a passing case (its times are real); only its status
    # and error say what went wrong, as in a one-process run.
    failed = [(rank, row) for rank, row in enumerate(rows) if row["status"] not in MEASURED]
    if failed:
        if all(row["status"] == "unsupported" for _, row in failed):
            return {**rows[0], **place_columns(rows)}, {}, {}
        # A real failure explains the timeouts of the ranks that waited for it: name it first.
        failed.sort(key=lambda item: (item[1]["status"] == "timeout", item[0]))
        out = {k: v for k, v in rows[0].items() if k != TRACEBACK_TEXT}
        out.update(place_columns(rows))
        out["status"] = failed[0][1]["status"]
        out["error"] = _errors(failed)
        out["failed_ranks"] = ",".join(str(rank) for rank, _ in sorted(failed))
        text = errors.of_ranks((rank, row.get(TRACEBACK_TEXT)) for rank, row in failed)
        if text is not None:  # every failed rank's, in the order of `error`
            out[TRACEBACK_TEXT] = text
        return out, {}, {}
    slowest = max(range(len(rows)), key=lambda rank: rows[rank]["total_ms"])
    out = dict(rows[slowest])
    totals = [row["total_ms"] for row in rows]
    out["slowest_rank"] = slowest
    out["rank_total_ms_min"] = min(totals)
    out["rank_total_ms_max"] = max(totals)
    out["rank_spread_pct"] = (max(totals) - min(totals)) / max(totals) * 100
    out.update(place_columns(rows))
    odd = [(rank, row) for rank, row in enumerate(rows) if row["status"] != "ok"]
    if odd:
        out["status"] = odd[0][1]["status"]
        out["error"] = _errors(odd)
    for key in ("peak_alloc_gib", "peak_reserved_gib"):
        values = [v for row in rows if _finite(v := row.get(key))]
        out[key] = max(values) if values else math.nan
        out[f"{key}_spread"] = max(values) - min(values) if values else math.nan
    # Any rank's leftover of an earlier case makes the row's peaks unreadable
    # (`bench.store.results`).
    residues = [v for row in rows if _finite(v := row.get("residue_gib"))]
    out["residue_gib"] = max(residues) if residues else math.nan
    samples = outcomes[slowest][1]
    timed = {k: v for k, v in samples.items() if not k.startswith("nosync_")}
    extra: dict[str, object] = {
        "rank_total_ms": [s.get("total", []) for _, s in outcomes],
        "nosync_ms": {
            k.removeprefix("nosync_"): v for k, v in samples.items() if k.startswith("nosync_")
        },
    }
    return out, timed, extra


def _errors(ranked: list[tuple[int, dict]]) -> str:
    return "; ".join(f"rank {rank}: {row['error']}" for rank, row in ranked)


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)
