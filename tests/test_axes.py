"""The axes of a case are its fields: a new field with a default keeps old ids and folders,
joins speedups and comparisons on itself, and shows in the report without editing any list."""

import json

import pytest

from bench.publish import compare, report
from bench.store import results
from tests.conftest import tiny_case


def _row(c, total_ms):
    return {"case_id": c.case_id, **c.axes(), "status": "ok", "total_ms": total_ms}


def test_old_ids_keep_their_meaning(knob):
    old = tiny_case()
    assert knob(**old.axes()).case_id == old.case_id
    assert knob(**old.axes(), knob="b").case_id == old.case_id + "/knob=b"
    assert "knob" in results.axes()


def test_old_folders_load_with_the_default(knob, tmp_path):
    results.append_jsonl(tmp_path / results.ROWS, _row(tiny_case(), 10.0))  # no knob column
    df = results.load(tmp_path)
    assert list(df["knob"]) == ["a"]


def test_speedups_and_comparisons_join_on_the_new_axis(knob, tmp_path):
    for mode, k, ms in (("fp32", "a", 40.0), ("fp32", "b", 20.0), ("bf16-amp", "a", 10.0)):
        results.append_jsonl(
            tmp_path / results.ROWS, _row(knob(**tiny_case(mode=mode).axes(), knob=k), ms)
        )
    results.append_jsonl(
        tmp_path / results.ROWS, _row(knob(**tiny_case(mode="bf16-amp").axes(), knob="b"), 10.0)
    )
    df = results.load(tmp_path).set_index(["mode", "knob"])
    assert df.loc[("bf16-amp", "a"), "speedup_vs_fp32"] == pytest.approx(4.0)
    assert df.loc[("bf16-amp", "b"), "speedup_vs_fp32"] == pytest.approx(2.0)
    assert len(df) == 4  # no duplicated base rows
    for rec in results.read_jsonl(tmp_path / results.ROWS):
        results.append_jsonl(
            tmp_path / results.SAMPLES,
            {"case_id": rec["case_id"], "samples_ms": {"total": [rec["total_ms"]] * 5}},
        )
    (tmp_path / results.ENV).write_text(json.dumps({"started": "x"}))
    table = compare.compare(
        tmp_path, tmp_path, pair=compare.Pair.parse("knob=a:b"), min_effect=0.02
    )
    assert sorted(table["mode"]) == ["bf16-amp", "fp32"]
    by_mode = table.set_index("mode")
    assert by_mode.loc["fp32", "ratio"] == pytest.approx(0.5)
    assert by_mode.loc["bf16-amp", "ratio"] == pytest.approx(1.0)


def test_the_report_shows_the_new_axis_where_it_varies(knob, tmp_path):
    for k in ("a", "b"):
        results.append_jsonl(tmp_path / results.ROWS, _row(knob(**tiny_case().axes(), knob=k), 5.0))
    text = report.render(results.load(tmp_path), {"device": "cpu"})
    detail = text.split("## Time per step")[1]
    header = next(line for line in detail.splitlines() if line.startswith("| mode"))
    assert "knob" in header
