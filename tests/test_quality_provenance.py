"""Provenance of a time-to-quality study (issue 52, finding 9): its workers are processes on one
GPU, not GPUs, and a study resumed at other commits names each of them. Fixtures built here."""

import pandas as pd

from bench.publish import index, index_cells
from bench.publish import quality_runs as page
from bench.publish.runs import Run
from bench.quality import tables


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
