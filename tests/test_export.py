"""`bench export --format github-action-benchmark`: what the action's customSmallerIsBetter tool
reads, checked against the schema of its src/extract.ts (an array of {name, unit, value, range?,
extra?}) and the range pattern of src/extractRangeInfo.ts."""

import copy
import json

import pytest

from bench.cli import main
from bench.publish import export
from tests.stored import small_grid, timing_row, write_run

# The shape of the examples in the action's README ("Examples for custom benchmark"): a sample of
# input the tool accepts, to check the validator against.
ACCEPTED = [
    {"name": "My Custom Smaller Is Better Benchmark - CPU Load", "unit": "Percent", "value": 50},
    {
        "name": "My Custom Smaller Is Better Benchmark - Memory Used",
        "unit": "Megabytes",
        "value": 100,
        "range": "± 3.5",
        "extra": "Value for Tooltip: 25\nOptional Num #2: 100\nAnything Else!",
    },
]


def test_the_validator_accepts_the_tools_own_example():
    data = copy.deepcopy(ACCEPTED)
    assert export.validate(data) is None  # accepted: no ValueError
    assert data == ACCEPTED  # and left as it was
    # Accepting is not all it does: the same example without a field the tool needs is refused.
    for key in export.REQUIRED:
        broken = [{k: v for k, v in entry.items() if k != key} for entry in ACCEPTED]
        with pytest.raises(ValueError, match=f"entry 0 has no '{key}'"):
            export.validate(broken)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"name": "x", "unit": "ms", "value": 1}, "JSON array"),
        ([], "empty"),
        (["x"], "object"),
        ([{"name": "x", "unit": "ms"}], "'value'"),
        ([{"name": "x", "unit": "ms", "value": "1"}], "number"),
        ([{"name": "x", "unit": "ms", "value": True}], "number"),
        ([{"name": "x", "unit": "ms", "value": float("nan")}], "finite"),
        ([{"name": 1, "unit": "ms", "value": 1}], "string"),
        ([{"name": "x", "unit": "ms", "value": 1, "range": 0.5}], "string"),
        ([{"name": "x", "unit": "ms", "value": 1, "range": "IQR 0.5"}], "± NUMBER"),
        ([{"name": "x", "unit": "ms", "value": 1, "range": "± a.b"}], "± NUMBER"),
        ([{"name": "x", "unit": "ms", "value": 1, "median": 1}], "unknown field"),
        (
            [{"name": "x", "unit": "ms", "value": 1}, {"name": "x", "unit": "ms", "value": 2}],
            "twice",
        ),
    ],
)
def test_the_validator_names_what_the_tool_would_reject_or_lose(data, needle):
    with pytest.raises(ValueError, match=needle):
        export.validate(data)


def test_one_entry_per_case_and_timed_phase(tmp_path):
    fused = [timing_row(mode="bf16-amp", optimizer="fused", variant="cudagraph", fused=True)]
    oom = [{**timing_row(mode="fp32", batch_size=64), "status": "oom"}]
    run = write_run(tmp_path / "run", small_grid() + fused + oom, gpu="NVIDIA H200")
    entries = json.loads(export.export(run, "github-action-benchmark"))
    export.validate(entries)
    assert len(entries) == 12 * 4 + 1  # four phases of each eager case, the fused one's total
    first = entries[0]
    case_id = small_grid()[0]["case_id"]
    assert first["name"] == f"{case_id} fwd" and first["unit"] == "ms"
    assert first["value"] == pytest.approx(3.0)  # 0.3 of a 10 ms step
    assert first["range"] == "± 0.03000"  # half of a 0.06 ms IQR
    assert "mode=fp32" in first["extra"] and "gpu=NVIDIA H200" in first["extra"]
    assert [e["name"].split()[-1] for e in entries if "cudagraph" in e["name"]] == ["total"]
    assert not any("b64" in e["name"] for e in entries)  # a case that did not pass


def test_export_dispatches_on_its_formats_table(tmp_path, monkeypatch):
    run = write_run(tmp_path / "run", small_grid())
    checked = []
    other = export.Writer(
        entries=lambda run_dir: [{"run": run_dir.name}],
        validate=checked.append,
        text=lambda entries: f"{entries[0]['run']}\n",
    )
    monkeypatch.setitem(export.WRITERS, "other", other)
    assert export.export(run, "other") == "run\n" and checked == [[{"run": "run"}]]
    with pytest.raises(ValueError, match=r"'nope'.*github-action-benchmark, other"):
        export.export(run, "nope")


def test_the_command_writes_the_file_and_refuses_bad_input(tmp_path, capsys):
    run = write_run(tmp_path / "run", small_grid())
    out = tmp_path / "bench.json"
    argv = ["export", str(run), "--format", "github-action-benchmark", "--output", str(out)]
    assert main(argv) == 0
    export.validate(json.loads(out.read_text()))
    assert main(["export", str(run), "--format", "csv"]) == 2
    assert "'csv'" in capsys.readouterr().err
    failed = write_run(tmp_path / "failed", [{**small_grid()[0], "status": "error"}])
    assert main(["export", str(failed), "--format", "github-action-benchmark"]) == 2
    assert "no passing case" in capsys.readouterr().err
