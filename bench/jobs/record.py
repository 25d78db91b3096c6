"""`ampbench record` as a job (docs/options.md): everything published for one commit, part by part
(`PARTS`, in order of value) into one record folder, each a command in a fresh process with its
log (record.json: `bench.store.record`). A later call goes on at the same commit only; `--budget`
bounds a call; on the CPU each part runs at tiny sizes (`TINY`), so CI tests the whole record."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import outcome
from bench.faults import UsageError
from bench.jobs import ab
from bench.lifecycle.folder import log
from bench.measure import env
from bench.store import folders, paths, results
from bench.store import record as store

STOP_GRACE_S = 60.0
"""How long a part stopped with SIGINT (at the budget, or when the record is stopped) may take
to keep what it finished before it is killed."""


@dataclass(frozen=True)
class Part:
    """One thing a record makes. `need_s`: the least time left, per device, that a call starts
    it with (a floor for planning, not a measurement; a part that runs past the call's budget
    is stopped and goes on in the next call). `budget`: the part takes a `--budget` of its own."""

    name: str
    what: str
    need_s: dict[str, float]
    budget: bool = False


PARTS = (
    Part("run", "the default run (`./run_bench.sh`)", {"cuda": 300, "cpu": 20}),
    Part("ab", "`ab` of the previous record's commit against this one", {"cuda": 420, "cpu": 30}),
    Part("quality", "the nanoGPT quality study with looks", {"cuda": 900, "cpu": 20}, True),
    Part("replication", "the same study on seeds from 1000", {"cuda": 900, "cpu": 20}, True),
    Part("sweep", "`sweep` on examples/own_loop/hf_trainer.py", {"cuda": 600, "cpu": 30}),
    Part("tests", "the README's `./run_tests.sh`", {"cuda": 420, "cpu": 20}),
    Part("gpu-lane", "the GPU lane (`scripts/gpu_tests.sh`)", {"cuda": 300, "cpu": 0}),
)
"""In order of value: a call that runs out of budget leaves the last ones for the next."""

AB_GRID = ("--preset", "seed", "--modes", "fp32,tf32,fp16-amp,bf16-amp,bf16-pure",
           "--batch-sizes", "256,1024", "--optimizers", "fused", "--variants", "eager",
           "--no-overhead", "--repeats", "1")  # fmt: skip
"""docs/ci/ab.yml's grid: ten quiet cases, one timed window a process (a round is a process)."""
QUALITY = ("--model", "gpt", "--preset", "shakespeare-char", "--max-seeds", "8")
"""docs/quality.md's study with looks, at nanoGPT's Shakespeare setup (a GPU's defaults)."""
REPLICA_SEEDS = "1000,1001,1002"
"""The replication's first look: `quality --replicate`'s second study (`bench.quality.job`)."""
HF_TRAINER = ("examples/own_loop/hf_trainer.py", "--steps", "500")
"""docs/own-loop.md's driver command."""
TRAINER_NEEDS = ("transformers", "accelerate")
PLAIN_LOOP = ("examples/own_loop/plain_loop.py", "--steps", "300", "--eval-every", "100",
              "--eval-batches", "10")  # fmt: skip
"""What the sweep runs where transformers or accelerate, which the Trainer needs, is missing."""
TESTS = ("./run_tests.sh", "-p", "no:cacheprovider", "--durations=10")
GPU_LANE = ("scripts/gpu_tests.sh", "-p", "no:cacheprovider", "--durations=10")

TINY = {
    "run": ("--device", "cpu", "--preset", "tiny", "--modes", "fp32", "--batch-sizes", "8",
            "--optimizers", "foreach", "--variants", "eager", "--steps", "3", "--warmup", "1",
            "--repeats", "1", "--no-overhead"),
    "quality": ("--device", "cpu", "--modes", "fp32", "--max-seeds", "4", "--steps", "2",
                "--eval-every", "2", "--batch-size", "2", "--heldout-limit", "2",
                "--timing-steps", "1", "--warmup", "1"),
    "sweep": ("--device", "cpu", "--modes", "fp32", "--seeds", "0"),
    "script": ("examples/own_loop/plain_loop.py", "--preset", "tiny", "--steps", "6",
               "--batch-size", "2", "--eval-every", "3", "--eval-batches", "1", "--every", "3"),
    "tests": ("./run_tests.sh", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
              "tests/test_layout.py::test_imports_are_read_at_any_depth"),
}  # fmt: skip
"""Each part at the CPU's tiny sizes: the record end to end in seconds (tests/test_record.py)."""

CHILD_ENV_DROPPED = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")
"""A part is a session of its own, never a worker of a caller's pytest (as `run_bench.sh
pytest` does)."""

Runner = Callable[[list[str], Path, dict[str, str], float | None], tuple[int, str]]
"""Runs one part's command line with its log, environment and deadline (a time.time(), or
None): (exit status, why it was stopped, or "")."""


@dataclass(frozen=True)
class RecordConfig:
    device: str
    budget_s: float = 0
    """This call's device time (0: none); each call has its own."""
    new: bool = False
    """Start a new record even where the newest one is unfinished."""
    compare_with: str | None = None
    """The revision `ab` compares this commit with; None: the previous record's commit;
    `NONE`: no `ab`."""


NONE = "none"


@dataclass(frozen=True)
class Step:
    """A part planned: its command line, or why it is skipped; `done`: its folder is already
    complete (a call killed after the part ended)."""

    argv: list[str] = dataclasses.field(default_factory=list)
    skip: str = ""
    done: Path | None = None


def start(cfg: RecordConfig, *, results_dir: Path) -> tuple[Path, bool]:
    """The record this call makes or goes on with: (its folder, whether it was already complete).
    UsageError where the newest record is unfinished and of another commit or machine."""
    sha, dirty = env.git_commit()
    if sha is None:
        raise UsageError(
            "record: the commit is not known (no git here): set AMPBENCH_GIT_COMMIT to it"
        )
    gpu = env.gpu_name(cfg.device)
    last = store.newest([results_dir]) if not cfg.new else None
    if last is not None:
        there = store.read(last)
        if there.commit != sha and not there.complete:
            raise UsageError(
                f"record: {last.name} is unfinished and of commit {there.commit[:7]}, this "
                f"checkout is {sha[:7]}: finish it there, or start one here with --new"
            )
        if there.commit == sha:
            if (there.device, there.gpu) != (cfg.device, gpu):
                raise UsageError(
                    f"record: {last.name} was made on {there.gpu} ({there.device}), this is "
                    f"{gpu} ({cfg.device}): a record is one machine's; --new starts another"
                )
            return last, there.complete
    now = folders.utc_now()
    folder = folders.create(results_dir, folders.run_dir_name(now, gpu, sha, store.SUFFIX))
    (folder / store.LOGS).mkdir()
    parts = [store.Entry(name=p.name, what=p.what) for p in PARTS]
    rec = store.Record(commit=sha, dirty=dirty, device=cfg.device, gpu=gpu,
                       started=folders.iso(now), parts=parts)  # fmt: skip
    store.write(folder, rec)
    return folder, False


def run(
    cfg: RecordConfig,
    folder: Path,
    *,
    command: str,
    runner: Runner | None = None,
    clock: Callable[[], float] = time.time,
) -> store.Record:
    """Make every part of the record in `folder` that is not finished (`store.FINISHED`), in
    order, within `cfg.budget_s`; the record as it ended. A part that cannot start in the time
    left is `not run`, with why; one the budget stops is `stopped`, and the next call resumes
    or reruns it. Stopped by a signal (KeyboardInterrupt), the running part is stopped first."""
    runner = runner or spawn
    began = clock()
    deadline = began + cfg.budget_s if cfg.budget_s else None
    with folders.locked(folder):
        rec = store.read(folder)
        rec.calls.append({"started": folders.iso(), "budget_s": cfg.budget_s,
                          "pid": os.getpid(), "command": command})  # fmt: skip
        store.write(folder, rec)
        for index, part in enumerate(PARTS, 1):
            entry = rec.part(part.name)
            if entry.status in store.FINISHED:
                continue
            left = None if deadline is None else deadline - clock()
            need = part.need_s[rec.device]
            if left is not None and left < need:
                entry.status = store.NOT_RUN
                entry.why = f"{left:.0f} s of the budget left; it starts with {need:.0f} s or more"
                store.write(folder, rec)
                continue
            step = plan(part, rec, folder, entry, _budget_of(part, rec, left), cfg.compare_with)
            if step.skip or step.done:
                entry.status, entry.why = (store.SKIPPED, step.skip) if step.skip else (
                    store.DONE, "")  # fmt: skip
                if step.done:
                    entry.folder = os.path.relpath(step.done, folder)
                store.write(folder, rec)
                continue
            _status(folder, rec, "running", part, index, clock(), deadline)
            try:
                _attempt(folder, rec, entry, step, runner, deadline, clock)
            except KeyboardInterrupt:
                _status(folder, rec, "stopped", None, 0, clock(), deadline)
                raise
        _status(folder, rec, "ended", None, 0, clock(), deadline)
    return rec


def _budget_of(part: Part, rec: store.Record, left: float | None) -> float | None:
    """A budgeted part's own budget: what is left after what the parts below it need, and at
    least its own need (the parts above it are worth more)."""
    if not part.budget or left is None:
        return None
    later = PARTS[PARTS.index(part) + 1 :]
    return max(part.need_s[rec.device], left - sum(p.need_s[rec.device] for p in later))


def _attempt(folder, rec, entry, step, runner, deadline, clock) -> None:
    """Run one part once, keeping its status, exit status, wall time and folder in record.json
    as it starts and as it ends."""
    logs = folder / store.LOGS
    log_path, result = logs / f"{entry.name}.log", logs / f"{entry.name}.outcome.json"
    result.unlink(missing_ok=True)
    entry.status, entry.why, entry.command = store.RUNNING, "", step.argv
    entry.started, entry.ended, entry.exit = folders.iso(), None, None
    entry.attempts += 1
    entry.log = os.path.relpath(log_path, folder)
    store.write(folder, rec)  # a call killed now leaves `running`: the next one runs it again
    began = clock()
    with log_path.open("a") as f:
        f.write(f"== {' '.join(step.argv)} (attempt {entry.attempts}, {entry.started})\n")
    env_vars = _child_env(result)
    try:
        code, stopped = runner(step.argv, log_path, env_vars, deadline)
    except KeyboardInterrupt:
        _ended(folder, rec, entry, result, None, "stopped by a signal", clock() - began, log_path)
        raise
    _ended(folder, rec, entry, result, code, stopped, clock() - began, log_path)


def _ended(folder, rec, entry, result, code, stopped, wall_s, log_path) -> None:
    said = outcome.read(result)
    made = Path(said.folder) if said.folder else None
    if made is not None and made.is_dir():
        entry.folder = os.path.relpath(made, folder)
    entry.exit, entry.ended = code, folders.iso()
    entry.wall_s = round(entry.wall_s + wall_s, 1)
    unfinished = made is not None and "ended" not in _env(made)
    if stopped:
        entry.status, entry.why = store.STOPPED, f"{stopped}; the next call goes on with it"
    elif code == 0 and unfinished:  # a study stopped by its own budget: --resume goes on
        entry.status, entry.why = store.STOPPED, "its budget ended first; the next call resumes it"
    elif code == 0:
        entry.status = store.DONE
    elif code in (130, 143):
        entry.status, entry.why = store.STOPPED, f"interrupted (exit {code})"
    else:
        entry.status = store.FAILED
        entry.why = f"exit {code}: {said.error or store.last_line(log_path)}"
    with log_path.open("a") as f:
        f.write(f"== exit {code} after {wall_s:.1f} s ({entry.status})\n")
    store.write(folder, rec)
    log(f"record: {entry.name} {entry.status} after {wall_s:.0f} s")


def _env(made: Path) -> dict:
    try:
        return results.read_env(made)
    except (OSError, ValueError, results.CorruptFolder):
        return {}


def plan(
    part: Part,
    rec: store.Record,
    folder: Path,
    entry: store.Entry,
    budget_s: float | None,
    compare_with: str | None = None,
) -> Step:
    """The command line of `part` for this record: a GPU's command, or its tiny CPU version; a
    folder an earlier attempt left unfinished resumed where its command can (`run`, `quality`)."""
    py, tiny = [sys.executable, "-m", "bench"], rec.device == "cpu"
    where = folder / part.name
    # A call killed mid-part recorded no folder: the part's command noted it as it opened it.
    noted = outcome.read(folder / store.LOGS / f"{entry.name}.outcome.json").folder
    earlier = folder / entry.folder if entry.folder else Path(noted) if noted else None
    if earlier is not None and earlier.is_dir() and "ended" in _env(earlier):
        return Step(done=earlier)
    resumable = earlier if earlier is not None and earlier.is_dir() else None
    budget = [] if budget_s is None else ["--budget", f"{budget_s:.0f}s"]
    if part.name == "run":
        if resumable is not None:
            return Step(argv=[*py, "run", "--resume", str(resumable)])
        return Step(argv=[*py, "run", *(TINY["run"] if tiny else ()), "--results-dir", str(where)])
    if part.name == "ab":
        previous, why = _previous(folder, rec.commit, compare_with)
        if previous is None:
            return Step(skip=why)
        grid = [*TINY["run"], "--rounds", "2", "--min-rounds", "2"] if tiny else list(AB_GRID)
        return Step(argv=[*py, "ab", previous, rec.commit, *grid, "--results-dir", str(where)])
    if part.name in ("quality", "replication"):
        if resumable is not None:
            argv = [*py, "quality", "--resume", str(resumable), *budget]
            return Step(argv=argv)
        seeds = ["--seeds", REPLICA_SEEDS] if part.name == "replication" else []
        tag = "nanogpt-replica1" if part.name == "quality" else "nanogpt-replica2"
        argv = [*py, "quality", *(TINY["quality"] if tiny else QUALITY), *seeds, "--tag", tag,
                *budget, "--results-dir", str(where)]  # fmt: skip
        return Step(argv=argv)
    if part.name == "sweep":
        script = TINY["script"] if tiny else HF_TRAINER
        if not tiny and not all(importlib.util.find_spec(m) for m in TRAINER_NEEDS):
            script = PLAIN_LOOP  # the command line, in record.json and the log, names it
        argv = [*py, "sweep", *(TINY["sweep"] if tiny else ()), "--results-dir", str(where),
                "--", sys.executable, *script]  # fmt: skip
        return Step(argv=argv)
    if part.name == "tests":
        return Step(argv=list(TINY["tests"] if tiny else TESTS))
    if part.name == "gpu-lane":
        if tiny:
            return Step(skip="no GPU here: the lane runs the CUDA-only tests on a GPU")
        return Step(argv=list(GPU_LANE))
    raise ValueError(f"unknown part {part.name!r}")


def _previous(folder: Path, commit: str, given: str | None) -> tuple[str | None, str]:
    """What `ab` compares `commit` with: `given`, or the commit of the newest record of another
    commit (beside this one, or published in results/), where git here has both; else None and
    why not."""
    if given == NONE:
        return None, f"--compare-with {NONE}"
    found = None
    if given is None:
        found = store.newest(sorted({folder.parent, paths.RESULTS}), differing_from=commit)
        if found is None:
            return None, "no earlier record of another commit to compare with"
    previous = given or store.read(found).commit
    try:
        repo = ab.repository()
        for rev in (previous, commit):
            ab.resolve(repo, rev)
    except UsageError as exc:
        said = f"{found.name} is of {previous[:7]}" if found else f"--compare-with {previous}"
        return None, f"{said}, but {exc}"
    return previous, ""


def _child_env(result: Path) -> dict[str, str]:
    child = {k: v for k, v in os.environ.items() if k not in CHILD_ENV_DROPPED}
    # Every part runs this interpreter (`./run_tests.sh` too: no new .venv), from the project
    # root, unbuffered so that its log (and `record --status`) follows it as it goes.
    child.update(PYTHON=sys.executable, PYTHONUNBUFFERED="1", AMPBENCH_CWD=str(paths.ROOT))
    child[outcome.RESULT_VAR] = str(result)
    return child


def spawn(
    argv: list[str], log_path: Path, env_vars: dict[str, str], deadline: float | None
) -> tuple[int, str]:
    """`argv` in a process of its own from the project root, its output appended to
    `log_path`; stopped with SIGINT at `deadline` (killed `STOP_GRACE_S` later), and when this
    process is stopped (KeyboardInterrupt, re-raised once the part has ended)."""
    with log_path.open("a") as out:
        proc = subprocess.Popen(
            argv, cwd=paths.ROOT, env=env_vars, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            timeout = None if deadline is None else max(deadline - time.time(), 0.0)
            return proc.wait(timeout=timeout), ""
        except subprocess.TimeoutExpired:
            return _stop(proc), "stopped at the end of the budget"
        except KeyboardInterrupt:
            _stop(proc)
            raise


def _stop(proc: subprocess.Popen) -> int:
    """SIGINT, which every command ends on keeping what it finished; then SIGKILL."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def _status(folder, rec, state, part, index, now, deadline) -> None:
    counts = {s: sum(p.status == s for p in rec.parts) for s in (*store.FINISHED, store.STOPPED,
                                                                 store.NOT_RUN)}  # fmt: skip
    store.write_status(folder, {
        "record": str(folder), "commit": rec.commit, "pid": os.getpid(), "state": state,
        "part": part.name if part else None, "part_index": index, "parts_total": len(PARTS),
        "part_log": str(folder / store.LOGS / f"{part.name}.log") if part else None,
        "part_started": now, "updated": now, "deadline": deadline, "counts": counts,
    })  # fmt: skip
