"""Where a run's commit comes from."""

from bench.measure import env


def test_the_commit_given_in_the_environment_wins_over_git(monkeypatch):
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", "e7744030e1944cea63ee314ba43133ca9185bb04")
    monkeypatch.setenv("AMPBENCH_GIT_DIRTY", "0")
    assert env.git_commit() == ("e7744030e1944cea63ee314ba43133ca9185bb04", False)
    monkeypatch.delenv("AMPBENCH_GIT_DIRTY")
    assert env.git_commit()[1] is None  # not said, so not known


def test_without_it_git_or_nothing(monkeypatch):
    monkeypatch.delenv("AMPBENCH_GIT_COMMIT", raising=False)
    monkeypatch.setattr(env, "_run", lambda cmd: None)  # no git, or a copy git cannot read
    assert env.git_commit() == (None, None)
    answers = {"rev-parse": "a" * 40, "status": " M bench/measure/env.py"}
    monkeypatch.setattr(env, "_run", lambda cmd: answers[cmd[3]])
    assert env.git_commit() == ("a" * 40, True)


def test_dirty_looks_at_the_code_and_not_at_results(monkeypatch):
    monkeypatch.delenv("AMPBENCH_GIT_COMMIT", raising=False)
    seen = []

    def fake_git(cmd):
        seen.append(cmd)
        return "b" * 40 if cmd[3] == "rev-parse" else None  # status: nothing changed

    monkeypatch.setattr(env, "_run", fake_git)
    assert env.git_commit() == ("b" * 40, False)
    assert ":!results" in seen[-1]


def test_a_pytest_benchmark_save_is_named_after_the_commit(monkeypatch):
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", "e7744030e1944cea63ee314ba43133ca9185bb04")
    monkeypatch.setenv("AMPBENCH_GIT_DIRTY", "0")
    assert env.benchmark_save_name() == "e774403"
    monkeypatch.setenv("AMPBENCH_GIT_DIRTY", "1")
    assert env.benchmark_save_name() == "e774403_uncommitted-changes"
    monkeypatch.delenv("AMPBENCH_GIT_COMMIT")
    monkeypatch.setattr(env, "_run", lambda cmd: None)
    assert env.benchmark_save_name() == "nogit"
