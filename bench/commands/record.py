"""`ampbench record`: the record made or continued (`bench.jobs.record`), then the replication
page of its two studies (`bench.quality.render.replicate`); or, with `--status`, where the
newest record is."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from bench.faults import UsageError
from bench.jobs import record as job
from bench.measure import env
from bench.quality.render import replicate as quality_replicate
from bench.store import record as store
from bench.text.tables import markdown


def run(args: argparse.Namespace) -> int:
    if args.status:
        if args.budget or args.new or args.compare_with:
            raise UsageError("--status reads a record: no --budget, --new or --compare-with")
        return status(args.results_dir)
    cfg = job.RecordConfig(device=env.device(args.device), budget_s=args.budget, new=args.new,
                           compare_with=args.compare_with)  # fmt: skip
    folder, complete = job.start(cfg, results_dir=args.results_dir)
    if complete:
        print(f"ampbench: {folder} is complete; --new starts another record of this commit")
        print(folder)
        return 0
    rec = job.run(cfg, folder, command=args.command_line)
    replication(folder, rec)
    print(table(rec))
    print(folder)
    return 0 if all(p.status != store.FAILED for p in rec.parts) else 1


def replication(folder: Path, rec: store.Record) -> None:
    """replication.md in both study folders, once both studies are done."""
    parts = [rec.part(n) for n in ("quality", "replication")]
    if all(p.status == store.DONE and p.folder for p in parts):
        first, second = (folder / p.folder for p in parts)
        if not (second / quality_replicate.PAGE).is_file():
            quality_replicate.write(first, second)


def table(rec: store.Record) -> str:
    rows = [{"part": p.name, "status": p.status, "exit": "" if p.exit is None else str(p.exit),
             "wall s": f"{p.wall_s:.0f}",
             "folder": p.folder or p.log or "", "why": p.why} for p in rec.parts]  # fmt: skip
    return markdown(pd.DataFrame(rows))


def status(results_dir: Path) -> int:
    """The newest record's status line, made current (time left, whether its process runs),
    the running part's last log line and each part's status."""
    folder = store.newest([results_dir])
    if folder is None:
        raise UsageError(f"record --status: no record under {results_dir}")
    rec = store.read(folder)
    try:
        said = store.read_status(folder)
    except (OSError, ValueError):  # a call that has not begun a part yet
        said = None
    if said is not None:
        print(store.status_line(said, now=time.time(), alive=store.alive(said["pid"])))
        if said["state"] == "running" and said.get("part_log"):
            print(f"  last line: {store.last_line(Path(said['part_log']))}")
    else:
        print(f"record {folder.name} at {rec.commit[:7]}: no call has begun a part yet")
    for p in rec.parts:
        why = f" ({p.why})" if p.why else ""
        print(f"  {p.name}: {p.status}{why}")
    print(folder)
    return 0
