"""A sequential quality study on the CPU: seeds added in looks to the modes still undecided,
the device-time budget that stops it and `--resume` that goes on, a study kept to one commit,
and `--replicate`'s agreement rule. The verdicts that drive the looks are injected (the rule
itself is tested in test_verdicts_sequential.py): four CPU steps learn nothing to judge."""

import json

import pytest

from bench.cli import main
from bench.quality import looks as quality_looks
from bench.quality import tables
from bench.verdicts import replication
from bench.verdicts import sequential as seq
from bench.verdicts import training as rules

TINY = ["--steps", "4", "--eval-every", "2", "--batch-size", "2", "--heldout-limit", "4",
        "--timing-steps", "2", "--warmup", "1"]  # fmt: skip
COMMIT = "1111111aaaaaaa"


def verdict(word: str) -> rules.Verdict:
    # An interval (low, high) across or inside the margin: more seeds can decide it.
    return rules.Verdict(word, "injected", 0.0, -0.01, 0.01, 0.01, needed=7)


def injected(monkeypatch, decide_at: dict[str, int]) -> list[list[int]]:
    """Each mode decided ("trains like fp32") from the look at `decide_at[mode]` seeds,
    across the margin before; returns the looks the job asked about."""
    asked = []

    def judge_looks(run_dir, cfg, looks):
        asked.append(list(looks))
        n = looks[-1]
        return {m: seq.Judged(verdict(rules.LIKE if n >= at else rules.NOT_KNOWN), n, 0.05,
                              len(looks)) for m, at in decide_at.items()}  # fmt: skip

    monkeypatch.setattr(quality_looks, "judge_looks", judge_looks)
    return asked


@pytest.fixture
def commit(monkeypatch):
    """The tree named COMMIT, clean, whatever git says of it (`AMPBENCH_GIT_OVERRIDE`)."""
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", COMMIT)
    monkeypatch.setenv("AMPBENCH_GIT_DIRTY", "0")
    monkeypatch.setenv("AMPBENCH_GIT_OVERRIDE", "1")


def seeds_of(run_dir) -> dict[str, set[int]]:
    runs = tables.load(run_dir)["runs"]
    return {m: set(g["seed"]) for m, g in runs.groupby("mode")}


def test_seeds_are_added_in_looks_to_the_undecided_modes_only(tmp_path, monkeypatch, commit):
    asked = injected(monkeypatch, {"fp16-amp": 3, "bf16-amp": 5})
    argv = ["quality", "--device", "cpu", "--results-dir", str(tmp_path), "--modes",
            "fp32,fp16-amp,bf16-amp", "--max-seeds", "6", *TINY]  # fmt: skip
    assert main(argv) == 0
    (run_dir,) = tmp_path.iterdir()
    assert seeds_of(run_dir) == {"fp32": set(range(5)), "bf16-amp": set(range(5)),
                                 "fp16-amp": {0, 1, 2}}  # fmt: skip
    env = json.loads((run_dir / "env.json").read_text())
    assert env["looks"] == [3, 4, 5] and asked == [[3], [3, 4], [3, 4, 5]]
    assert env["design"]["max_seeds"] == 6 and "ended" in env
    assert "**Looks**: at 3, 4, 5 seeds of a cap of 6" in (run_dir / "report.md").read_text()


def test_a_mode_undecided_at_the_cap_stops_there(tmp_path, monkeypatch, commit):
    injected(monkeypatch, {"bf16-amp": 99})
    argv = ["quality", "--device", "cpu", "--results-dir", str(tmp_path), "--modes",
            "fp32,bf16-amp", "--max-seeds", "4", *TINY]  # fmt: skip
    assert main(argv) == 0
    (run_dir,) = tmp_path.iterdir()
    assert seeds_of(run_dir) == {"fp32": set(range(4)), "bf16-amp": set(range(4))}
    assert json.loads((run_dir / "env.json").read_text())["looks"] == [3, 4]


def test_the_budget_stops_the_looks_and_resume_goes_on_at_the_same_commit(
    tmp_path, monkeypatch, commit, capsys
):
    injected(monkeypatch, {"bf16-amp": 5})
    times = iter([0.0, 0.0])  # the start, the first look; then the hour is spent
    monkeypatch.setattr(quality_looks, "clock", lambda: next(times, 10_000.0))
    argv = ["quality", "--device", "cpu", "--results-dir", str(tmp_path), "--modes",
            "fp32,bf16-amp", "--budget", "1h", *TINY]  # fmt: skip
    assert main(argv) == 0
    (run_dir,) = tmp_path.iterdir()
    env = json.loads((run_dir / "env.json").read_text())
    assert env["looks"] == [3] and "ended" not in env
    assert env["quality_config"]["max_seeds"] == seq.DEFAULT_MAX_SEEDS  # --budget alone: the cap
    assert "the budget ends before the look at 4 seeds" in capsys.readouterr().err
    # At another commit, adding seeds is refused: one line, exit 2, nothing trained.
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", "2222222bbbbbbb")
    assert main(["quality", "--resume", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a study is one commit" in err[0] and "1111111" in err[0]
    assert main(["quality", "--resume", str(run_dir), "--rerun-check"]) == 2
    assert "GPU only" in capsys.readouterr().err
    assert seeds_of(run_dir)["fp32"] == {0, 1, 2}
    # At the study's commit it goes on to the look that decides.
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", COMMIT)
    assert main(["quality", "--resume", str(run_dir)]) == 0
    env = json.loads((run_dir / "env.json").read_text())
    assert env["looks"] == [3, 4, 5] and "ended" in env


@pytest.mark.parametrize(
    ("seeds", "cap", "said"), [("0,1", "5", "fewer than 3"), ("0,1,2,3", "3", "below")]
)
def test_a_design_that_cannot_look_is_refused_before_any_folder(tmp_path, seeds, cap, said, capsys):
    argv = ["quality", "--device", "cpu", "--results-dir", str(tmp_path), "--seeds", seeds,
            "--max-seeds", cap]  # fmt: skip
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"--max-seeds {cap}" in line and said in line
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["15x", "-5m", "0", "soon"])
def test_a_bad_budget_is_one_line_naming_it(tmp_path, value, capsys):
    argv = ["quality", "--device", "cpu", "--results-dir", str(tmp_path), f"--budget={value}"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert value in err[-1] and "duration" in err[-1]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("a", "b", "said"),
    [
        (rules.LIKE, rules.WITHIN_WORSE, replication.AGREE),  # both inside the margin
        (rules.LIKE, rules.LIKE, replication.AGREE),
        (rules.WORSE, rules.WORSE, replication.AGREE),
        (rules.LIKE, rules.WORSE, replication.CONTRADICT),  # inside against outside
        (rules.WITHIN_BETTER, rules.BETTER, replication.CONTRADICT),
        (rules.WITHIN_WORSE, rules.WITHIN_BETTER, replication.CONTRADICT),  # opposite signs
        (rules.WORSE, rules.BETTER, replication.CONTRADICT),
        (rules.NOT_KNOWN, rules.WORSE, replication.UNDECIDED),
    ],
)
def test_replicates_contradict_only_where_both_cannot_be_true(a, b, said):
    assert replication.compare(a, b) == said
    assert replication.compare(b, a) == said


def test_a_replication_table_leaves_out_fp32_and_refuses_a_foreign_word():
    rows = replication.table({"fp32": rules.LIKE, "tf32": rules.LIKE, "fp8": rules.WORSE},
                             {"fp32": rules.LIKE, "tf32": rules.WITHIN_WORSE})  # fmt: skip
    assert rows == [{"mode": "tf32", "first": rules.LIKE, "second": rules.WITHIN_WORSE,
                     "agreement": replication.AGREE}]  # fmt: skip
    with pytest.raises(ValueError, match="'fastest'"):
        replication.compare("fastest", rules.LIKE)
