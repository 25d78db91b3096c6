"""env.json's typed record (`bench.store.run_env`): every key named once, a misspelled key fails
at write and at read, older folders read through it, and the ceilings as a typed object."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.store import paths, results, schema
from bench.store.run_env import FIELDS, Ceilings, RunEnv

COMMITTED = sorted(paths.ROOT.glob("results/**/env.json"))


def test_every_committed_folder_reads_through_the_record():
    # A check of committed files: each one's keys are fields of the record, and it writes back
    # as it was read (nothing dropped, nothing renamed).
    assert COMMITTED, "no env.json under results/"
    for path in COMMITTED:
        env = results.read_env(path.parent)
        assert isinstance(env, RunEnv)
        assert env.extra == {}, f"{path}: keys the record does not name: {sorted(env.extra)}"
        assert env.record() == schema.migrate_env(json.loads(path.read_text()), path.parent)
        if env.get("ceilings"):
            ceilings = Ceilings.from_record(env["ceilings"])
            assert list(ceilings.record().items()) == list(env["ceilings"].items()), path


def test_a_misspelled_key_fails_at_write(tmp_path: Path):
    with pytest.raises(KeyError, match="'comit'"):
        results.write_env(tmp_path, {"commit": "abc", "comit": "abc"})
    assert not (tmp_path / results.ENV).exists()
    env = RunEnv(device="cpu")
    with pytest.raises(KeyError, match="no field 'expected_case'"):
        env["expected_case"] = 3
    with pytest.raises(KeyError):
        env.update(started="now", endded="later")
    with pytest.raises(KeyError):
        env.setdefault("rnuning", [])


def test_a_misspelled_key_fails_at_read(tmp_path: Path):
    results.write_env(tmp_path, {"device": "cpu", "gpu": "cpu", "kind": "timing"})
    env = results.read_env(tmp_path)
    assert env["gpu"] == "cpu" and env.get("ended") is None and "ended" not in env
    for read in (env.get, env.__getitem__, env.__contains__, env.pop):
        with pytest.raises(KeyError, match="no field 'gpuu'"):
            read("gpuu")


def test_an_older_folders_unknown_keys_are_kept(tmp_path: Path):
    (tmp_path / results.ENV).write_text(json.dumps({"device": "cpu", "legacy_note": 1}))
    env = results.read_env(tmp_path)
    assert env.extra == {"legacy_note": 1} and env["schema"] == 1
    with pytest.raises(KeyError):
        env.get("legacy_note")  # kept, not a field: nothing reads it by name
    env["ended"] = "now"
    results.write_env(tmp_path, env)
    assert json.loads((tmp_path / results.ENV).read_text())["legacy_note"] == 1


def test_the_record_names_every_settings_key():
    assert {schema.settings_key(kind) for kind in schema.KINDS} <= set(FIELDS)
    assert all(doc.strip() for doc in FIELDS.values())


def test_ceilings_are_typed_and_read_back():
    flat = {
        "ceiling_matmul_n": 64,
        "ceiling_copy_mib": 1,
        "matmul_tflops_bf16": 4.0,
        "matmul_tflops_fp8-rowwise": 8.0,
        "copy_gbps": 100.0,
        "collective_mib": 2.0,
        "all_reduce_busbw_gbps": 50.0,
    }
    c = Ceilings.from_record(flat)
    assert c.matmul("bf16") == 4.0 and c.matmul("fp8-rowwise") == 8.0
    assert math.isnan(c.matmul("fp16")) and math.isnan(c.matmul(None))
    assert c.copy_gbps == 100.0 and c.busbw("all_reduce") == 50.0
    assert c.record() == flat and Ceilings.from_record(c) is c
    assert Ceilings.from_record(None).record() == {}
    with pytest.raises(KeyError, match="copy_gbs"):
        Ceilings.from_record({**flat, "copy_gbs": 1.0})
    with pytest.raises(AttributeError):
        c.copy_gbps = 1.0  # type: ignore[misc]  # frozen
