"""Where a run's commit comes from."""

from bench import env


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
    answers = {"rev-parse": "a" * 40, "status": " M bench/env.py"}
    monkeypatch.setattr(env, "_run", lambda cmd: answers[cmd[3]])
    assert env.git_commit() == ("a" * 40, True)
