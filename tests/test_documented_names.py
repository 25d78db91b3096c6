"""Every public name the docs of the last two releases (197ed14 and 11e7863: README.md, docs/)
told users to type: commands, environment variables, imports and the files of a folder. Each
still works, or works and warns that its name will go (a documented name keeps working for a
release, with a DeprecationWarning, as Python's own policy has it).

The lists were read from the docs' history (`git show <commit>:docs/own-loop.md`, `git log -p
-- README.md docs/`); `test_the_docs_name_nothing_this_file_does_not_list` keeps them complete
for the names a user types."""

from __future__ import annotations

import gzip
import importlib
import json
import re
import sys
import warnings
from pathlib import Path

import pytest

from bench import faults, outcome
from bench.cli import main
from bench.measure import env
from bench.ownloop import contract
from bench.store import paths, results

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = ("run", "report", "headline", "compare", "ab", "numerics", "quality", "maxbatch",
            "index", "promote", "history", "export", "readme", "publish", "check",
            "sweep", "record", "pages")  # fmt: skip
"""The `ampbench` / `./run_bench.sh` commands the docs name."""
RENAMED_COMMANDS = {"recipes": "sweep"}
"""An old command's name -> its name now: it still runs, saying so on stderr."""
SCRIPT_COMMANDS = ("pytest",)
"""What only `./run_bench.sh` runs (not `ampbench`)."""

VARIABLES = {
    "AMPBENCH_MODE": (contract, "MODE"),
    "AMPBENCH_RECIPE": (contract, "OLD_MODE"),
    "AMPBENCH_SEED": (contract, "SEED"),
    "AMPBENCH_OUT": (contract, "OUT"),
    "AMPBENCH_DEBUG": (faults, "DEBUG_VAR"),
    "AMPBENCH_RESULT_JSON": (outcome, "RESULT_VAR"),
    "AMPBENCH_CWD": (paths, "CWD_VAR"),
    "AMPBENCH_GIT_COMMIT": (env, "OVERRIDE"),
    "AMPBENCH_GIT_DIRTY": (env, "OVERRIDE_DIRTY"),
    "AMPBENCH_GIT_OVERRIDE": (env, "TRUST_OVERRIDE"),
}
"""Each variable the docs name -> where ampbench names it for its reader."""
SCRIPT_VARIABLES = ("AMPBENCH_BENCH_STORAGE",)
"""What only run_bench.sh reads."""

IMPORTS = (
    "from bench.data.sources import Batch, generator, get",
    "from bench.measure.timing import clock_for",
    "from bench.ownloop import census",
    "from bench.ownloop import contract",
    "from bench.ownloop.hf import ProbeCallback, precision_args",
    "from bench.ownloop.probe import Probe",
    "from bench.verdicts.defaults import CONFIDENCE",
    "from bench.verdicts.rounds import paired_ratio, rounds_verdict",
    "from bench.workloads import gpt, heads",
    "from bench.workloads.base import Workload, from_model",
    "from bench.modes.mode import MODES",
    "import bench; bench.probe, bench.load, bench.load_samples",
)
"""The imports the docs and the examples they point to show."""
DEPRECATED_IMPORTS = {"from bench.ownloop import recipe": ("bench.ownloop.recipe", "contract")}
"""An import by an old name -> (the module it loads, the new name its warning names)."""

FOLDER_FILES = {
    "rows.jsonl": (results, "ROWS"),
    "samples.jsonl": (results, "SAMPLES"),
    "env.json": (results, "ENV"),
    "results.csv": (results, "CSV"),
    "report.md": (results, "REPORT"),
}
"""A results folder's files the docs name -> where the reader names them (each may be packed,
`<name>.gz`: `test_a_published_folders_packed_files_are_read`)."""


@pytest.mark.parametrize("name", COMMANDS)
def test_each_documented_command_runs(name, capsys):
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    assert name in capsys.readouterr().out


@pytest.mark.parametrize(("old", "new"), RENAMED_COMMANDS.items())
def test_an_old_command_name_runs_its_command_and_says_so(old, new, capsys):
    with pytest.raises(SystemExit) as exc:
        main([old, "--help"])
    assert exc.value.code == 0
    assert f"`{old}` is now `{new}`" in capsys.readouterr().err


@pytest.mark.parametrize("name", SCRIPT_COMMANDS)
def test_a_script_only_command_is_still_the_scripts(name):
    assert re.search(rf"^\s*{name}\)", (ROOT / "run_bench.sh").read_text(), re.M)


@pytest.mark.parametrize(("name", "where"), VARIABLES.items())
def test_each_documented_variable_is_the_one_read(name, where):
    module, attr = where
    assert getattr(module, attr) == name


def test_the_drivers_variables_are_read_under_their_old_names_too(monkeypatch):
    monkeypatch.delenv("AMPBENCH_MODE", raising=False)
    monkeypatch.setenv("AMPBENCH_RECIPE", "bf16-amp")
    monkeypatch.setenv("AMPBENCH_SEED", "7")
    assert contract.asked() == "bf16-amp" and contract.seed() == 7


@pytest.mark.parametrize("name", SCRIPT_VARIABLES)
def test_a_script_only_variable_is_still_the_scripts(name):
    assert name in (ROOT / "run_bench.sh").read_text()


@pytest.mark.parametrize("statement", IMPORTS)
def test_each_documented_import_works_without_a_warning(statement):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        exec(statement, {})  # the docs' own line, as a user's script runs it


def _forget(monkeypatch, module: str) -> None:
    """`module` as if never imported, so its import runs (and warns) again."""
    monkeypatch.delitem(sys.modules, module, raising=False)
    parent, _, child = module.rpartition(".")
    monkeypatch.delattr(importlib.import_module(parent), child, raising=False)


@pytest.mark.parametrize(("statement", "moved"), DEPRECATED_IMPORTS.items())
def test_an_old_import_works_and_warns_naming_the_new_one(statement, moved, monkeypatch):
    module, new = moved
    _forget(monkeypatch, module)
    with pytest.warns(DeprecationWarning, match=new):
        exec(statement, {})


def test_the_old_contract_module_reads_the_seed_as_the_docs_showed(monkeypatch):
    # The 197ed14 docs: `from bench.ownloop import recipe` ... `seed = recipe.seed()`.
    _forget(monkeypatch, "bench.ownloop.recipe")
    monkeypatch.setenv("AMPBENCH_SEED", "3")
    with pytest.warns(DeprecationWarning, match="contract"):
        from bench.ownloop import recipe
    assert recipe.seed() == 3 and recipe.seed is contract.seed


@pytest.mark.parametrize(("name", "where"), FOLDER_FILES.items())
def test_each_documented_folder_file_is_the_one_read(name, where):
    module, attr = where
    assert getattr(module, attr) == name


def test_a_published_folders_packed_files_are_read(tmp_path):
    row = {"case_id": "a", "samples_ms": {"total": [1.0, 2.0]}}
    (tmp_path / "samples.jsonl.gz").write_bytes(gzip.compress(json.dumps(row).encode() + b"\n"))
    (tmp_path / "rows.jsonl").write_text(json.dumps({"case_id": "a"}) + "\n")
    assert results.read_rows(tmp_path / "samples.jsonl") == [row]
    assert results.read_rows(tmp_path / "rows.jsonl") == [{"case_id": "a"}]


def test_an_old_sweep_folders_page_is_read(tmp_path):
    from bench.ownloop import render as own_loop

    (tmp_path / "recipes.md").write_text("# the sweep\n")
    assert own_loop.written(tmp_path) == tmp_path / "recipes.md"


def _docs_text() -> str:
    return "\n".join(
        p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    )


def test_the_docs_name_nothing_this_file_does_not_list():
    # A command or variable the docs add joins the lists above, so it is kept from then on.
    text = _docs_text()
    variables = set(re.findall(r"\bAMPBENCH_[A-Z_]+\b", text))
    known = {*VARIABLES, *SCRIPT_VARIABLES}
    assert variables <= known, f"add to VARIABLES: {sorted(variables - known)}"
    commands = set(re.findall(r"(?:\./run_bench\.sh|\bampbench) ([a-z][a-z-]+)\b", text))
    known_commands = {*COMMANDS, *RENAMED_COMMANDS, *SCRIPT_COMMANDS}
    # Words after "ampbench" in prose ("ampbench can ...") are not commands: only those
    # the parser or run_bench.sh would take as one count.
    taken = {c for c in commands if c in _parser_commands() or c in SCRIPT_COMMANDS}
    assert taken <= known_commands, f"add to COMMANDS: {sorted(taken - known_commands)}"


def _parser_commands() -> set[str]:
    from bench.cli.table import COMMANDS as TABLE
    from bench.cli.table import RENAMED

    return {*TABLE, *RENAMED}
