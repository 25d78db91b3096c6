"""`ampbench ab REV_A REV_B`: two revisions of the project timed on one grid, in fresh processes
that alternate between them, into one comparison folder.

Each revision is checked out into a temporary git worktree (`git worktree add --detach`; the
user's own tree is not touched, and the worktrees are removed at the end), and each round is one
fresh process of that revision's own `python -m bench run` with the same run options, writing a
run folder into the comparison folder's `A/` or `B/`: the code measured is the revision's. The
rounds alternate in blocks, A B B A A B B A ... (as asv's interleaved rounds and PyTorch's
dynamo runner do "to handle frequency scaling"), so that a machine whose speed drifts over the
minutes of a comparison, or changes from one process to the next, spreads that over both
revisions' rounds, where the verdicts weigh it, instead of putting it between them, where it
would read as a change of the code. env.json records the order and each round as it ends.

Layout of the folder: env.json (`ab_config`: revisions, commits, rounds, run options, order),
`A/` and `B/` (one run folder per round), `logs/` (each process's output). The verdicts,
report.md and verdicts.csv come from `bench.publish.ab`, after the job.
"""

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

from bench.faults import Interrupted, UsageError
from bench.jobs import base
from bench.measure import stats
from bench.store import folders, paths

SIDES = ("A", "B")
DEFAULT_ROUNDS = 7
"""Fresh processes per revision when `--rounds` is not given. Each round is one observation of
each case, and Mann-Whitney's test (`bench.measure.stats.rounds_verdict`) cannot tell two sides
apart at 95% with fewer than 4 a side (3 give a smallest p of 0.1, 4 give 0.029 and only when
every round of one side is slower than every round of the other, 5 give 0.0079). Across the
cases of a grid, Holm's correction (`bench.measure.stats.family_verdicts`) asks more: the
smallest p at most 5% / cases, which 5 a side reach for up to 6 cases, 6 for up to 23 and 7
(smallest p 0.00058) for up to 85 (`bench.measure.stats.rounds_needed`). 7 judge a grid of 8 to
32 cases even with a pair of rounds out of order (one round of B faster than one of A); across
10 cases, with up to three."""
LOGS = "logs"
CHILD_ENV_DROPPED = ("AMPBENCH_GIT_COMMIT", "AMPBENCH_GIT_DIRTY")
"""Variables that would make a revision's run record another commit than its own."""

log = base.log


@dataclass(frozen=True, kw_only=True)
class AbConfig:
    """What `ab` compares and how, as env.json keeps it (`ab_config`)."""

    rev_a: str
    """The baseline: a commit, branch or tag of the project's repository."""
    rev_b: str
    """The candidate."""
    rounds: int = DEFAULT_ROUNDS
    """Fresh processes per revision, alternated A B B A A B ..."""
    run_options: tuple[str, ...] = ()
    """The options every round's `python -m bench run` gets, as the user gave them."""
    statistic: str = "median"
    """What each round of a case is summed up by for the verdicts (`bench.measure.stats`)."""
    min_effect: float = stats.MIN_EFFECT
    """The smallest relative change reported as faster or slower."""
    confidence: float = stats.CONFIDENCE
    """The confidence of the verdicts' intervals."""
    commit_a: str = field(default="", metadata={"cli": False})
    commit_b: str = field(default="", metadata={"cli": False})

    def __post_init__(self) -> None:
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise ValueError(f"--rounds: {self.rounds!r} is not a positive integer")
        if self.statistic not in stats.STATISTICS:
            raise ValueError(
                f"--statistic {self.statistic!r}: choose from {', '.join(stats.STATISTICS)}"
            )
        for name in ("rev_a", "rev_b"):
            value = getattr(self, name)
            if not value or value.startswith("-"):
                raise ValueError(f"{name.upper()}: {value!r} is not a revision")

    def record(self) -> dict[str, object]:
        return {**asdict(self), "run_options": list(self.run_options), "order": order(self.rounds)}


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


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CHILD_ENV_DROPPED}
    env[paths.CWD_VAR] = os.environ.get(paths.CWD_VAR) or os.getcwd()
    return env


def check_imports(tree: Path, label: str) -> None:
    """The revision's command line imports with this Python (its code, from its worktree)."""
    probe = "import bench, bench.cli.main, pathlib, sys; print(pathlib.Path(bench.__file__))"
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
    found = Path(done.stdout.strip().splitlines()[-1]).resolve()
    if tree.resolve() not in found.parents:  # an installed copy would be measured instead
        raise UsageError(f"{label}: `import bench` finds {found}, not the revision's code")


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
        for side, tree in trees.items():
            check_imports(tree, _label(cfg, side))
        label = f"{commits['A'][:7]}_vs_{commits['B'][:7]}"
        with base.new_folder(
            results_dir,
            kind="ab",
            device=device,
            settings=cfg.record(),
            command=command,
            label=label,
            suffix=folders.tagged("_ab", tag),
        ) as folder:
            log(f"comparison folder {folder.path}")
            _rounds(cfg, folder, trees)
            folder.finish()
    return folder.path


def _rounds(cfg: AbConfig, folder: base.Folder, trees: dict[str, Path]) -> None:
    sequence = order(cfg.rounds)
    (folder.path / LOGS).mkdir()
    done: list[dict] = folder.info.setdefault("rounds", [])
    seen = dict.fromkeys(SIDES, 0)
    start = time.monotonic()
    for i, side in enumerate(sequence, 1):
        seen[side] += 1
        parent = folder.path / side
        parent.mkdir(exist_ok=True)
        before = set(parent.iterdir())
        log_path = folder.path / LOGS / f"{i:02d}-{side}.log"
        log(
            f"[{i}/{len(sequence)}] {_label(cfg, side)}, round {seen[side]} of {cfg.rounds} "
            f"(elapsed {time.monotonic() - start:.0f} s)"
        )
        began = folders.iso()
        code = _one_process(trees[side], parent, log_path, cfg.run_options)
        made = sorted(set(parent.iterdir()) - before)
        done.append(
            {
                "process": i,
                "side": side,
                "round": seen[side],
                "folder": f"{side}/{made[0].name}" if made else None,
                "started": began,
                "ended": folders.iso(),
                "exit": code,
            }
        )
        folder.save()
        if code != 0:
            _failed(cfg, side, code, log_path)


def _one_process(tree: Path, parent: Path, log_path: Path, options: tuple[str, ...]) -> int:
    # Only options every revision's `run` has had: an older commit compares as well as a new one
    # (env.json records which round each folder is).
    argv = [sys.executable, "-m", "bench", "run", *options, "--results-dir", str(parent)]
    with log_path.open("w") as out:
        try:
            return subprocess.run(
                argv, cwd=tree, env=_child_env(), stdout=out, stderr=subprocess.STDOUT, check=False
            ).returncode
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted; the rounds so far are kept in {parent.parent}"
            ) from None


def _failed(cfg: AbConfig, side: str, code: int, log_path: Path) -> None:
    """One line for a round that did not end well, naming the revision and its log."""
    lines = log_path.read_text(errors="replace").strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("ampbench: error:")]
    said = errors[-1].removeprefix("ampbench: error: ") if errors else (lines or ["no output"])[-1]
    where = f"(log: {log_path})"
    if code == 130:
        raise Interrupted(f"{_label(cfg, side)} was interrupted {where}")
    if code == 1:
        raise UsageError(f"{_label(cfg, side)}: no case of the grid passed {where}")
    raise UsageError(f"{_label(cfg, side)}: its run failed (exit status {code}): {said} {where}")
