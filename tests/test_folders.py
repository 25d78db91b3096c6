"""Results folders: a half-written line is repaired before appending, a folder is locked while a
process writes it, and a resumed folder must come from the same commit, torch and GPU."""

import json

import pytest

from bench import folders, results
from bench.faults import UsageError


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
        folders.reopen(tmp_path, kind="config", here=here, force=False)
    info = folders.reopen(tmp_path, kind="config", here=here, force=True)
    assert info["resumed"][-1]["forced"] == ["commit 'aaa' there, 'bbb' here"]


def test_reopen_refuses_the_other_kind_of_folder(tmp_path):
    _env(tmp_path, numerics_config={})
    here = {"device": "cpu", "commit": "aaa", "dirty": False, "torch": "2.9", "gpu": "cpu"}
    with pytest.raises(UsageError, match="numerics study"):
        folders.reopen(tmp_path, kind="config", here=here, force=False)


def test_a_results_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError, match="not a directory"):
        folders.create(tmp_path / "f", "x")
