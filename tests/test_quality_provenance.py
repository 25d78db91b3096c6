"""Provenance of a time-to-quality study (issue 52, finding 9): its workers are processes on one
GPU, not GPUs, and a study resumed at other commits names each of them. Fixtures built here."""

from types import SimpleNamespace

import pandas as pd

from bench.publish import index, index_cells
from bench.quality import tables
from bench.quality.render import report as quality
from bench.quality.render import runs as page
from bench.quality.render import runs as quality_runs
from bench.store.tree import Run
from bench.verdicts import training


def test_a_studys_workers_are_not_counted_as_gpus(tmp_path):
    # The old index wrote "NVIDIA H200 ×4" for four worker processes sharing one H200.
    env = {"gpu": "NVIDIA H200", "device": "cuda",
           "quality_config": {"model": "gpt", "preset": "shakespeare-tiny", "modes": ["fp32"],
                              "seeds": [0], "steps": 10, "data": "digits",
                              "workers": 4}}  # fmt: skip
    tables.append(tmp_path, "runs", [{"mode": "fp32", "seed": 0, "status": "ok"}])
    cells = index_cells._quality(Run(tmp_path, "quality", env))
    assert cells.gpus == 1
    assert index._gpu(env, cells.gpus) == "NVIDIA H200"


def test_a_study_resumed_at_other_commits_names_each():
    env = {"commit": "7512b884131e91bb0a5d718679fb7cfd26410d13", "dirty": True,
           "resumed": [{"at": "2026-12-02T16:03:35+00:00"},
                       {"at": "2026-12-03T07:34:49+00:00",
                        "differs": ["commit '7512b88' there, 'c3ad8cf' here", "dirty True there"]},
                       {"at": "2026-12-03T08:08:28+00:00",
                        "differs": ["commit '7512b88' there, 'ac1bea7' here"]}]}  # fmt: skip
    said = page.commits(env)
    assert "7512b88 (uncommitted changes)" in said
    assert "c3ad8cf" in said and "ac1bea7" in said and "not recorded" in said
    assert page.commits({"commit": "16f9bbb", "dirty": False}) == "commit 16f9bbb"


def test_runs_that_record_their_commit_are_counted_by_commit():
    env = {"commit": "7512b88", "dirty": True,
           "resumed": [{"at": "2026-12-04T15:00:00+00:00",
                        "differs": ["commit '7512b88' there, 'ebb6e1a' here"]}]}  # fmt: skip
    runs = pd.DataFrame(
        {"mode": ["fp32", "fp32", "tf32", "tf32", "tf32"], "seed": [0, 1, 0, 1, 2],
         "status": ["ok", "ok", "ok", "ok", "unsupported"],
         "commit": [None, None, "ebb6e1a", "ebb6e1a", None],
         "dirty": [None, None, False, True, None]}
    )  # fmt: skip
    said = page.commits(env, runs)
    assert "1 at ebb6e1a and 1 at ebb6e1a (uncommitted changes)" in said
    assert "the other 2 did not record theirs" in said and "not recorded" not in said
    # Rows from before the column existed: the old wording.
    assert "not recorded" in page.commits(env, runs.drop(columns=["commit", "dirty"]))


def _study(env, runs, looks=(), replica=None, sequential=False):
    """What `bench.quality.render.report.evidence` reads of a study, built by hand."""
    cfg = SimpleNamespace(sequential=sequential, max_seeds=8)
    verdicts = {
        "tf32": training.Verdict(training.LIKE, ""),
        "bf16-amp": training.Verdict(training.LIKE, ""),
    }
    return {"env": env, "cfg": cfg, "looks": list(looks), "tables": {"runs": runs},
            "summary": runs, "replica": replica, "verdicts": verdicts}  # fmt: skip


def test_a_study_says_what_evidence_it_is_and_what_it_cannot_say():
    runs = pd.DataFrame({"mode": ["fp32", "tf32"], "seed": [0, 1], "status": ["ok", "ok"],
                         "commit": ["aa8effd", None], "dirty": [False, None]})  # fmt: skip
    mixed = quality_runs.evidence(_study({"commit": "7512b88", "dirty": True}, runs))
    assert "its runs trained at 7512b88 (uncommitted changes) and aa8effd" in mixed
    assert "2 seeds, without looks; no replication on other seeds" in mixed
    assert (
        "not known from it, as its runs are of more than one commit, and it has neither looks "
        "nor a replication." in mixed
    )
    one = runs.assign(commit="a8fb551", dirty=False)
    clash = {"tf32": training.LIKE, "bf16-amp": training.WORSE}
    whole = quality_runs.evidence(
        _study({"commit": "a8fb551"}, one, looks=[3, 4], replica=("b", clash), sequential=True)
    )
    assert whole.startswith("**The study**: trained at one commit, a8fb551; seeds added in looks")
    assert "(`b`, replication.md): 1 of 2 verdicts contradicted (bf16-amp)" in whole
    assert "not known" not in whole
    looks_only = quality_runs.evidence(_study({"commit": "a8fb551"}, one, [3], sequential=True))
    assert looks_only.endswith("not known from it, as it has no replication.")


def test_a_replicated_study_finds_its_pair_through_the_page(tmp_path, monkeypatch):
    a, b = tmp_path / "a_replica1", tmp_path / "a_replica2"
    for folder in (a, b):
        folder.mkdir()
        (folder / "env.json").write_text("{}")
        (folder / quality_runs.REPLICATION).write_text(
            f"# Replication\n\nFirst: `{a.name}` (seeds 0, 1). Second: `{b.name}` (seeds 1000).\n"
        )
    monkeypatch.setattr(quality, "study", lambda run_dir, paired: {"verdicts": {"x": "v"}})
    assert quality._replica(a) == (b.name, {"x": "v"})
    assert quality._replica(b) == (a.name, {"x": "v"})
    (b / "env.json").unlink()
    assert quality._replica(a) is None
