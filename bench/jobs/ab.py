"""`ampbench ab REV_A REV_B`: two revisions timed on one grid in fresh processes that alternate
between them (A B B A ..., each in its own git worktree), stopping when every case is decided
(`bench.jobs.ab_looks`), into one comparison folder (docs/comparing.md). A round's outcome is
read from its AMPBENCH_RESULT_JSON file (`bench.outcome`), never from its output."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import outcome
from bench.faults import Interrupted, UsageError
from bench.jobs import ab_looks
from bench.lifecycle import folder as base
from bench.store import folders, paths
from bench.verdicts import memory, rounds
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT

SIDES = ("A", "B")
DEFAULT_ROUNDS = 7
"""The most fresh processes per revision when `--rounds` is not given, each one round of every
case: how many a whole grid needs to find a 3% change is measured in docs/comparing.md."""
DEFAULT_MIN_ROUNDS = rounds.PRIOR_ROUNDS
"""The fewest rounds a side before `ab` may stop, its first look: from there on each case's
spread is moderated across its mode's cases, and the cap's looks are few (each at alpha over
their number)."""
LOGS = "logs"
CHILD_ENV_DROPPED = ("AMPBENCH_GIT_COMMIT", "AMPBENCH_GIT_DIRTY", "AMPBENCH_GIT_OVERRIDE")
"""Variables that would make a revision's run record another commit than its own
(`bench.measure.env.OVERRIDE` and its companions)."""

log = base.log


@dataclass(frozen=True, kw_only=True)
class AbConfig:
    """What `ab` compares and how, as env.json keeps it (`ab_config`)."""

    rev_a: str
    """The baseline: a commit, branch or tag of the project's repository."""
    rev_b: str
    """The candidate."""
    rounds: int = DEFAULT_ROUNDS
    """The most fresh processes per revision, alternated A B B A A B ... (the cap)."""
    min_rounds: int = DEFAULT_MIN_ROUNDS
    """The fewest before `ab` stops once every case is decided; `rounds` itself: never early."""
    run_options: tuple[str, ...] = ()
    """The options every round's `python -m bench run` gets, as the user gave them."""
    statistic: str = "median"
    """What each round of a case is summed up by for the verdicts (`bench.measure.stats`)."""
    min_effect: float = MIN_EFFECT
    """The smallest relative change reported as faster or slower."""
    confidence: float = CONFIDENCE
    """The confidence of the verdicts' intervals."""
    memory_tolerance: str = memory.DEFAULT.spec()
    """How far B's peak allocated memory may move from A's and be `same memory`
    (`bench.verdicts.memory.Tolerance.parse`: `2MiB,1%`)."""
    commit_a: str = field(default="", metadata={"cli": False})
    commit_b: str = field(default="", metadata={"cli": False})

    def __post_init__(self) -> None:
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise ValueError(f"--rounds: {self.rounds!r} is not a positive integer")
        least = self.min_rounds
        if isinstance(least, bool) or not isinstance(least, int) or least < 1:
            raise ValueError(f"--min-rounds: {least!r} is not a positive integer")
        if self.statistic not in rounds.STATISTICS:
            raise ValueError(
                f"--statistic {self.statistic!r}: choose from {', '.join(rounds.STATISTICS)}"
            )
        memory.Tolerance.parse(self.memory_tolerance)  # a bad one: one line, before any round
        for name in ("rev_a", "rev_b"):
            value = getattr(self, name)
            if not value or value.startswith("-"):
                raise ValueError(f"{name.upper()}: {value!r} is not a revision")

    @property
    def looks(self) -> int:
        """How many times the rounds may be judged before the cap: once a pair from
        `min_rounds` a side on (once, at the cap, where `min_rounds` is not below it)."""
        return max(1, self.rounds - self.min_rounds + 1)

    def record(self) -> dict[str, object]:
        return {
            **asdict(self),
            "run_options": list(self.run_options),
            "order": order(self.rounds),
            "looks": self.looks,
        }


def order(rounds: int) -> list[str]:
    """Which revision each process runs, in order: `rounds` blocks of one of each, A B then B A
    then A B ...: a drift that is linear over two blocks weighs on both revisions alike."""
    out: list[str] = []
    for i in range(rounds):
        out += list(SIDES) if i % 2 == 0 else list(reversed(SIDES))
    return out


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"ab needs git: {exc}") from exc


def repository(root: Path = paths.ROOT) -> Path:
    """The git repository the project is in: where the revisions are checked out from."""
    found = _git(root, "rev-parse", "--show-toplevel")
    if found.returncode != 0:
        raise UsageError(
            f"ab checks revisions out of the project's git repository; {root} is not in one"
        )
    return Path(found.stdout.strip())


def resolve(repo: Path, rev: str) -> str:
    """The full commit `rev` names in `repo`; one line when it names none."""
    found = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    if found.returncode != 0 or not found.stdout.strip():
        raise UsageError(f"revision {rev!r} does not exist in {repo}")
    return found.stdout.strip()


@contextlib.contextmanager
def worktrees(repo: Path, commits: dict[str, str]) -> Iterator[dict[str, Path]]:
    """Each side's commit checked out, detached, into a temporary worktree of `repo`; removed
    (and git's record of it pruned) however the block ends."""
    tmp = Path(tempfile.mkdtemp(prefix="ampbench-ab-"))
    made: dict[str, Path] = {}
    try:
        for side, sha in commits.items():
            dest = tmp / side
            added = _git(repo, "worktree", "add", "--detach", str(dest), sha)
            if added.returncode != 0:
                last = (added.stderr.strip().splitlines() or ["git worktree add failed"])[-1]
                raise UsageError(f"cannot check {sha[:7]} out into {dest}: {last}")
            made[side] = dest
        yield made
    finally:
        for dest in made.values():
            _git(repo, "worktree", "remove", "--force", str(dest))
        shutil.rmtree(tmp, ignore_errors=True)
        _git(repo, "worktree", "prune")


def _child_env(result: Path | None = None) -> dict[str, str]:
    """This environment for a child, with `result` as the file it writes how it ended to (none
    where not given: not the file this process was given)."""
    dropped = (*CHILD_ENV_DROPPED, outcome.RESULT_VAR)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env[paths.CWD_VAR] = os.environ.get(paths.CWD_VAR) or os.getcwd()
    if result is not None:
        env[outcome.RESULT_VAR] = str(result)
    return env


def check_imports(tree: Path, label: str) -> bool:
    """The revision's command line imports with this Python (its code, from its worktree).
    Returns whether its runs say how they ended (`bench.outcome`), which older ones do not."""
    probe = (
        "import bench, bench.cli.main, importlib.util, pathlib; "
        "print(importlib.util.find_spec('bench.outcome') is not None); "
        "print(pathlib.Path(bench.__file__))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tree,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"{label} does not import: {last}")
    *_, says, found = done.stdout.strip().splitlines()
    found = Path(found).resolve()
    if tree.resolve() not in found.parents:  # an installed copy would be measured instead
        raise UsageError(f"{label}: `import bench` finds {found}, not the revision's code")
    return says == "True"


def _label(cfg: AbConfig, side: str) -> str:
    rev, sha = (cfg.rev_a, cfg.commit_a) if side == "A" else (cfg.rev_b, cfg.commit_b)
    return f"{side} ({rev}, {sha[:7]})" if rev != sha else f"{side} ({sha[:7]})"


def run(cfg: AbConfig, *, results_dir: Path, command: str, device: str, tag: str | None) -> Path:
    """Check both revisions out, run the rounds, and return the comparison folder. Bad input
    (a revision that does not exist or does not import, a grid its `run` refuses or where no
    case passes) ends in a `UsageError` that names it."""
    repo = repository()
    commits = {"A": resolve(repo, cfg.rev_a), "B": resolve(repo, cfg.rev_b)}
    cfg = AbConfig(**{**asdict(cfg), "commit_a": commits["A"], "commit_b": commits["B"]})
    folders.check_parent(results_dir)
    with worktrees(repo, commits) as trees:
        says = {side: check_imports(tree, _label(cfg, side)) for side, tree in trees.items()}
        label = f"{commits['A'][:7]}_vs_{commits['B'][:7]}"
        with base.new_folder(
            results_dir, kind="ab", device=device, settings=cfg.record(), command=command,
            suffix="_ab", tag=tag, label=label,
        ) as folder:  # fmt: skip
            log(f"comparison folder {folder.path}")
            _rounds(cfg, folder, trees, says)
            folder.finish()
    return folder.path


def _rounds(
    cfg: AbConfig, folder: base.Folder, trees: dict[str, Path], says: dict[str, bool]
) -> None:
    """The rounds in order, each recorded in env.json as it ends, until the stopping rule says
    every case is decided or the cap is reached (`_stop`); the first that did not end well ends
    the comparison (`_failed`). `says`: whether each side's runs write how they ended
    (`check_imports`)."""
    sequence = order(cfg.rounds)
    (folder.path / LOGS).mkdir()
    done: list[dict] = folder.info.setdefault("rounds", [])
    seen = dict.fromkeys(SIDES, 0)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ampbench-ab-results-") as tmp:
        for i, side in enumerate(sequence, 1):
            seen[side] += 1
            parent = folder.path / side
            parent.mkdir(exist_ok=True)
            log_path = folder.path / LOGS / f"{i:02d}-{side}.log"
            log(
                f"[{i}/{len(sequence)}] {_label(cfg, side)}, round {seen[side]} of {cfg.rounds} "
                f"(elapsed {time.monotonic() - start:.0f} s)"
            )
            began = folders.iso()
            result = Path(tmp) / f"{i:02d}-{side}.json"
            listed = None if says[side] else set(parent.iterdir())  # for `_older` only
            code = _one_process(trees[side], parent, log_path, cfg.run_options, result)
            ended = outcome.read(result) if listed is None else _older(parent, listed, code)
            made = Path(ended.folder).name if ended.folder else None
            done.append(
                {
                    "process": i,
                    "side": side,
                    "round": seen[side],
                    "folder": f"{side}/{made}" if made else None,
                    "started": began,
                    "ended": folders.iso(),
                    "exit": code,
                }
            )
            folder.save()
            if ended.status != "ok" or made is None:
                _failed(_label(cfg, side), ended, code, log_path)
            if i % 2 == 0 and _stop(cfg, folder, i // 2, i == len(sequence)):
                break


def _stop(cfg: AbConfig, folder: base.Folder, rounds: int, last: bool) -> bool:
    """After a pair of rounds (`rounds` a side): from `min_rounds` on, look at the rounds so far
    (recorded in env.json's `looks`); stop once every case is decided, or at the cap (`last`),
    saying why in env.json's `stopped`."""
    looked = None
    if cfg.min_rounds <= rounds and cfg.min_rounds < cfg.rounds:
        looked = ab_looks.look(folder.path, folder.info["rounds"], cfg)
        folder.info.setdefault("looks", []).append(looked)
        log(
            f"look at {rounds} rounds a side: {looked['verdicts']}"
            + (" - every case decided, stopping" if looked["decided"] else "")
        )
    if not (last or (looked is not None and looked["decided"])):
        folder.save()
        return False
    folder.info["stopped"] = {
        "rounds_a": rounds,
        "rounds_b": rounds,
        "reason": ab_looks.reason(looked, cfg, rounds),
    }
    folder.save()
    return True


def _one_process(
    tree: Path, parent: Path, log_path: Path, options: tuple[str, ...], result: Path
) -> int:
    # Only options every revision's `run` has had: an older commit compares as well as a new one
    # (env.json records which round each folder is). How it ended it writes to `result`.
    argv = [sys.executable, "-m", "bench", "run", *options, "--results-dir", str(parent)]
    with log_path.open("w") as out:
        try:
            return subprocess.run(
                argv,
                cwd=tree,
                env=_child_env(result),
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            ).returncode
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted; the rounds so far are kept in {parent.parent}"
            ) from None


def _older(parent: Path, before: set[Path], code: int) -> outcome.Outcome:
    """A round of a revision older than `bench.outcome`, which says only its exit status: its
    folder is the one it added to `parent` (each round's process is the only writer there)."""
    made = sorted(set(parent.iterdir()) - before)
    return outcome.Outcome(
        folder=str(made[0]) if made else None, status=outcome.status_of(code), exit=code
    )


def _failed(label: str, ended: outcome.Outcome, code: int, log_path: Path) -> None:
    """One line for a round that did not end well, from how it said it ended, naming the
    revision (`label`) and its log; the log's last line where the round said nothing more."""
    where = f"(log: {log_path})"
    if ended.status == "interrupted":
        raise Interrupted(f"{label} was interrupted {where}")
    if ended.status == "failed":
        raise UsageError(f"{label}: no case of the grid passed {where}")
    lines = log_path.read_text(errors="replace").strip().splitlines()
    last = (lines or ["no output"])[-1]
    if ended.status is None:
        raise UsageError(
            f"{label}: its run ended without saying how (exit status {code}; its log ends: "
            f"{last}) {where}"
        )
    if ended.status == "ok":
        raise UsageError(f"{label}: its run named no run folder {where}")
    said = ended.error or last
    raise UsageError(f"{label}: its run failed (exit status {ended.exit}): {said} {where}")
