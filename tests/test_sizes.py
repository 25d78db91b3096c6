"""A case carries its workload's own sizes, by name (`bench.cases.sizes.Sizes`), and its id spells
their values as every id before; folders of older code, whose rows and configs held every model's
three sizes as `input_size`, `hidden_size`, `num_classes`, read as today's
(`bench.store.schema`). The old-layout folders here are built by the tests themselves."""

from __future__ import annotations

import dataclasses

import pytest

from bench.cases.case import Case
from bench.cases.grid import RunConfig
from bench.cases.sizes import Sizes
from bench.cli.main import main
from bench.jobs import configs
from bench.numerics.measure.config import NumericsConfig
from bench.publish import compare, index_cells
from bench.store import results, schema
from bench.workloads import registry
from tests.stored import small_grid, write_run

OLD = ("input_size", "hidden_size", "num_classes")


def _old_layout(record: dict) -> dict:
    """`record` (a row or a config of today) as older code wrote it: the three sizes as the
    MLP's columns, in the place of `sizes`."""
    out = {}
    for key, value in record.items():
        if key == "sizes":
            named = value.named() if isinstance(value, Sizes) else value
            out.update(zip(OLD, named.values(), strict=True))
        else:
            out[key] = value
    return out


# --- the type ---------------------------------------------------------------------------------


def test_sizes_spell_the_id_and_are_equal_by_their_values():
    gpt = Sizes.of(context=256, width=384, vocab=65)
    assert str(gpt) == "256x384x65" and gpt["width"] == 384
    assert gpt.named() == {"context": 256, "width": 384, "vocab": 65}
    assert gpt.words() == "context 256 × width 384 × vocab 65"
    # Names say what each value is; the values are the case (an old row's are unnamed).
    unnamed = Sizes.unnamed((256, 384, 65))
    assert unnamed == gpt and hash(unnamed) == hash(gpt) and unnamed.names != gpt.names
    assert Sizes.of(input=1, hidden=2) != Sizes.of(input=1, hidden=3)


@pytest.mark.parametrize(
    ("values", "names", "match"),
    [
        ((0, 2), ("a", "b"), "size a=0 is not a positive integer"),
        ((1, 2.5), ("a", "b"), r"size b=2\.5 is not a positive integer"),
        ((1, True), ("a", "b"), "size b=True"),
        ((1, 2), ("a",), "one name each"),
        ((1, 2), ("a", "a"), "each name once"),
        ((1,), ("no name",), "is not a name"),
    ],
)
def test_bad_sizes_name_the_value(values, names, match):
    with pytest.raises(ValueError, match=match):
        Sizes(values=values, names=names)


# --- a case carries the workload's own sizes --------------------------------------------------


def test_case_ids_are_those_of_every_earlier_run():
    gpt = registry.make_case(
        "gpt", "shakespeare-char", mode="fp32", optimizer="fused", batch_size=64
    )
    assert gpt.case_id == "fp32/fused/b64/256x384x65/cuda/s0/model=gpt/preset=shakespeare-char"
    assert gpt.sizes.names == ("context", "width", "vocab")
    mlp = registry.make_case("mlp", "seed", mode="bf16-amp", optimizer="fused", batch_size=256)
    assert mlp.case_id == "bf16-amp/fused/b256/1024x16000x2000/cuda/s0"
    assert mlp.sizes.named() == {"input": 1024, "hidden": 16000, "classes": 2000}
    resnet = registry.make_case("resnet50", "tiny", mode="fp32", optimizer="fused", batch_size=2)
    assert resnet.sizes.names == ("image", "features", "classes")
    assert not any(hasattr(gpt, name) for name in OLD)


def test_a_case_refuses_sizes_its_workload_does_not_name():
    with pytest.raises(ValueError, match="gpt's are context, width, vocab"):
        Case(
            mode="fp32",
            optimizer="fused",
            batch_size=1,
            sizes=Sizes.of(input=256, hidden=384, classes=65),
            model="gpt",
            preset="shakespeare-char",
        )
    with pytest.raises(ValueError, match="sizes 'x' is not a Sizes"):
        Case(mode="fp32", optimizer="fused", batch_size=1, sizes="x")


def test_a_row_records_the_sizes_by_name(tmp_path):
    case = registry.make_case("gpt", "tiny", mode="fp32", optimizer="fused", batch_size=2)
    axes = case.axes()
    assert axes["sizes"] == case.sizes and not set(OLD) & set(axes)
    assert list(axes).index("sizes") == list(axes).index("batch_size") + 1
    assert Case(**axes) == case
    results.append_jsonl(tmp_path / results.ROWS, {"case_id": case.case_id, **axes})
    (row,) = results.read_rows(tmp_path / results.ROWS)
    assert row["sizes"] == {"context": 32, "width": 64, "vocab": 128}
    assert schema.migrate_row(row)["sizes"].names == case.sizes.names


def test_a_run_refuses_a_size_its_workload_does_not_take():
    cfg = configs.run_config(device="cpu", preset=None, sizes={"hidden": 48})
    assert str(cfg.sizes) == "32x48x10" and cfg.cases()[0].case_id.endswith("/32x48x10/cpu/s0")
    with pytest.raises(ValueError, match=r"^--num-classes 7: --model gpt takes no sizes of its"):
        configs.run_config(device="cpu", preset=None, model="gpt", sizes={"classes": 7})


# --- folders of older code --------------------------------------------------------------------


def test_rows_of_older_code_load_with_the_workloads_names(tmp_path):
    first = small_grid()[0]
    new = [
        *small_grid(),
        {**first, "case_id": "gpt-case", "model": "gpt", "sizes": {"a": 8, "b": 32, "c": 64}},
        {**first, "case_id": "zoo-case", "model": "hf:gpt2", "sizes": {"a": 1, "b": 2, "c": 3}},
    ]
    for row in new[-2:]:
        row["preset"] = "tiny"
    folder = write_run(tmp_path / "old", [_old_layout(r) for r in new])
    written = results.read_rows(folder / results.ROWS)
    assert all(set(OLD) <= set(r) and "sizes" not in r for r in written)
    df = results.load(folder)
    assert not set(OLD) & set(df.columns) and list(df["case_id"]) == [r["case_id"] for r in new]
    by_model = {m: s for m, s in zip(df["model"], df["sizes"], strict=True)}
    assert by_model["mlp"].named() == {"input": 32, "hidden": 64, "classes": 10}
    assert by_model["gpt"].named() == {"context": 8, "width": 32, "vocab": 64}
    # A zoo's names are its workload's, which need torch and the zoo: unnamed, the same case.
    assert by_model["hf:gpt2"].names == ("size1", "size2", "size3")
    # The speedups join on every other axis, the sizes among them.
    assert df.loc[df["mode"] == "bf16-amp", "speedup_vs_fp32"].notna().all()
    assert main(["report", str(folder)]) == 0
    assert (folder / "report.md").is_file()
    assert "32x64x10" in (folder / results.CSV).read_text()


def test_an_old_folder_and_a_new_one_compare_case_by_case(tmp_path):
    rows = small_grid()
    old = write_run(tmp_path / "old", [_old_layout(r) for r in rows])
    new = write_run(tmp_path / "new", rows, seed=1)
    table = compare.compare(old, new)
    assert len(table) == len(rows) and "missing" not in set(table["verdict"])


def test_an_old_config_resumes_with_the_same_cases():
    cfg = configs.run_config(device="cpu", preset=None, modes=("fp32",), sizes={"input": 12})
    old = _old_layout(cfg.record())
    assert set(OLD) <= set(old) and "sizes" not in old
    migrated = schema.migrate_env({"config": old})["config"]
    assert migrated["sizes"] == {"input": 12, "hidden": 64, "classes": 10}
    resumed = RunConfig.from_record(migrated)
    assert [c.case_id for c in resumed.cases()] == [c.case_id for c in cfg.cases()]
    # The index names an MLP run by the preset its sizes are, from older code's config too.
    seed = _old_layout({"model": "mlp", "sizes": {"input": 1024, "hidden": 16000, "classes": 2000}})
    assert index_cells._preset(schema.migrate_env({"config": seed})["config"]) == "seed"


def test_an_old_numerics_record_resumes():
    study = NumericsConfig.build(device="cpu", options={}, workers=None)
    record = study.record()
    assert record["sizes"] == {"input": 32, "hidden": 64, "classes": 10}
    env = schema.migrate_env({"numerics_config": _old_layout(record)})
    assert NumericsConfig.from_record(env["numerics_config"], workers=1) == dataclasses.replace(
        study, workers=1
    )
