"""Launching a run on several ranks through torchrun, and going on when a case ends the run: the
case in flight (`inflight.json`) is written as a row and the run is resumed, until a launch adds
no row (docs/several-gpus.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import outcome
from bench.faults import TRACEBACK_TEXT, UsageError
from bench.store import errors, jsonlines, results

INFLIGHT = "inflight.json"
RUN_DIR_VAR = "AMPBENCH_RUN_DIR_FILE"
"""Environment variable: the file where rank 0 writes the path of its results folder."""


def check_ranks(nproc: int, device: str, *, oversubscribe: bool = False) -> None:
    """Refuse, before any process starts, more ranks than this machine holds: on CUDA one GPU per
    rank (NCCL cannot put two ranks of a group on one GPU), on the CPU one core per gloo rank
    unless `oversubscribe` (ranks that share cores take turns in every collective: a test of the
    code, not a measurement)."""
    if device == "cuda":
        import torch  # here: the launcher's other work needs no torch

        visible = torch.cuda.device_count()
        if nproc > visible:
            raise UsageError(f"--gpus {nproc} but {visible} GPU(s) are visible")
        return
    cores = os.cpu_count() or 1
    if nproc > cores and not oversubscribe:
        raise UsageError(
            f"--gpus {nproc} on the CPU would start {nproc} gloo processes on {cores} core(s); "
            "give --oversubscribe to start them anyway"
        )


def launched() -> bool:
    """Whether this process is a rank of a run this launcher started (not a torchrun started by
    hand)."""
    return bool(os.environ.get(RUN_DIR_VAR))


def _passed(run_dir: Path) -> bool:
    """Whether some case of the folder passed (a resumed case's last row wins)."""
    last = {r.get("case_id"): r.get("status") for r in results.read_rows(run_dir / results.ROWS)}
    return "ok" in last.values()


def record_run_dir(run_dir: Path) -> None:
    """Tell the launcher (if there is one) which folder this run writes."""
    path = os.environ.get(RUN_DIR_VAR)
    if path:
        Path(path).write_text(str(Path(run_dir).resolve()))


def mark_inflight(run_dir: Path, row: dict) -> None:
    tmp = run_dir / f".{INFLIGHT}.tmp"
    tmp.write_text(jsonlines.dumps(row))  # a row, as rows.jsonl has it
    tmp.replace(run_dir / INFLIGHT)


def note_fault(run_dir: Path, rank: int, row: dict) -> None:
    """A rank's own account of a failed case, beside the mark of the case in flight."""
    note = {"rank": rank, "case_id": row.get("case_id"), "status": row["status"]}
    note["error"] = row["error"]
    if row.get(TRACEBACK_TEXT):
        note[TRACEBACK_TEXT] = row[TRACEBACK_TEXT]
    (run_dir / f"{INFLIGHT}.rank{rank}").write_text(json.dumps(note))


def _note_files(run_dir: Path) -> list[tuple[Path, dict]]:
    """Every rank's note beside the mark, parsed (an unreadable one as empty)."""
    out = []
    for path in sorted(run_dir.glob(f"{INFLIGHT}.rank*")):
        try:
            out.append((path, json.loads(path.read_text())))
        except (OSError, json.JSONDecodeError):
            out.append((path, {}))
    return out


def _of_case(note: dict, case_id: object) -> bool:
    """Whether a note is on case `case_id` (a note of another case is a later case's: a rank
    that went on to the next case may have written it already)."""
    return note.get("case_id", case_id) == case_id


def clear_inflight(run_dir: Path, case_id: object = None) -> None:
    """Remove the mark of the case in flight and the ranks' notes on `case_id` (all notes when
    None)."""
    (run_dir / INFLIGHT).unlink(missing_ok=True)
    for path, note in _note_files(run_dir):
        if case_id is None or _of_case(note, case_id):
            path.unlink(missing_ok=True)


def complete_inflight(run_dir: Path, reason: str) -> bool:
    """Write the case in flight as a row with `reason` as its error, and what a failed rank
    noted before the run ended (its status wins over `timeout`, its traceback is kept in
    `errors/`); False when none was."""
    path = run_dir / INFLIGHT
    if not path.is_file():
        return False
    row = json.loads(path.read_text())
    notes = [n for _, n in _note_files(run_dir) if n and _of_case(n, row.get("case_id"))]
    row["error"] = "; ".join(
        [row.get("error") or reason, *(f"rank {n['rank']}: {n['error']}" for n in notes)]
    )
    if notes:
        row["status"] = notes[0]["status"]
    text = errors.of_ranks((n["rank"], n.get(TRACEBACK_TEXT)) for n in notes)
    if text is not None:
        row[TRACEBACK_TEXT] = text
    row = errors.keep(run_dir, row, str(row.get("case_id")))
    results.append_jsonl(run_dir / results.ROWS, row)
    clear_inflight(run_dir, row.get("case_id"))
    return True


def resume_hint(run_dir: Path, world_size: int) -> str:
    """What to run after a broken group ended a run that no launcher of ours started."""
    done = len({r.get("case_id") for r in results.read_rows(Path(run_dir) / results.ROWS)})
    return (
        f"the run ended with {done} case(s) in {run_dir}; finish it with the same torchrun "
        f"command on every host, ending in `-m bench run --resume {run_dir} --gpus {world_size}`"
    )


def _rows(run_dir: Path) -> int:
    return len(results.read_jsonl(run_dir / results.ROWS))


def _finished(run_dir: Path) -> bool:
    try:
        return "ended" in results.read_env(run_dir)
    except results.CorruptFolder:
        return False


def _run(command: list[str], env: dict[str, str]) -> int:
    """Run torchrun to its end. A SIGTERM to this process (an outer `timeout`) ends torchrun
    too, which ends its ranks, rather than leaving them holding the GPUs."""
    proc = subprocess.Popen(command, env=env)
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        return proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def launch(
    nproc: int,
    argv: list[str],
    *,
    keep: list[str] | None = None,
    worker: list[str] | None = None,
    log=lambda msg: print(f"ampbench: {msg}", file=sys.stderr, flush=True),
) -> int:
    """Run `python -m bench ARGV` on `nproc` ranks through torchrun until the run finishes or a
    launch adds no row; returns the last launch's exit status. `keep`: options carried to a relaunch
    (`run --resume FOLDER --gpus N`); `worker`: what torchrun runs instead of `-m bench` (tests).
    This process, not the ranks, writes the folder's `bench.outcome` file."""
    fd, run_file = tempfile.mkstemp(prefix="ampbench-run-")
    os.close(fd)
    env = {k: v for k, v in os.environ.items() if k != outcome.RESULT_VAR}
    env[RUN_DIR_VAR] = run_file
    args = list(argv)
    rows_before = -1
    try:
        while True:
            command = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                f"--nproc-per-node={nproc}",
                *(worker or ["-m", "bench"]),
                *args,
            ]
            code = _run(command, env)
            text = Path(run_file).read_text().strip()
            if text:
                outcome.note_folder(Path(text))
            if code == 0 and text and not _passed(Path(text)):
                # Rank 0 exits 0 when a finished run passed no case (`bench.commands.run`): a rank's
                # status 1 would make torchrun print a traceback after the report's last line.
                return 1
            if code == 0 or not text:
                return code
            run_dir = Path(text)
            if _finished(run_dir):
                return code
            recorded = complete_inflight(
                run_dir,
                f"the run's processes ended while this case ran (torchrun exit status {code}: a "
                "rank died or was stopped by its collective timeout; the log names the rank)",
            )
            rows = _rows(run_dir)
            if not recorded and rows == rows_before:
                log(f"the run ended with status {code} and added no row; stopping")
                return code
            rows_before = rows
            log(f"the run ended during a case (status {code}); going on with --resume {run_dir}")
            args = ["run", "--resume", str(run_dir), "--gpus", str(nproc), *(keep or [])]
    except (KeyboardInterrupt, SystemExit):
        # Stopped from outside (Ctrl-C, an outer `timeout`): the case in flight did not fail,
        # so it must not become a row when the run is resumed; `--resume` measures it again.
        text = Path(run_file).read_text().strip()
        if text:
            outcome.note_folder(Path(text))
            clear_inflight(Path(text))
        raise
    finally:
        Path(run_file).unlink(missing_ok=True)
