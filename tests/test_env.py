"""Where a run's commit comes from: git, or `AMPBENCH_GIT_COMMIT` only where git names none or
`AMPBENCH_GIT_OVERRIDE=1` says the copy's .git is not its own."""

import pytest

from bench.measure import env

SHA = "e7744030e1944cea63ee314ba43133ca9185bb04"


def git_answers(answers: dict[str, str | None]):
    """A fake `env._run`: git's answer by subcommand (rev-parse, status, diff, ls-files)."""
    seen = []

    def run(cmd):
        seen.append(cmd)
        return answers.get(cmd[3])

    run.seen = seen
    return run


@pytest.fixture
def no_override(monkeypatch):
    for name in (env.OVERRIDE, env.OVERRIDE_DIRTY, env.TRUST_OVERRIDE):
        monkeypatch.delenv(name, raising=False)


def test_the_override_names_the_commit_of_a_copy_git_cannot_read(monkeypatch, no_override):
    monkeypatch.setattr(env, "_run", git_answers({}))  # no git, or a copy git cannot read
    assert env.code() == env.Code(None, None)
    monkeypatch.setenv(env.OVERRIDE, SHA)
    monkeypatch.setenv(env.OVERRIDE_DIRTY, "0")
    assert env.git_commit() == (SHA, False)
    assert env.code().source == env.OVERRIDE  # the folder and its report say where it came from
    monkeypatch.delenv(env.OVERRIDE_DIRTY)
    assert env.git_commit()[1] is None  # not said, so not known


def test_git_wins_over_the_override_unless_told_the_copy_is_not_its_own(monkeypatch, no_override):
    monkeypatch.setattr(env, "_run", git_answers({"rev-parse": "b" * 40}))
    monkeypatch.setenv(env.OVERRIDE, SHA)
    monkeypatch.setenv(env.OVERRIDE_DIRTY, "0")
    with pytest.warns(RuntimeWarning, match=f"{env.OVERRIDE}={SHA} ignored: git names bbbbbbb"):
        assert env.code() == env.Code("b" * 40, False, None, "git")
    monkeypatch.setenv(env.TRUST_OVERRIDE, "1")  # a copy whose .git is stale, or a test
    assert env.code() == env.Code(SHA, False, None, env.OVERRIDE)


def test_without_it_git_or_nothing(monkeypatch, no_override):
    answers = {"rev-parse": "a" * 40, "status": " M bench/measure/env.py", "diff": "+x"}
    monkeypatch.setattr(env, "_run", git_answers(answers))
    made = env.code()
    assert (made.commit, made.dirty, made.source) == ("a" * 40, True, "git")
    assert len(made.diff_hash) == 12


def test_a_dirty_trees_hash_is_its_diff_and_its_untracked_files(monkeypatch, no_override):
    answers = {"rev-parse": "a" * 40, "status": " M bench/x.py", "diff": "+x"}
    monkeypatch.setattr(env, "_run", git_answers(answers))
    one = env.code().diff_hash
    assert env.code().diff_hash == one  # the same changes, the same hash
    answers["diff"] = "+y"
    assert env.code().diff_hash != one
    answers["diff"] = "+x"
    answers["ls-files"] = "bench/__init__.py\0"  # an untracked module (a real file, read here)
    assert env.code().diff_hash != one
    answers["status"] = None  # clean: no hash (untracked files alone do not make it dirty)
    assert env.code() == env.Code("a" * 40, False, None, "git")


def test_dirty_looks_at_the_code_and_not_at_results(monkeypatch, no_override):
    fake = git_answers({"rev-parse": "b" * 40})  # status: nothing changed
    monkeypatch.setattr(env, "_run", fake)
    assert env.git_commit() == ("b" * 40, False)
    assert ":!results" in fake.seen[-1]


def test_a_pytest_benchmark_save_is_named_after_the_commit(monkeypatch, no_override):
    monkeypatch.setenv(env.TRUST_OVERRIDE, "1")
    monkeypatch.setenv(env.OVERRIDE, SHA)
    monkeypatch.setenv(env.OVERRIDE_DIRTY, "0")
    assert env.benchmark_save_name() == "e774403"
    monkeypatch.setenv(env.OVERRIDE_DIRTY, "1")
    assert env.benchmark_save_name() == "e774403_uncommitted-changes"
    monkeypatch.delenv(env.OVERRIDE)
    monkeypatch.setattr(env, "_run", lambda cmd: None)
    assert env.benchmark_save_name() == "nogit"
