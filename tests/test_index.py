"""results/README.md generated from the folders: one row per run folder of every kind, a section
per subfolder, links to the reports; rewritten after a run only when it is the project's."""

import json

import pytest

from bench import index, paths, results
from tests.stored import small_grid, write_run


def _numerics(folder, *, ended=True, cfg=None):
    folder.mkdir(parents=True)
    env = {
        "device": "cuda",
        "gpu": "NVIDIA H200",
        "torch": "2.99.0",
        "commit": "0157d671219512057e5c025380cfbe72d7f4bc0a",
        "dirty": False,
        "started": "2026-11-29T12:00:00+00:00",
        "numerics_config": {
            "modes": ["fp32"],
            "conv_batch_sizes": [1024],
            "census_batch_sizes": [1024],
            "seeds": [0],
            "steps": 300,
            "long_steps": 0,
            "lr": 0.001,
            "workers": 2,
            "input_size": 1024,
            "hidden_size": 16000,
            "num_classes": 2000,
            **(cfg or {}),
        },
    }
    if ended:
        env["ended"] = env["started"]
    results.write_env(folder, env)
    (folder / "failed.csv").write_text("")  # an empty table may have no header at all
    (folder / results.REPORT).write_text("# numerics\n")


@pytest.fixture
def tree(tmp_path):
    """A results folder with one folder of each kind, a sweep subfolder, pytest-benchmark saves,
    a session log and hand-written notes."""
    run = write_run(tmp_path / "20261129T100000Z_cpu_nogit", small_grid())
    (run / results.REPORT).write_text("# report\n")
    (run / "compare_self_optimizer_foreach_vs_fused.md").write_text("# compare\n")
    _numerics(tmp_path / "20261129T120000Z_NVIDIA-H200_0157d67_numerics")
    _numerics(tmp_path / "lr-sweep" / "20261129T130000Z_x_numerics_lr-1e-4", cfg={"lr": 1e-4})
    _numerics(
        tmp_path / "20261129T140000Z_x_numerics_stress", ended=False, cfg={"reduction": "sum"}
    )
    mb = tmp_path / "20261129T150000Z_cpu_nogit_maxbatch"
    mb.mkdir()
    results.write_env(mb, {"device": "cpu", "gpu": "cpu", "started": "2026-11-29T15:00:00+00:00",
                           "ended": "x", "maxbatch_config": {"preset": "tiny", "modes": ["fp32"],
                           "optimizer": "fused", "start": 8, "limit": 64}})  # fmt: skip
    for bs, status in ((8, "ok"), (16, "ok"), (32, "oom")):
        results.append_jsonl(
            mb / "trials.jsonl",
            {"mode": "fp32", "variant": "eager", "batch_size": bs, "status": status},
        )
    saves = tmp_path / "pytest-benchmark" / "Linux-CPython-3.12-64bit"
    saves.mkdir(parents=True)
    (saves / "0001_x.json").write_text(
        json.dumps(
            {
                "machine_info": {},
                "commit_info": {"id": "abcdef0123"},
                "datetime": "2026-11-29T16:00:00+00:00",
                "benchmarks": [{"extra_info": {"gpu": "NVIDIA H200", "optimizer": "fused"}}],
            }
        )
    )
    (tmp_path / "pytest-benchmark" / "compare_0001_0002.txt").write_text("table\n")
    (tmp_path / "session_x.log").write_text("log\n")
    (tmp_path / index.NOTES).write_text("# Notes\n")
    return tmp_path


def test_every_folder_has_a_row_and_every_subfolder_a_section(tree):
    text = index.render(tree)
    for heading in ("## Runs", "## lr-sweep/", "## pytest-benchmark/", "## Logs and other files"):
        assert f"\n{heading}\n" in text, heading
    runs = text.split("## Runs")[1].split("\n## ")[0]
    rows = [line for line in runs.splitlines() if line.startswith("| ") and "| 2026-" in line]
    assert len(rows) == 4  # timing, numerics, unfinished numerics, maxbatch
    assert "[20261129T100000Z_cpu_nogit](20261129T100000Z_cpu_nogit/report.md)" in runs
    assert "12 of 12 ok" in runs
    assert "bf16-amp, fused at batch 32" in runs  # the headline: bf16-amp at the largest batch
    assert "compare_self_optimizer_foreach_vs_fused" in runs
    assert "NVIDIA H200 ×2" in runs and "`0157d67`" in runs and "| seed " in runs
    assert "did not finish" in runs and "stress reduction sum" in runs
    assert "largest batch: fp32 16" in runs and "(no report)" in runs
    sweep = text.split("## lr-sweep/")[1]
    assert "(lr-sweep/20261129T130000Z_x_numerics_lr-1e-4/report.md)" in sweep
    assert "lr 0.0001" in sweep
    bench = text.split("## pytest-benchmark/")[1]
    assert "0001_x.json" in bench and "`abcdef0`" in bench and "compare_0001_0002.txt" in bench
    assert "[session_x.log](session_x.log)" in text and f"]({index.NOTES})" in text
    assert "Do not edit" in text


def test_refresh_touches_only_the_projects_results(tree, monkeypatch):
    assert index.refresh(tree / "20261129T100000Z_cpu_nogit") is None
    assert not (tree / index.INDEX).exists()
    monkeypatch.setattr(paths, "RESULTS", tree)
    assert index.refresh(tree / "lr-sweep" / "20261129T130000Z_x_numerics_lr-1e-4") == (
        tree / index.INDEX
    )
    assert "## lr-sweep/" in (tree / index.INDEX).read_text()


def test_the_committed_index_is_what_the_folders_say():
    """results/README.md is generated: regenerate it after adding or re-rendering a folder
    (`python -m bench index`; a run into results/ does it by itself)."""
    assert (paths.RESULTS / index.INDEX).read_text() == index.render(paths.RESULTS)
    assert (paths.RESULTS / index.NOTES).is_file()
