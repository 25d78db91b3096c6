"""Whole numerics studies on the CPU: a folder from start to report, an interrupted study resumed,
the short study of a timing run, studies whose jobs all fail, and rendering without torch."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from bench.faults import UsageError
from bench.numerics import job as study_job
from bench.numerics.measure import config, jobs, tables, training
from bench.numerics.measure.config import NumericsConfig
from bench.numerics.render import report as render_report
from bench.numerics.render import study
from bench.store import folders, frames
from bench.workloads.mlp import PRESETS
from tests.optional import not_a_checkout
from tests.studies import resume_study, start_study

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "results" / "20261129T204750Z_NVIDIA-H200_35d9fdc_numerics"
"""The study of record (H200), as committed: its Answer must re-render word for word."""

SMALL = {
    "census_batch_sizes": [8],
    "conv_batch_sizes": [16],
    "modes": ["fp32", "fp16-amp", "fp16-amp-noscale"],
    "seeds": [0],
    "steps": 20,
    "eval_every": 10,
    "long_steps": 30,
    "checkpoints": [0, 5],
}
"""Four jobs: a census trajectory and three convergence runs."""
OLD_FIGURES = ("histogram.png", "loss_curves.png", "scale.png")
"""The figures of a folder older than the traces."""
FIGURES = (*OLD_FIGURES, "traces.png")


def _cfg(**options) -> NumericsConfig:
    return NumericsConfig.build(device="cpu", options={**SMALL, **options}, workers=None)


def _start(results_dir: Path, tag: str | None = None, **options) -> Path:
    return start_study(_cfg(**options), results_dir=results_dir, command="ampbench test", tag=tag)


@pytest.fixture(scope="module")
def small_study(tmp_path_factory) -> Path:
    return _start(tmp_path_factory.mktemp("whole"))


def test_a_study_writes_its_folder(small_study):
    assert small_study.name.endswith("_numerics")
    files = [t.path(small_study) for t in tables.TABLES.values()]
    files += [small_study / name for name in ("audit.json", "report.md", *FIGURES)]
    for path in files:
        assert path.is_file(), path.name
    assert (small_study / "convergence_traces.npz").is_file()  # the traces, compressed
    assert (small_study / "convergence_steps.csv.gz").is_file()
    assert not (small_study / study_job.JOBS_DIR).exists()
    info = json.loads((small_study / "env.json").read_text())
    assert info["command"] == "ampbench test" and info["run_name"] == small_study.name
    assert info["numerics_config"]["lr"] == 3e-4 and "started" in info and "ended" in info
    steps = frames.read_csv(small_study / "convergence_steps.csv.gz")
    assert steps.groupby("mode")["step"].max().to_dict() == {
        "fp16-amp": 29,
        "fp16-amp-noscale": 19,
        "fp32": 19,
    }
    assert frames.read_csv(small_study / "failed.csv").empty
    traces = tables.read(small_study, "traces")
    assert sorted(traces["step"].unique())[:3] == [0, 2, 4]  # trace_every 2 on the CPU
    summary = frames.read_csv(small_study / "summary.csv")
    assert set(summary["divergence"]) <= {"none", "blowup", "nonfinite"}
    assert frames.read_csv(small_study / "census.csv.gz")["loss"].notna().all()
    report = (small_study / "report.md").read_text()
    assert "## 5. Answer" in report and "the loss is float32" in report
    assert "### Traces" in report and "**Divergence**" in report
    assert "python -m bench" not in report.split("## 1.")[0]  # no resumption to list


def test_rows_carry_what_they_are(small_study):
    t = tables.load(small_study)
    audit, census = t["audit"], t["census"]
    assert set(audit["kind"]) == set(tables.PHASE)
    assert (audit["phase"] == audit["kind"].map(tables.PHASE)).all()
    logits = audit[(audit["kind"] == tables.ACTIVATION) & (audit["module"] == "fc3")]
    assert dict(zip(logits["mode"], logits["dtype"], strict=True))["fp16-amp"] == "float16"
    assert set(census["kind"]) == {tables.ACTIVATION_GRAD, tables.PRODUCED_GRAD}
    observed = ("fc1", "relu", "fc2", "fc3")  # the MLP's observed outputs, the ReLU's among them
    params = {f"{fc}.{p}" for fc in ("fc1", "fc2", "fc3") for p in ("weight", "bias")}
    assert set(census["module"]) == {*observed, *params}
    assert set(logits["tensor"]) == {"logits (fc3 output)"}


def test_old_folders_get_the_columns_from_their_labels(small_study, tmp_path):
    """A folder written before the tensor columns existed (the committed results) loads with the
    same columns as a new one."""
    old = tmp_path / "old"
    shutil.copytree(small_study, old)
    for name in ("audit", "census", "fp16_fate"):
        path = tables.TABLES[name].path(old)
        df = frames.read_csv(path)
        path.unlink()  # such a folder kept every table as a plain CSV
        df.drop(columns=[c for c in tables.TENSOR_COLUMNS if c in df.columns]).to_csv(
            old / tables.TABLES[name].file, index=False
        )
    (old / "failed.csv").write_text("\n")  # how older folders wrote an empty table
    new_t, old_t = tables.load(small_study), tables.load(old)
    for name in ("audit", "census", "fp16_fate", "failed"):
        pd.testing.assert_frame_equal(old_t[name], new_t[name], check_dtype=False)
    assert list(old_t["failed"].columns) == list(tables.TABLES["failed"].columns)


def test_an_unknown_old_label_is_named(small_study, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(small_study, old)
    path = tables.TABLES["audit"].path(old)
    audit = frames.read_csv(path).drop(columns=list(tables.TENSOR_COLUMNS))
    path.unlink()
    audit.loc[0, "tensor"] = "a tensor nobody wrote"
    audit.to_csv(old / "audit.csv", index=False)  # an older folder's plain CSV
    with pytest.raises(UsageError, match="'a tensor nobody wrote'"):
        study.render(old)


def test_render_without_torch(small_study, tmp_path):
    """The rendering modules import, and a stored folder renders, where torch cannot be imported;
    the report is the one the study wrote."""
    copy = tmp_path / "copy"
    shutil.copytree(small_study, copy)
    for name in ("report.md", *FIGURES):
        (copy / name).unlink()
    code = (
        # torch made unfindable, as where it is not installed (sys.modules['torch'] = None would
        # also stop it, but scipy's array-API check reads that entry and fails on it).
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from pathlib import Path\n"
        "from bench.numerics import analysis, render\n"
        "from bench.numerics.analysis import failures, runs, summary\n"
        "from bench.numerics.render import answer, plots, report, study\n"
        f"print(study.render(Path({str(copy)!r})))\n"
        "assert 'torch' not in sys.modules\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(copy / "report.md")
    assert (copy / "report.md").read_text() == (small_study / "report.md").read_text()
    assert all((copy / f).is_file() for f in FIGURES)


def _answer(report: str) -> list[str]:
    """The Answer's sentences, without the line that names the file computing them."""
    section = report.split("## 5. Answer", 1)[1]
    return [p for p in section.strip().split("\n\n") if not p.startswith("Computed from")]


def _committed_as_is(folder: Path) -> bool:
    """The folder is there as git tracks it: a user's own changes under results/ never decide
    a test's outcome."""
    if not_a_checkout(ROOT):
        return False
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--error-unmatch", str(folder / "report.md")],
        capture_output=True,
        check=False,
    )
    changed = subprocess.run(
        ["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--", str(folder)],
        capture_output=True,
        check=False,
    )
    return tracked.returncode == 0 and changed.returncode == 0


def test_the_study_of_record_rerenders(tmp_path):
    if not _committed_as_is(RECORD):
        pytest.skip(f"{RECORD.name} is not there as committed (no git, or changed locally)")
    copy = tmp_path / RECORD.name
    shutil.copytree(RECORD, copy, ignore=shutil.ignore_patterns("*.png", "report.md"))
    committed = (RECORD / "report.md").read_text()
    rendered = study.render(copy).read_text()
    # 8 paragraphs: the study's own step times are no GradScaler cost (no "What GradScaler costs")
    assert _answer(rendered) == _answer(committed) and len(_answer(committed)) == 8
    assert all((copy / f).is_file() for f in OLD_FIGURES)
    assert not (copy / "traces.png").exists()  # no traces in a folder older than them


def test_an_interrupted_study_resumes_where_it_stopped(small_study, tmp_path, monkeypatch):
    real_job, ran = jobs.run_job, []

    def killed_after_two(job):
        if len(ran) == 2:
            raise KeyboardInterrupt  # as a time limit or Ctrl-C stops the study
        ran.append(job.key)
        return real_job(job)

    monkeypatch.setattr(jobs, "run_job", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        _start(tmp_path / "results")
    (cut,) = (tmp_path / "results").iterdir()
    assert sorted(f.stem for f in (cut / study_job.JOBS_DIR).glob("*.json")) == sorted(ran)
    assert not (cut / "summary.csv").exists()

    with pytest.raises(UsageError, match="complete"):
        resume_study(small_study, workers=None, force=False)
    with pytest.raises(UsageError, match=r"no env\.json"):
        resume_study(tmp_path, workers=None, force=False)
    with pytest.raises(UsageError, match="no such folder"):
        resume_study(tmp_path / "nothing", workers=None, force=False)
    with pytest.raises(UsageError, match="workers 2"):
        resume_study(cut, workers=2, force=False)
    with folders.locked(cut), pytest.raises(UsageError, match="being written"):
        resume_study(cut, workers=None, force=False)
    assert len(json.loads((cut / "env.json").read_text()).get("resumed", [])) == 0

    before, ran = ran, []
    monkeypatch.setattr(jobs, "run_job", lambda job: ran.append(job.key) or real_job(job))
    monkeypatch.setattr(sys, "argv", ["bench", "numerics", "--resume", str(cut)])  # as recorded
    assert resume_study(cut, workers=None, force=False) == cut
    assert len(ran) == 2 and not set(ran) & set(before)
    assert not (cut / study_job.JOBS_DIR).exists()
    # The CPU is deterministic, so the resumed study's tables are those of the whole one.
    for name in ("steps", "evals", "census", "histogram", "audit"):
        pd.testing.assert_frame_equal(tables.read(cut, name), tables.read(small_study, name))
    info = json.loads((cut / "env.json").read_text())
    assert "ended" in info and len(info["resumed"]) == 1
    report = (cut / "report.md").read_text()
    assert "## 5. Answer" in report and "resumed 1 time(s)" in report
    assert f"python -m bench numerics --resume {cut.name}" in report  # no machine path


def test_a_timing_run_can_run_a_short_study_into_its_folder(tmp_path):
    cfg = config.short_config(
        device="cpu",
        size=PRESETS["tiny"],
        modes=["fp32", "fp16-amp", "bf16-amp"],
        batch_sizes=[8, 16],
        optimizer="fused",
    )
    folder = tmp_path / "RUN" / "numerics"
    folder.mkdir(parents=True)
    info = {"device": "cpu", "run_name": "RUN/numerics", "numerics_config": cfg.record()}
    (folder / "env.json").write_text(json.dumps(info))
    study_job.run_into(cfg, folder, info)
    study.render(folder)
    assert "ended" in json.loads((folder / "env.json").read_text())
    assert "## 5. Answer" in (folder / "report.md").read_text()
    census = frames.read_csv(folder / "census.csv.gz")
    assert sorted(census["batch_size"].unique()) == [8, 16] and set(census["step"]) == {0, 100}
    steps = frames.read_csv(folder / "convergence_steps.csv.gz")
    assert steps.groupby("mode")["step"].max().to_dict() == {
        "bf16-amp": 199,
        "fp16-amp": 199,
        "fp32": 199,
    }


def _failing(exc: BaseException):
    def fail(*args, **settings):
        raise exc

    return fail


FAST = {"modes": ["fp32", "fp16-amp-noscale"], "steps": 10, "long_steps": 0, "checkpoints": [0]}


def test_a_study_whose_census_jobs_all_fail_still_renders(tmp_path, monkeypatch):
    monkeypatch.setattr(training, "census_trajectory", _failing(RuntimeError("boom\ndetails")))
    run_dir = _start(tmp_path, tag="no-census", **FAST)
    assert run_dir.name.endswith("_numerics_no-census")
    failed = frames.read_csv(run_dir / "failed.csv")
    assert failed[["kind", "status", "error"]].values.tolist() == [
        ["census", "error", "RuntimeError: boom"]
    ]
    assert list(frames.read_csv(run_dir / "census.csv.gz").columns) == list(
        tables.TABLES["census"].columns
    )
    report = (run_dir / "report.md").read_text()
    assert "## Jobs that failed" in report and "RuntimeError: boom" in report
    assert "No rows: every census job failed" in report
    assert "**Underflow.** Not measured" in report
    assert "![histogram]" not in report and not (run_dir / "histogram.png").exists()
    assert "![loss curves](loss_curves.png)" in report


def test_a_study_whose_convergence_jobs_all_fail_still_renders(tmp_path, monkeypatch):
    oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
    monkeypatch.setattr(training, "convergence", _failing(oom))
    run_dir = _start(tmp_path, **FAST)
    failed = frames.read_csv(run_dir / "failed.csv")
    assert set(failed["kind"]) == {"convergence"} and set(failed["status"]) == {"oom"}
    assert len(failed) == 2
    assert frames.read_csv(run_dir / "summary.csv").empty
    report = (run_dir / "report.md").read_text()
    assert "No rows: every convergence job failed" in report
    assert "did not train both fp32 and fp16 without a scaler" in report
    assert "Not known from this study" in report
    assert "loss_curves.png" not in report and not (run_dir / "loss_curves.png").exists()
    assert "## 2. Underflow census" in report and "![histogram](histogram.png)" in report


def test_only_a_finished_study_renders(tmp_path):
    (tmp_path / "env.json").write_text(json.dumps({"numerics_config": {}}))
    with pytest.raises(UsageError, match="has not finished"):
        study.render(tmp_path)


def test_an_older_study_is_rewritten_in_this_versions_forms_and_renders_the_same(
    small_study, tmp_path, monkeypatch
):
    # The folder as an older version left it: every table a plain CSV.
    old = tmp_path / small_study.name
    shutil.copytree(small_study, old)
    before = {}
    for name, table in tables.TABLES.items():
        if table.path(old).is_file():
            before[name] = tables.read(old, name)
            table.path(old).unlink()
            before[name].to_csv(old / table.file, index=False)
    with monkeypatch.context() as m:  # the report as the old forms give it
        m.setattr(tables, "compact", lambda run_dir: [])
        report = study.render(old).read_text()
    assert "`convergence_traces.csv`" in report
    study.render(old)  # a re-render rewrites the tables in this version's forms
    assert tables.compact(old) == []
    for name, df in before.items():
        table = tables.TABLES[name]
        assert table.path(old) == table.forms(old)[table.form], name
        pd.testing.assert_frame_equal(tables.read(old, name), df, check_exact=True)
    # The same report, but for the names of the files it points to.
    again = (old / "report.md").read_text()
    for table in tables.TABLES.values():
        again = again.replace(f"`{table.path(old).name}`", f"`{table.file}`")
    assert again == report


def test_a_forced_resume_is_said_in_the_report():
    env = {
        "command": "python -m bench numerics --model hf:gpt2",
        "resumed": [
            {
                "at": "2026-12-01T19:18:16+00:00",
                "argv": ["bench/__main__.py", "numerics", "--resume", "X", "--force"],
                "forced": ["commit '19cd31c' there, '9f4e1e2' here"],
            }
        ],
    }
    text = "\n".join(render_report._provenance(env))
    assert "python -m bench numerics --resume X --force" in text
    assert "with `--force`" in text and "commit '19cd31c' there, '9f4e1e2' here" in text
