"""The README's test command on a machine that lacks the optional parts: every extra's packages
(`tests/optional.py`'s `OPTIONAL`) made unimportable at once, the whole suite still collects, with
no error and each module that needs them skipped, saying why; and in a copy of the tree without
`.git` (a release tarball), the tests that clone or ask git skip, saying so, rather than error at
their fixture's setup. Each check is one subprocess: about 10 s apiece on 2 cores."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.optional import OPTIONAL, ROOT, hiding

GIT_TESTS = [
    "tests/test_ab.py::test_ab_of_a_commit_with_itself_end_to_end",
    "tests/test_ab.py::test_the_rounds_alternate_in_the_jobs_own_loop",
    "tests/test_ab.py::test_a_revision_that_does_not_import_or_cannot_run_its_grid_is_one_line",
    "tests/test_ab.py::test_bad_input_is_one_line_and_exit_2",
    "tests/test_promote.py::test_runs_is_the_projects_git_ignored_folder",
    "tests/test_results_rule.py",
]
"""The tests that need a git checkout (or, for the rule of results/, read git's list of files
where there is one), and the test with them that must still pass without."""
NOT_A_CHECKOUT = 5
"""Of `GIT_TESTS`, the ones that skip in a copy without .git: the three of the clone, the one
bad revision among the bad inputs, and whether runs/ is git-ignored."""


def _env(**extra: str) -> dict[str, str]:
    """This environment without what pytest or pytest-xdist set for this process, so that the
    inner pytest is a session of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AMPBENCH_"))}
    return {**env, "OMP_NUM_THREADS": "1", **extra}


def _pytest(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_hiding_makes_a_module_unimportable_as_if_it_were_not_installed(tmp_path):
    env = hiding(tmp_path, ["csv", "plotly"], _env(PYTHONPATH=str(ROOT)))
    code = (
        "import importlib.util\n"
        "assert importlib.util.find_spec('csv') is None\n"
        "try:\n    import csv\nexcept ModuleNotFoundError as e:\n    print(e.name)\n"
        "import json; print(json.dumps(1))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["csv", "1"]  # json, not hidden, still imports


def test_the_suite_collects_without_any_optional_package(tmp_path):
    env = hiding(tmp_path, sorted(OPTIONAL), _env(PYTHONPATH=str(ROOT)))
    done = _pytest(ROOT, env, "--collect-only", "-q", "-rs", "tests")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert not re.search(r"\berrors?\b", out.splitlines()[-1]), out[-4000:]
    assert "ERROR collecting" not in out, out[-4000:]
    skipped = re.findall(r"^SKIPPED \[\d+\] (\S+?):\d+: (.*)$", out, re.M)
    assert ("tests/test_zoo.py", "transformers is not installed (the [zoo] extra)") in skipped
    for where, reason in skipped:  # every module skipped at collection says which part it lacks
        assert any(name in reason for name in OPTIONAL), (where, reason)


def test_the_git_tests_skip_in_a_copy_without_git(tmp_path):
    copy = tmp_path / "ampbench"
    junk = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".*_cache")

    def ignore(folder: str, names: list[str]) -> set[str]:
        top = {"results", "runs", "site"} if Path(folder) == ROOT else set()
        return set(junk(folder, names)) | (top & set(names))

    shutil.copytree(ROOT, copy, ignore=ignore, symlinks=True)
    done = _pytest(copy, _env(PYTHONPATH=str(copy)), "-q", "-rs", *GIT_TESTS)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    summary = out.splitlines()[-1]
    assert not re.search(r"\b(failed|errors?)\b", summary), out[-4000:]
    reasons = re.findall(r"^SKIPPED \[(\d+)\] \S+: not a git checkout \(", out, re.M)
    assert sum(int(n) for n in reasons) == NOT_A_CHECKOUT, out[-4000:]
