"""Results folders: a half-written line is repaired before appending, a folder is locked while a
process writes it, and a resumed folder must come from the same commit, torch and GPU."""

import json

import pytest

from bench.commands import folders as checks
from bench.faults import UsageError
from bench.store import folders, results
from bench.verdicts import sides


def test_a_partial_last_line_is_moved_aside_before_appending(tmp_path):
    path = tmp_path / results.ROWS
    path.write_text('{"case_id": "a"}\n{"case_id": "b", "tot')
    assert results.read_jsonl(path) == [{"case_id": "a"}]  # readable as it is
    note = results.repair_jsonl(path)
    assert note is not None and ".partial" in note
    results.append_jsonl(path, {"case_id": "c"})
    assert [r["case_id"] for r in results.read_jsonl(path)] == ["a", "c"]
    assert (tmp_path / (results.ROWS + ".partial")).read_text() == '{"case_id": "b", "tot\n'


def test_a_whole_file_needs_no_repair(tmp_path):
    path = tmp_path / results.ROWS
    path.write_text('{"case_id": "a"}\n')
    assert results.repair_jsonl(path) is None
    assert path.read_text() == '{"case_id": "a"}\n'


def test_a_last_line_that_is_not_json_is_moved_aside_too(tmp_path):
    path = tmp_path / results.SAMPLES
    path.write_text('{"case_id": "a"}\n{"case_id": "b"}{"case_id"\n')
    results.repair_jsonl(path)
    assert results.read_jsonl(path) == [{"case_id": "a"}]


def test_packed_samples_read_the_same_and_unpack_before_appending(tmp_path):
    path = tmp_path / results.SAMPLES
    path.write_text('{"case_id": "a", "samples_ms": {"total": [1.5, 2.0]}}\n')
    before = results.load_samples(tmp_path)
    results.pack(path)
    assert not path.exists() and results.packed(path).is_file()
    first = results.packed(path).read_bytes()
    assert results.load_samples(tmp_path).equals(before)
    assert results.repair_jsonl(path) is None  # a resume unpacks, then appends
    assert path.is_file() and not results.packed(path).exists()
    results.pack(path)
    assert results.packed(path).read_bytes() == first  # the same bytes: no time stamp


def test_damage_before_the_last_line_is_refused_not_repaired(tmp_path):
    path = tmp_path / results.ROWS
    path.write_text('{"a": 1}\ngarbage\n{"b": 2}\n')
    with pytest.raises(results.CorruptFolder, match="line 2"):
        results.repair_jsonl(path)
    assert path.read_text() == '{"a": 1}\ngarbage\n{"b": 2}\n'


def test_a_locked_folder_refuses_a_second_writer(tmp_path):
    with (
        folders.locked(tmp_path),
        pytest.raises(UsageError, match="being written by pid"),
        folders.locked(tmp_path),
    ):
        pass
    with folders.locked(tmp_path):  # released: the next writer gets it
        pass


def _env(tmp_path, **fields):
    info = {"device": "cpu", "commit": "aaa", "dirty": False, "torch": "2.9", "gpu": "cpu"}
    info.update(fields)
    (tmp_path / results.ENV).write_text(json.dumps(info))
    return info


def test_reopen_refuses_a_folder_of_another_commit_unless_forced(tmp_path):
    _env(tmp_path, config={})
    here = {"device": "cpu", "commit": "bbb", "dirty": False, "torch": "2.9", "gpu": "cpu"}
    with pytest.raises(UsageError, match=r"commit 'aaa' there, 'bbb' here.*--force"):
        folders.reopen(tmp_path, kind="timing", here=here, force=False)
    info = folders.reopen(tmp_path, kind="timing", here=here, force=True)
    assert info["resumed"][-1]["forced"] == ["commit 'aaa' there, 'bbb' here"]


def test_reopen_refuses_the_other_kind_of_folder(tmp_path):
    _env(tmp_path, numerics_config={})
    here = {"device": "cpu", "commit": "aaa", "dirty": False, "torch": "2.9", "gpu": "cpu"}
    with pytest.raises(UsageError, match="numerics study"):
        folders.reopen(tmp_path, kind="timing", here=here, force=False)


def test_a_results_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError, match="not a directory"):
        folders.create(tmp_path / "f", "x")


def test_a_read_only_folder_cannot_be_locked_and_says_so(tmp_path, read_only):
    read_only(tmp_path)
    refused = pytest.raises(UsageError, match=rf"^{tmp_path} is not writable: cannot open .lock")
    with refused, folders.locked(tmp_path):
        pass


def test_a_read_only_folder_is_refused_for_resume_and_report(tmp_path, read_only, capsys):
    from bench.cli import main
    from tests.stored import small_grid, write_run

    run = tmp_path / "run"
    write_run(run, small_grid()[:2])
    read_only(run)
    for argv in (["report", str(run)], ["run", "--resume", str(run)]):
        assert main(argv) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert str(run) in line and "not writable" in line
    assert sorted(p.name for p in run.iterdir()) == [results.ENV, results.ROWS, results.SAMPLES]


def _headline_and_report(run, capsys):
    from bench.cli import main

    capsys.readouterr()
    codes = main(["headline", str(run)]), main(["report", str(run)])
    return codes, capsys.readouterr()


def test_a_cut_last_row_leaves_a_headline_of_the_rows_before(tmp_path, capsys):
    from tests.stored import timing_row, write_run

    rows = [
        timing_row(mode="fp32", optimizer=opt, batch_size=bs)
        for bs in (8, 32)
        for opt in ("foreach", "fused")
    ]
    run = write_run(tmp_path / "run", rows)
    text = (run / results.ROWS).read_text()
    (run / results.ROWS).write_text(text[: text.rindex("{") + 20])  # fused at 32, cut mid-row
    codes, out = _headline_and_report(run, capsys)
    assert codes == (0, 0), out.err
    assert "Batch size 8, fused Adam" in out.out and "| fp32 " in out.out


def test_a_run_of_one_optimizer_has_its_headline(tmp_path, capsys):
    from tests.stored import timing_row, write_run

    run = write_run(tmp_path / "run", [timing_row(mode="fp32", optimizer="foreach")])
    codes, out = _headline_and_report(run, capsys)
    assert codes == (0, 0), out.err
    assert "Batch size 8, foreach Adam" in out.out and "| fp32 " in out.out


@pytest.mark.parametrize("content", ["", '{"case_id": "a", "sta'], ids=["empty", "cut"])
def test_a_run_without_a_whole_row_is_refused_by_headline_and_report_alike(
    tmp_path, capsys, content
):
    from tests.stored import timing_row, write_run

    run = write_run(tmp_path / "run", [timing_row(mode="fp32")])
    (run / results.ROWS).write_text(content)
    codes, out = _headline_and_report(run, capsys)
    assert codes == (2, 2)
    assert out.err.splitlines() == [f"ampbench: error: {run} has no rows yet "
                                    f"({results.ROWS} holds no whole row)"] * 2  # fmt: skip
    assert not (run / results.REPORT).exists()


def test_a_folder_with_packed_rows_is_a_run_folder_and_unpacks_to_resume(tmp_path):
    _env(tmp_path)
    rows = tmp_path / results.ROWS
    rows.write_text('{"case_id": "a", "status": "ok"}\n')
    results.pack(rows)
    assert not rows.exists() and results.stored(rows)
    assert checks.run_folder(tmp_path) == tmp_path
    assert sides._is_run(tmp_path)
    assert results.read_rows(rows) == [{"case_id": "a", "status": "ok"}]
    assert results.repair_jsonl(rows) is None  # a resume unpacks the rows, then appends
    results.append_jsonl(rows, {"case_id": "b", "status": "ok"})
    assert [r["case_id"] for r in results.read_rows(rows)] == ["a", "b"]
    assert not results.packed(rows).exists()
    with pytest.raises(UsageError, match="not a run folder"):
        checks.run_folder(tmp_path / "nothing")
