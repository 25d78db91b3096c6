"""`ampbench ab`: the order of the rounds, what the verdicts make of a machine that drifts over
them, bad input in one line, and one whole comparison of a commit with itself in a temporary
clone of the project (its own git repository, so that no worktree of this one is touched)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.cli import main
from bench.faults import Interrupted, UsageError
from bench.jobs import ab
from bench.lifecycle import folder as base
from bench.verdicts import rounds
from tests.optional import not_a_checkout

ROOT = Path(__file__).resolve().parent.parent
TINY = [
    "--device", "cpu", "--preset", "tiny", "--modes", "fp32", "--batch-sizes", "8",
    "--optimizers", "fused", "--no-overhead", "--steps", "5", "--warmup", "1",
]  # fmt: skip


def test_the_rounds_alternate_in_blocks():
    assert ab.order(1) == ["A", "B"]
    assert ab.order(3) == ["A", "B", "B", "A", "A", "B"]
    assert ab.order(5) == [*"ABBAABBAAB"]
    # The cap leaves the stopping rule looks to make, none before the judge can call anything.
    assert ab.DEFAULT_ROUNDS > ab.DEFAULT_MIN_ROUNDS >= rounds.MIN_ROUNDS


@pytest.mark.parametrize("processes", [4, 5, 6])
def test_a_machine_drifting_over_the_rounds_is_never_a_verdict(processes):
    """The same code in every process while the machine slows down (or speeds up) steadily, by
    up to 10% a process, or steps to another speed halfway: the alternation spreads the drift
    over both sides, and no case is called faster or slower."""
    sequence = ab.order(processes)
    drifts = {
        **{f"linear {d}": (lambda t, d=d: math.exp(d * t)) for d in (0.005, 0.02, 0.1, -0.05)},
        "step": lambda t: 1.0 if t < len(sequence) // 2 else 1.3,
    }
    for name, speed in drifts.items():
        a = [speed(t) for t, side in enumerate(sequence) if side == "A"]
        b = [speed(t) for t, side in enumerate(sequence) if side == "B"]
        assert rounds.rounds_verdict(a, b)["verdict"] in ("same", "unclear"), name


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"rounds": 0}, "--rounds"),
        ({"min_rounds": 0}, "--min-rounds"),
        ({"statistic": "mean"}, "--statistic"),
        ({"rev_a": "-x"}, "REV_A"),
        ({"rev_b": ""}, "REV_B"),
    ],
)
def test_a_config_refuses_bad_values(given, named):
    with pytest.raises(ValueError, match=named):
        ab.AbConfig(**{"rev_a": "HEAD", "rev_b": "HEAD", **given})


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["no-such-revision-here", "HEAD"], "revision 'no-such-revision-here' does not exist"),
        (["HEAD", "HEAD", "--steps", "0"], "--steps"),
        (["HEAD", "HEAD", "--resume", "x"], "drop --resume"),
        (["HEAD", "HEAD", "--rounds", "0"], "--rounds"),
        (["HEAD"], "REV_B"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, tmp_path, capsys):
    if "revision" in needle and not_a_checkout():
        pytest.skip(not_a_checkout())  # no revision exists outside a git checkout
    assert main(["ab", *argv, "--results-dir", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("ampbench: error:") and needle in line, line
    assert not list(tmp_path.iterdir())  # no comparison folder


STUB = """
import json, os, sys
from pathlib import Path

parent = Path(sys.argv[-1])  # `--results-dir PARENT` ends a round's command line


def made():
    (parent / "run1").mkdir()
    return str((parent / "run1").resolve())


def say(**record):
    Path(os.environ["AMPBENCH_RESULT_JSON"]).write_text(json.dumps(record))


print("ampbench: error: a line that is not how it ended", file=sys.stderr)
"""
"""The start of a revision's `python -m bench` that a test's round runs instead of the project's:
it writes the output the old `ab` scraped, and then what each test's body does."""
PASSED = "say(folder=made(), status='ok', exit=0, error='')"


def _tree(tmp_path: Path, side: str, body: str) -> Path:
    """A checkout of a revision whose `python -m bench` is `STUB` and `body`."""
    package = tmp_path / f"tree-{side}" / "bench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(STUB + body + "\n")
    return package.parent


def _rounds(tmp_path: Path, body_b: str, *, says_b: bool = True) -> tuple[list[dict], Exception]:
    """One round of A (which passes) then one of B (`body_b`; `says_b`: whether B's revision
    writes how its runs ended): env.json's rounds and what ended the comparison (None if
    nothing)."""
    cfg = ab.AbConfig(rev_a="main", rev_b="HEAD", rounds=1, commit_a="a" * 40, commit_b="b" * 40)
    trees = {"A": _tree(tmp_path, "A", PASSED), "B": _tree(tmp_path, "B", body_b)}
    folder = base.Folder(path=tmp_path / "cmp", info={}, kind="ab")
    folder.path.mkdir()
    raised = None
    try:
        ab._rounds(cfg, folder, trees, {"A": True, "B": says_b})
    except (UsageError, Interrupted) as exc:
        raised = exc
    return json.loads((folder.path / "env.json").read_text())["rounds"], raised


@pytest.mark.parametrize(
    ("body", "folder_b", "raised", "said"),
    [
        (
            "say(folder=None, status='error', exit=1, error='RuntimeError: boom'); sys.exit(1)",
            None,
            UsageError,
            "B (HEAD, bbbbbbb): its run failed (exit status 1): RuntimeError: boom (log: ",
        ),
        (
            "say(folder=made(), status='failed', exit=1, error=''); sys.exit(1)",
            "B/run1",
            UsageError,
            "B (HEAD, bbbbbbb): no case of the grid passed (log: ",
        ),
        (
            "say(folder=made(), status='interrupted', exit=130, error='x'); sys.exit(130)",
            "B/run1",
            Interrupted,
            "B (HEAD, bbbbbbb) was interrupted (log: ",
        ),
        (  # made a folder, said nothing: no listing of B/ finds it
            "made(); sys.exit(2)",
            None,
            UsageError,
            "B (HEAD, bbbbbbb): its run ended without saying how (exit status 2; its log ends: "
            "ampbench: error: a line that is not how it ended) (log: ",
        ),
    ],
)
def test_how_a_round_ended_is_what_it_wrote(body, folder_b, raised, said, tmp_path):
    rounds, exc = _rounds(tmp_path, body)
    assert type(exc) is raised and said in str(exc), exc
    assert [(r["side"], r["folder"]) for r in rounds] == [("A", "A/run1"), ("B", folder_b)]
    assert str(tmp_path / "cmp" / "logs" / "02-B.log") in str(exc)


def test_a_round_that_wrote_its_result_and_exited_0_passes(tmp_path):
    rounds, exc = _rounds(tmp_path, PASSED)
    assert exc is None
    assert [(r["folder"], r["exit"]) for r in rounds] == [("A/run1", 0), ("B/run1", 0)]


def test_a_revision_older_than_the_result_file_is_read_by_its_exit_status(tmp_path):
    rounds, exc = _rounds(tmp_path, "made()", says_b=False)
    assert exc is None and rounds[1]["folder"] == "B/run1"
    rounds, exc = _rounds(tmp_path / "again", "made(); sys.exit(2)", says_b=False)
    assert isinstance(exc, UsageError) and rounds[1]["folder"] == "B/run1"
    assert "its run failed (exit status 2): ampbench: error: a line that is not how" in str(exc)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clone of this project with the working tree's code committed at its HEAD, and a branch
    `broken` one commit later whose package does not import. Skips where the project is not a
    git checkout (a release tarball): there is nothing to clone."""
    reason = not_a_checkout(ROOT)
    if reason:
        pytest.skip(reason)
    repo = tmp_path_factory.mktemp("clone") / "ampbench"
    _git(ROOT, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(repo))
    files = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file() and not name.startswith("results/"):
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    _git(repo, "add", "-A")
    _git(repo, "commit", "--quiet", "--allow-empty", "-m", "the working tree")
    _git(repo, "checkout", "--quiet", "-b", "broken")
    init = repo / "bench" / "__init__.py"
    init.write_text(init.read_text() + "\nraise RuntimeError('this revision is broken')\n")
    _git(repo, "commit", "--quiet", "-am", "break the package")
    _git(repo, "checkout", "--quiet", "-")
    return repo


def _ab(clone: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("AMPBENCH_CWD", "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-m", "bench", "ab", *args],
        cwd=clone,
        env={**env, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _worktrees(repo: Path) -> int:
    return _git(repo, "worktree", "list", "--porcelain").count("worktree ")


@pytest.mark.slow
def test_ab_of_a_commit_with_itself_end_to_end(clone, tmp_path):
    """`ab HEAD HEAD`, 1 round each, on a tiny CPU grid: fresh processes of the revision's own
    code, one folder with both sides' rounds, the verdicts (1 round a side is too few to judge,
    and says so) and the report; the worktrees are gone after. (The order of more rounds:
    `test_the_rounds_alternate_in_the_jobs_own_loop`, with the processes faked.)"""
    out = tmp_path / "out"
    done = _ab(clone, "HEAD", "HEAD", "--rounds", "1", *TINY, "--results-dir", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = out.iterdir()
    sha = _git(clone, "rev-parse", "HEAD").strip()
    assert folder.name.endswith(f"_{sha[:7]}_vs_{sha[:7]}_ab")
    env = json.loads((folder / "env.json").read_text())
    assert env["kind"] == "ab" and env["ab_config"]["order"] == [*"AB"]
    assert env["ab_config"]["commit_a"] == env["ab_config"]["commit_b"] == sha
    assert [(r["side"], r["round"], r["exit"]) for r in env["rounds"]] == [("A", 1, 0), ("B", 1, 0)]
    assert [r["folder"].split("/")[0] for r in env["rounds"]] == [*"AB"]
    for record in env["rounds"]:  # each round is the revision's own run, at its own commit
        run_env = json.loads((folder / record["folder"] / "env.json").read_text())
        assert run_env["commit"] == sha and "--results-dir" in run_env["command"]
    assert len(list((folder / "A").iterdir())) == len(list((folder / "B").iterdir())) == 1
    assert len(list((folder / "logs").iterdir())) == 2
    report = (folder / "report.md").read_text()
    assert report.startswith("# ampbench ab: `HEAD`") and "**Too few rounds to judge**" in report
    verdicts = (folder / "verdicts.csv").read_text().splitlines()
    assert len(verdicts) == 2 and verdicts[1].endswith(",unclear")
    assert done.stdout.strip().splitlines()[-1] == str(folder)
    assert _worktrees(clone) == 1  # the temporary worktrees were removed


def test_the_rounds_alternate_in_the_jobs_own_loop(clone, tmp_path, monkeypatch):
    """`ab`'s job with 3 rounds a side, each round's process faked (it writes a run folder at
    once): A B B A A B, each in its side's worktree and folder, numbered within its side, one log
    each, recorded in env.json in that order."""
    calls = []

    def one_process(tree, parent, log_path, options, result):
        calls.append((parent.name, tree, options))
        run_dir = parent / f"run{len(calls)}"
        run_dir.mkdir()
        log_path.write_text("a fake round\n")
        # How the round ended, as a child's `bench.outcome` writes it.
        ended = {"folder": str(run_dir), "status": "ok", "exit": 0, "error": ""}
        result.write_text(json.dumps(ended))
        return 0

    monkeypatch.setattr(ab, "repository", lambda: clone)
    monkeypatch.setattr(ab, "_one_process", one_process)
    cfg = ab.AbConfig(rev_a="HEAD", rev_b="HEAD", rounds=3, run_options=("--device", "cpu"))
    folder = ab.run(cfg, results_dir=tmp_path, command="test", device="cpu", tag=None)
    assert [side for side, _, _ in calls] == [*"ABBAAB"]
    trees = {side: {tree for s, tree, _ in calls if s == side} for side in "AB"}
    assert all(len(t) == 1 for t in trees.values()) and trees["A"] != trees["B"]
    assert {options for _, _, options in calls} == {("--device", "cpu")}
    env = json.loads((folder / "env.json").read_text())
    assert [(r["side"], r["round"], r["exit"], r["folder"]) for r in env["rounds"]] == [
        ("A", 1, 0, "A/run1"), ("B", 1, 0, "B/run2"), ("B", 2, 0, "B/run3"),
        ("A", 2, 0, "A/run4"), ("A", 3, 0, "A/run5"), ("B", 3, 0, "B/run6"),
    ]  # fmt: skip
    assert sorted(p.name for p in (folder / "logs").iterdir()) == [
        f"{i:02d}-{side}.log" for i, side in enumerate("ABBAAB", 1)
    ]
    assert _worktrees(clone) == 1


@pytest.mark.slow
def test_a_revision_that_does_not_import_or_cannot_run_its_grid_is_one_line(clone, tmp_path):
    out = tmp_path / "out"
    done = _ab(clone, "HEAD", "broken", *TINY, "--results-dir", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("ampbench: error: B (broken, ") and "does not import" in line
    assert "this revision is broken" in line and not out.exists()
    done = _ab(clone, "HEAD", "HEAD", *TINY, "--variants", "cudagraph", "--results-dir", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("ampbench: error: A (HEAD, ") and "exit status 2" in line
    assert "--variants cudagraph" in line and "(log: " in line
    assert _worktrees(clone) == 1


def _comparison(folder: Path, cfg: ab.AbConfig, slower: float) -> Path:
    """A comparison folder as the job leaves it: 5 rounds a side, B `slower` times A."""
    from tests.test_compare import _windows, _write_run

    rng = np.random.default_rng(0)
    for i, side in enumerate(ab.order(cfg.rounds)):
        center = 10.0 * (slower if side == "B" else 1.0)
        _write_run(folder / side / f"run{i}", {("fp32", "fused"): _windows(rng, center)})
    (folder / "env.json").write_text(
        json.dumps({"kind": "ab", "gpu": "cpu", "command": "python -m bench ab", "rounds": [],
                    "ab_config": {**cfg.record(), "commit_a": "a" * 40, "commit_b": "b" * 40}})
    )  # fmt: skip
    return folder


@pytest.mark.parametrize(
    ("slower", "flag", "status"), [(1.2, True, 1), (1.2, False, 0), (1.0, True, 0)]
)
def test_ab_options_after_the_revisions_are_abs_and_the_rest_go_to_run(
    slower, flag, status, tmp_path, monkeypatch, capsys
):
    given = {}

    def job(cfg, *, results_dir, command, device, tag):
        given.update(cfg=cfg, results_dir=results_dir, device=device, tag=tag)
        return _comparison(tmp_path / "cmp", cfg, slower)

    monkeypatch.setattr(ab, "run", job)
    argv = ["ab", "main", "HEAD", "--device", "cpu", "--rounds", "5", "--statistic", "p10",
            "--modes", "fp32", "--results-dir", str(tmp_path), "--tag", "x"]  # fmt: skip
    assert main(argv + (["--fail-on-slower"] if flag else [])) == status
    cfg = given["cfg"]
    assert (cfg.rev_a, cfg.rev_b, cfg.rounds, cfg.statistic) == ("main", "HEAD", 5, "p10")
    assert cfg.run_options == ("--device", "cpu", "--modes", "fp32")
    assert given["results_dir"] == tmp_path and given["tag"] == "x" and given["device"] == "cpu"
    out = capsys.readouterr().out
    assert out.startswith("# ampbench ab: `main` (aaaaaaa) against `HEAD` (bbbbbbb)")
    assert ("1 slower." in out) == (slower > 1) and out.strip().endswith(str(tmp_path / "cmp"))
    assert (tmp_path / "cmp" / "report.md").read_text() in out
    holm = "Verdicts hold the chance of any false `faster` or `slower` across the 1 case at 5%"
    assert holm in out
    header = (tmp_path / "cmp" / "verdicts.csv").read_text().splitlines()[0].split(",")
    assert header[header.index("p_value") + 1] == "p_holm"


def _stopping(tmp_path: Path, centers: dict[str, float], noise: float, rounds: int) -> Path:
    """`ab`'s own loop, each process faked: it writes a run folder of two cases whose step
    times are `centers[side]` times lognormal noise (`noise` per round, 0.1% per step). Returns
    the comparison folder, rendered as `ab` renders it."""
    from bench.publish import ab as report
    from tests.test_compare import _write_run

    rng = np.random.default_rng(5)
    made = []

    def one_process(tree, parent, log_path, options, result):
        made.append(parent.name)
        side = parent.name
        run_dir = parent / f"run{len(made)}"
        level = centers[side] * math.exp(rng.normal(0, noise))
        cases = {
            (mode, "fused"): [level * np.exp(rng.normal(0, 0.001, 20)) for _ in range(2)]
            for mode in ("fp32", "bf16-amp")
        }
        _write_run(run_dir, cases)
        log_path.write_text("a fake round\n")
        result.write_text(json.dumps({"folder": str(run_dir), "status": "ok", "exit": 0}))
        return 0

    cfg = ab.AbConfig(rev_a="a", rev_b="b", rounds=rounds, commit_a="a" * 40, commit_b="b" * 40)
    folder = base.Folder(path=tmp_path / "cmp", info={}, kind="ab")
    folder.path.mkdir()
    folder.info.update(kind="ab", gpu="cpu", command="python -m bench ab", ab_config=cfg.record())
    trees = {"A": tmp_path, "B": tmp_path}
    original = ab._one_process
    ab._one_process = one_process
    try:
        ab._rounds(cfg, folder, trees, {"A": True, "B": True})
    finally:
        ab._one_process = original
    report.write(folder.path)
    return folder.path


def test_ab_stops_once_every_case_is_decided(tmp_path):
    """Quiet rounds (0.1% apart) of the same code: both cases are `same` at the first look, after
    `MIN_ROUNDS` a side, and the comparison stops there, well before its cap of 7; the report
    says how many rounds each side ran, why it stopped, and judges with the looks' share."""
    folder = _stopping(tmp_path, {"A": 10.0, "B": 10.0}, 0.001, rounds=7)
    env = json.loads((folder / "env.json").read_text())
    least = ab.DEFAULT_MIN_ROUNDS
    assert len(env["rounds"]) == 2 * least and len(env["looks"]) == 1
    assert env["looks"][0]["verdicts"] == {"same": 2} and env["looks"][0]["decided"]
    assert env["stopped"]["reason"].startswith(f"every case decided after {least} rounds a side")
    text = (folder / "report.md").read_text()
    assert f"Rounds run: {least} of A, {least} of B. Why it stopped: every case decided" in text
    looks = 7 - least + 1
    assert f"looked at its rounds {looks} times as they came" in text
    assert f"{100 - 5 / looks:.4g}% interval" in text and "2 same." in text


def test_ab_runs_to_its_cap_while_a_case_is_unclear(tmp_path):
    """Rounds 1% apart and B 1% slower: neither `same` within 2% nor a call, at any look; the
    comparison runs to its cap and says which cases were still unclear."""
    cap = ab.DEFAULT_MIN_ROUNDS + 1
    folder = _stopping(tmp_path, {"A": 10.0, "B": 10.1}, 0.01, rounds=cap)
    env = json.loads((folder / "env.json").read_text())
    assert len(env["rounds"]) == 2 * cap and len(env["looks"]) == 2
    assert not any(look["decided"] for look in env["looks"])
    assert env["stopped"]["reason"].startswith(f"the cap of {cap} rounds a side (`--rounds`), ")
    assert f"Rounds run: {cap} of A, {cap} of B." in (folder / "report.md").read_text()
