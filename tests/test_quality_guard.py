"""A study is one commit: every way runs join a resumed study passes one guard
(`bench.quality.commit.guard`), which refuses in one line, exit 2, with nothing in the folder
changed; `--rerun-check` reruns every mode within its own noise; `--add-seeds` never re-judges a
fixed study. One tiny study is trained for the module (git faked, so that the tree's own state
does not matter) and each test damages a copy of it."""

import hashlib
import json
import math
import shutil
from pathlib import Path

import pytest

from bench.cli import main
from bench.faults import UsageError
from bench.lifecycle.folder import Folder
from bench.measure import env
from bench.quality import commit as quality_commit
from bench.quality import job as quality
from bench.quality import tables
from bench.quality.config import QualityConfig
from bench.quality.render import runs as quality_runs
from bench.store import results
from bench.verdicts import training
from tests.test_quality_looks import injected

TINY = ["--steps", "4", "--eval-every", "2", "--batch-size", "2", "--heldout-limit", "4",
        "--timing-steps", "2", "--warmup", "1"]  # fmt: skip
A = env.Code("a" * 40, False, None, "git")
B = env.Code("b" * 40, False, None, "git")


def at(monkeypatch, code: env.Code) -> None:
    """This tree, as git would name it, with no override in the environment."""
    for name in (env.OVERRIDE, env.OVERRIDE_DIRTY, env.TRUST_OVERRIDE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(env, "_from_git", lambda: code)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A sequential study of fp32 and bf16-amp at commit A, looks at 3 and 4 seeds (bf16-amp
    judged not known at 3, as test_quality_looks injects it): 8 runs. The step times are set,
    not timed (most of a tiny study's time is its warm-up; the guard never reads them)."""
    out = tmp_path_factory.mktemp("study")
    with pytest.MonkeyPatch.context() as mp:
        at(mp, A)
        injected(mp, {"bf16-amp": 4})
        mp.setattr(quality, "time_step", lambda cfg, resolved: {
            "mode": resolved.mode.name, "step_ms": 1.0, "step_ms_p10": 1.0, "step_ms_p90": 1.0,
            "step_ms_iqr": 0.0, "timed_steps": 2, "peak_gib": None})  # fmt: skip
        argv = ["quality", "--device", "cpu", "--results-dir", str(out), "--modes",
                "fp32,bf16-amp", "--max-seeds", "4", *TINY]  # fmt: skip
        assert main(argv) == 0
    (run_dir,) = out.iterdir()
    return run_dir


@pytest.fixture
def study(trained, tmp_path, monkeypatch) -> Path:
    """This test's own copy of the study, the tree at A until the test says otherwise."""
    at(monkeypatch, A)
    return Path(shutil.copytree(trained, tmp_path / trained.name))


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def edit_env(folder: Path, change) -> None:
    info = json.loads((folder / "env.json").read_text())
    change(info)
    results.write_env(folder, info)


def edit_rows(folder: Path, table: str, change) -> None:
    """Rewrite a table's rows (`change(row)`: the row to keep, or None to drop it)."""
    path = tables.path(folder, table)
    rows = [r for r in (change(dict(r)) for r in results.read_jsonl(path)) if r is not None]
    results.packed(path).unlink(missing_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def drop_run(folder: Path, mode: str, seed: int) -> None:
    for table in ("runs", "curves", "checks"):
        edit_rows(folder, table, lambda r: None if (r["mode"], r["seed"]) == (mode, seed) else r)


def cut_look(folder: Path) -> None:
    """As a budget leaves the look at 4 seeds: fp32's seed 3 trained, bf16-amp's not."""
    drop_run(folder, "bf16-amp", 3)
    edit_env(folder, lambda i: (i.update(looks=[3]), i.pop("ended")))


def fixed(folder: Path) -> None:
    """The study as a fixed one of seeds 0-3 (no looks)."""

    def change(info):
        info["quality_config"].update(seeds=[0, 1, 2, 3], max_seeds=0)
        for key in ("looks", "design"):
            info.pop(key)

    edit_env(folder, change)


def refused(argv: list[str], folder: Path, capsys) -> str:
    """Run `argv`: exit 2, one line (returned), and every file of `folder` as it was."""
    before = snapshot(folder)
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert snapshot(folder) == before
    return lines[0]


def test_a_look_cut_after_fp32s_seed_goes_on_only_at_its_commit(study, monkeypatch, capsys):
    cut_look(study)
    at(monkeypatch, B)
    line = refused(["quality", "--resume", str(study)], study, capsys)
    assert "a study is one commit" in line and "aaaaaaa" in line and "bbbbbbb" in line
    at(monkeypatch, A)  # at its own commit, bf16-amp's seed 3 trains and the look is taken
    injected(monkeypatch, {"bf16-amp": 4})
    assert main(["quality", "--resume", str(study)]) == 0
    assert ("bf16-amp", 3) in tables.done(study)
    assert results.read_env(study)["looks"] == [3, 4]


def test_finishing_a_fixed_studys_own_seeds_at_another_commit_is_refused(
    study, monkeypatch, capsys
):
    fixed(study)
    drop_run(study, "bf16-amp", 3)  # one of the seeds it was started with, not yet trained
    at(monkeypatch, B)
    line = refused(["quality", "--resume", str(study)], study, capsys)
    assert "a study is one commit" in line and "bbbbbbb" in line


def test_adding_a_mode_at_another_commit_is_refused(study, monkeypatch, capsys):
    at(monkeypatch, B)
    argv = ["quality", "--resume", str(study), "--add-modes", "fp16-amp"]
    assert "a study is one commit" in refused(argv, study, capsys)


def test_a_dirty_tree_passes_only_with_the_runs_own_changes(study, monkeypatch, capsys):
    def dirty(record):
        return {**record, "dirty": True, "diff_hash": "111111111111"}

    edit_env(study, lambda i: i.update(dirty(i)))
    edit_rows(study, "runs", dirty)
    at(monkeypatch, env.Code(A.commit, True, "222222222222", "git"))
    line = refused(["quality", "--resume", str(study)], study, capsys)
    assert "uncommitted changes 111111111111" in line and "222222222222" in line
    at(monkeypatch, env.Code(A.commit, True, "111111111111", "git"))  # the same changes: one code
    assert main(["quality", "--resume", str(study)]) == 0


@pytest.mark.parametrize("how", ["no commit field", "commit None"])
def test_runs_whose_commit_is_unrecorded_are_refused(study, how, capsys):
    def unrecorded(row):
        if how == "no commit field":
            row.pop("commit")
        else:
            row["commit"] = None
        return row

    edit_rows(study, "runs", unrecorded)
    line = refused(["quality", "--resume", str(study)], study, capsys)
    assert "an unrecorded commit" in line and "start a new study" in line


def test_the_override_names_no_other_trees_commit(study, monkeypatch, capsys):
    # Git names B here: AMPBENCH_GIT_COMMIT set to the study's commit does not make it A ...
    at(monkeypatch, B)
    monkeypatch.setenv(env.OVERRIDE, A.commit)
    monkeypatch.setenv(env.OVERRIDE_DIRTY, "0")
    with pytest.warns(RuntimeWarning, match="ignored: git names bbbbbbb"):
        line = refused(["quality", "--resume", str(study)], study, capsys)
    assert "this tree is bbbbbbb" in line
    # ... it does where git names nothing (a copied tree), and the report says where it came from.
    at(monkeypatch, env.Code(None, None))
    monkeypatch.setenv(env.OVERRIDE, A.commit)
    monkeypatch.setenv(env.OVERRIDE_DIRTY, "0")
    assert main(["quality", "--resume", str(study)]) == 0
    edit_env(study, lambda i: i.update(commit_source=env.OVERRIDE))
    assert main(["report", str(study)]) == 0
    assert "(named by AMPBENCH_GIT_COMMIT, not read from git)" in (study / "report.md").read_text()


def test_seeds_added_to_a_fixed_study_are_refused_with_the_command_that_would_do(study, capsys):
    fixed(study)
    line = refused(["quality", "--resume", str(study), "--add-seeds", "4,5"], study, capsys)
    assert "optional stopping" in line
    assert "python -m bench quality" in line and line.endswith("--seeds 0,1,2,3 --max-seeds 6")
    # A sequential study adds its own.
    edit_env(study, lambda i: i["quality_config"].update(seeds=[0, 1, 2], max_seeds=4))
    line = refused(["quality", "--resume", str(study), "--add-seeds", "4"], study, capsys)
    assert "adds its own seeds in looks" in line


# The rerun check, on a hand-made study (no training): its rule, not a GPU's noise.

SEEDS = {"fp32": [2.000, 2.004, 2.008], "bf16-amp": [2.000, 2.005, 2.010]}
"""Best held-out losses by mode, seeds 0-2: seed SDs 0.004 and 0.005; the margin 0.02004."""


def hand_made(tmp_path, seeds=SEEDS) -> Folder:
    for mode, losses in seeds.items():
        for seed, best in enumerate(losses):
            tables.append(
                tmp_path,
                "runs",
                [
                    {
                        "mode": mode,
                        "seed": seed,
                        "status": "ok",
                        "steps": 1,
                        "commit": "aaaaaaa",
                        "dirty": False,
                    }
                ],
            )
            tables.append(tmp_path, "curves", [
                {"mode": mode, "seed": seed, "step": s, "train_loss": loss, "heldout_loss": loss,
                 "heldout_accuracy": math.nan} for s, loss in ((0, 4.0), (1, best))])  # fmt: skip
    info = {"commit": "a" * 40, "dirty": False, "quality_config": {}}
    return Folder(path=tmp_path, info=info, kind="quality")


CFG = QualityConfig.build("cuda", {"modes": ("fp32", "bf16-amp")})


def test_the_rerun_check_reruns_every_mode_within_its_own_noise(tmp_path, monkeypatch):
    folder = hand_made(tmp_path)
    at(monkeypatch, B)
    asked = []

    def retrain(mode, seed):
        asked.append((mode, seed))
        return SEEDS[mode][seed] + 0.014  # bf16-amp inside its tolerance, fp32 outside its own

    t = tables.load(tmp_path)
    limits = quality_commit.tolerances(training.per_run(t["curves"], t["runs"]), list(SEEDS))
    z = limits["fp32"]["z"]
    assert z == pytest.approx(2.2414, abs=1e-4)  # 5% shared by 2 modes, two-sided
    assert limits["fp32"]["tolerance"] == pytest.approx(z * math.sqrt(2) * 0.004)
    with pytest.raises(UsageError, match=r"fp32 seed 0's .* beyond its tolerance 0\.013 \(1 of 2"):
        quality_commit.guard(folder, CFG, rerun_check=True, retrain=retrain)
    assert asked == [("fp32", 0), ("bf16-amp", 0)]  # one seed of every mode, not fp32's alone
    assert "reruns" not in folder.info

    # A change confined to the low-precision mode, smaller than the margin, is seen.
    def changed(mode, seed):
        return SEEDS[mode][seed] + (0.018 if mode == "bf16-amp" else 0.001)

    with pytest.raises(UsageError, match="bf16-amp seed 0's"):
        quality_commit.guard(folder, CFG, rerun_check=True, retrain=changed)
    quality_commit.guard(folder, CFG, rerun_check=True, retrain=lambda m, s: SEEDS[m][s] + 0.001)
    rows = folder.info["reruns"]
    assert [r["mode"] for r in rows] == ["fp32", "bf16-amp"]
    assert rows[1]["tolerance"] == pytest.approx(z * math.sqrt(2) * 0.005)
    (line, _) = quality_runs.reruns({"env": folder.info})  # the report states each and its rule
    assert "fp32 seed 0 2.001 against 2.000 stored" in line and "bf16-amp seed 0" in line
    assert "= 2.24 × √2 × seed SD 0.0050)" in line


def test_a_mode_too_noisy_to_see_a_margin_is_refused_before_any_rerun(tmp_path, monkeypatch):
    folder = hand_made(tmp_path, {**SEEDS, "bf16-amp": [2.0, 2.1, 2.2]})
    at(monkeypatch, B)

    def retrain(mode, seed):
        raise AssertionError("nothing is retrained")

    with pytest.raises(UsageError, match=r"bf16-amp's seeds spread 0\.1 .* cannot tell"):
        quality_commit.guard(folder, CFG, rerun_check=True, retrain=retrain)
