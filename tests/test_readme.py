"""Blocks between `<!-- ampbench:KIND RUN -->` markers in README.md and docs/*.md are generated from
their runs, and a block that drifts from its data is found. Every run here is a small folder the
test writes (never the project's results/); `./run_bench.sh readme --check` checks the committed
README against the committed runs."""

import json

import pandas as pd
import pytest

from bench.cli import main
from bench.faults import UsageError
from bench.numerics.measure import tables as study_tables
from bench.publish import readme, readme_blocks, report, summary, summary_studies
from bench.store import paths, results
from bench.verdicts import timing
from tests.stored import small_grid, timing_row, write_run

# ---- the README itself: read, never rendered (rendering reads results/) --------------------


def test_the_readme_answers_first_and_stays_short():
    text = (paths.ROOT / "README.md").read_text()
    assert len(text) < 12000, f"README.md has {len(text)} characters; move prose to docs/"
    kinds = [b.kind for b in readme.blocks(text)]
    assert kinds[:3] == ["quality", "summary", "headline"], kinds
    assert "./run_bench.sh" in text and "./run_tests.sh" in text
    for page in sorted((paths.ROOT / "docs").glob("*.md")):
        readme.blocks(page.read_text())  # every marker of every page is well formed


def test_the_readme_links_every_docs_page():
    text = (paths.ROOT / "README.md").read_text()
    missing = [p.name for p in (paths.ROOT / "docs").glob("*.md") if f"docs/{p.name}" not in text]
    assert not missing, f"README.md does not link {missing}"


# ---- filling and checking ---------------------------------------------------------------


@pytest.fixture
def project(tmp_path):
    """A folder with a README holding a headline and a table block, and the run they name."""
    write_run(tmp_path / "results" / "run1", small_grid())
    (tmp_path / "README.md").write_text(
        "# Title\n\nBefore.\n\n"
        "<!-- ampbench:headline results/run1 batch_size=8 -->\nstale text\n"
        "<!-- /ampbench:headline -->\n\nBetween.\n\n"
        "<!-- ampbench:table results/run1 columns=mode,total_ms optimizer=fused batch_size=32 -->"
        "\n<!-- /ampbench:table -->\n\nAfter.\n"
    )
    return tmp_path


def test_blocks_are_filled_from_their_runs_and_the_rest_is_kept(project):
    path = project / "README.md"
    changed = readme.update(path)
    assert [b.kind for b in changed] == ["headline", "table"]
    text = path.read_text()
    df = results.load(project / "results" / "run1")
    assert report.headline(df, batch_size=8) in text
    # no report.md there: the folder; and the commit its data comes from (none: a run outside git)
    assert "From [`run1`](results/run1) (recorded at an unknown commit):" in text
    assert text.startswith("# Title\n\nBefore.\n\n<!-- ampbench:headline results/run1 batch_size=8")
    assert "stale text" not in text and "\nBetween.\n" in text and text.endswith("\nAfter.\n")
    table = text.split("<!-- ampbench:table")[1]
    assert "| mode     |   total_ms |" in table and table.count("\n| ") == 4  # header + 3 modes
    assert "|fp32|36.00|" in table.replace(" ", "")  # 40 ms × 0.9 for fused, 4 digits
    assert readme.update(path) == []  # filled: nothing left to change


def test_check_reports_a_stale_block_and_changes_nothing(project, capsys):
    path = project / "README.md"
    before = path.read_text()
    assert main(["readme", "--check", "--file", str(path)]) == 1
    assert path.read_text() == before
    assert "line 5: ampbench:headline results/run1: disagrees" in capsys.readouterr().err
    assert main(["readme", "--file", str(path)]) == 0
    assert main(["readme", "--check", "--file", str(path)]) == 0


def test_a_readme_brings_the_docs_pages_beside_it(project, capsys):
    docs = project / "docs"
    docs.mkdir()
    (docs / "page.md").write_text(
        "# Page\n\n<!-- ampbench:fastest ../results/run1 -->\n<!-- /ampbench:fastest -->\n"
    )
    (docs / "plain.md").write_text("# No blocks\n")
    readme.update(project / "README.md")
    page = (docs / "page.md").read_text()
    assert "From [`run1`](../results/run1) (recorded at an unknown commit):" in page
    assert "| bf16-amp (eager)" in page
    (docs / "page.md").write_text(page.replace("bf16-amp (eager)", "fp32 (eager)"))
    stale = readme.update(project / "README.md", check=True)
    assert [b.label for b in stale] == ["docs/page.md line 3: ampbench:fastest ../results/run1"]
    assert main(["readme", "--check", "--file", str(project / "README.md")]) == 1
    assert "docs/page.md line 3" in capsys.readouterr().err
    # A page given alone is filled alone, and a README's bad page changes no file.
    assert readme.update(docs / "page.md") != []
    (docs / "bad.md").write_text(
        "<!-- ampbench:headline ../results/nope -->\n<!-- /ampbench:headline -->\n"
    )
    (project / "README.md").write_text((project / "README.md").read_text() + "\nMore.\n")
    before = {p: p.read_text() for p in (project / "README.md", docs / "page.md")}
    with pytest.raises(UsageError, match=r"docs/bad\.md: line 1: .*not a run folder"):
        readme.update(project / "README.md")
    assert {p: p.read_text() for p in before} == before


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("<!-- ampbench:headline results/run1 -->\n", "no closing marker"),
        ("<!-- ampbench:chart results/run1 -->\n<!-- /ampbench:chart -->", "unknown kind"),
        ("<!-- ampbench:headline results/nope -->\n<!-- /ampbench:headline -->", "not a run"),
        ("<!-- ampbench:headline -->\n<!-- /ampbench:headline -->", "names no run"),
        ("<!-- ampbench:headline results/run1 fused -->\n<!-- /ampbench:headline -->", "KEY=VALUE"),
        ("<!-- ampbench:headline results/run1 seed=1 -->\n<!-- /ampbench:headline -->", "seed="),
        (
            "<!-- ampbench:headline results/run1 figure=nope.png -->\n<!-- /ampbench:headline -->",
            "figure=nope.png: no such file",
        ),
        (
            "<!-- ampbench:summary results/run1 numerics=nope -->\n<!-- /ampbench:summary -->",
            "nope is not a finished numerics study",
        ),
        (
            "<!-- ampbench:summary results/run1 seed=1 -->\n<!-- /ampbench:summary -->",
            "takes numerics=, optimizer= and skip=",
        ),
    ],
)
def test_bad_markers_are_named(project, text, needle):
    with pytest.raises(UsageError, match=needle):
        readme.regenerate(text, project)


def test_a_figure_follows_its_block_folder(project):
    (project / "results" / "run1" / "throughput.png").write_bytes(b"png")
    block = (
        "<!-- ampbench:headline results/run1 figure=throughput.png -->\n<!-- /ampbench:headline -->"
    )
    text, _ = readme.regenerate(block, project)
    assert text.endswith(
        "\n\n![throughput](results/run1/throughput.png)\n\n<!-- /ampbench:headline -->"
    )


def test_the_modes_table_names_the_fastest_mode_per_batch_size(tmp_path):
    write_run(tmp_path / "results" / "run1", small_grid())
    block = "<!-- ampbench:fastest results/run1 -->\n<!-- /ampbench:fastest -->"
    text, _ = readme.regenerate(block, tmp_path)
    df = results.load(tmp_path / "results" / "run1")
    ok = df[(df["status"] == "ok") & (df["optimizer"] == "fused")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()]
    fastest = {r[0]: r[1] for r in cells if len(r) > 2 and r[0].isdigit()}
    assert len(fastest) == ok["batch_size"].nunique()
    for bs, g in ok.groupby("batch_size"):
        best = g.loc[g["total_ms"].idxmin()]
        assert fastest[str(bs)] == f"{best['mode']} ({best['variant']})"
    with pytest.raises(UsageError, match="takes optimizer="):
        readme.regenerate(block.replace("run1", "run1 seed=1"), tmp_path)


def test_a_block_under_the_fastest_table_s_old_kind_is_still_filled(tmp_path):
    # `ampbench:recipes` was the kind's name before `ampbench:fastest`: a page keeps its marker.
    write_run(tmp_path / "results" / "run1", small_grid())
    new = "<!-- ampbench:fastest results/run1 -->\n<!-- /ampbench:fastest -->"
    old = new.replace("ampbench:fastest", "ampbench:recipes")
    text, _ = readme.regenerate(old, tmp_path)
    assert text == readme.regenerate(new, tmp_path)[0].replace(
        "ampbench:fastest", "ampbench:recipes"
    )


def test_the_headline_names_the_modes_it_leaves_out(tmp_path):
    write_run(tmp_path / "run1", small_grid())
    df = results.load(tmp_path / "run1")
    df.loc[(df["mode"] == "tf32") & (df["batch_size"] == 32), "status"] = "unsupported"
    text = report.headline(df, batch_size=32)
    assert "| tf32" not in text and "| bf16-amp" in text
    assert text.endswith("Not in the table: tf32 (unsupported) (see the cases that did not pass).")


# ---- the summary ------------------------------------------------------------------------

STEP_MS = {
    # mode: (ms at batch 8, ms at batch 32), eager, fused Adam
    "fp32": (40.0, 160.0),
    "tf32": (10.0, 40.0),
    "fp16-amp": (5.5, 22.0),  # GradScaler: +10% on fp16-amp-noscale at both sizes
    "fp16-amp-noscale": (5.0, 20.0),
    "bf16-amp": (5.0, 16.0),
    "bf16-pure": (4.0, 25.0),  # fastest at batch 8 only
}
PEAK_GIB_AT_32 = {"fp32": 6.0, "tf32": 6.0, "fp16-amp": 5.5, "fp16-amp-noscale": 5.5}
PEAK_GIB_AT_32 |= {"bf16-amp": 5.5, "bf16-pure": 3.0}


def _timing_rows() -> list[dict]:
    rows = []
    for mode, times in STEP_MS.items():
        for bs, ms in zip((8, 32), times, strict=True):
            row = timing_row(mode=mode, optimizer="fused", batch_size=bs, total_ms=ms)
            row["peak_alloc_gib"] = PEAK_GIB_AT_32[mode] if bs == 32 else 2.0
            row["param_dtype"] = "bfloat16" if mode == "bf16-pure" else "float32"
            if mode == "bf16-pure":  # half of everything the others keep (1 GiB)
                row |= {"param_gib": 0.125, "grad_gib": 0.125, "optim_state_gib": 0.25}
            rows.append(row)
    return rows


def _audit() -> list[dict]:
    out = []
    for mode, low in (("fp16-amp", "float16"), ("bf16-amp", "bfloat16")):
        for kind, module, state, dtype in (
            (study_tables.ACTIVATION_GRAD, "fc3", "", low),
            (study_tables.PRODUCED_GRAD, "fc1.weight", "", low),
            (study_tables.PARAM_GRAD, "fc1.weight", "", "float32"),
            (study_tables.OPTIM_STATE, "fc1.weight", "exp_avg", "float32"),
        ):
            tensor = study_tables.audit_tensor(kind, module, state)
            out.append({"mode": mode, **tensor, "dtype": dtype})
    return out


def _census() -> list[dict]:
    grad = study_tables.grad_tensor(study_tables.ACTIVATION_GRAD, "fc3")
    rows = []
    for bs, flushed in ((64, 0.005), (1024, 0.5)):  # over 1% only at batch 1024
        for mode, f, err in (
            ("fp16-amp-noscale", flushed, 0.002),
            ("fp16-amp", 0.0, 0.001),
            ("bf16-amp", 0.0, 0.008),  # 8× scaled fp16's error
        ):
            rows.append(
                {"batch_size": bs, "step": 200, "mode": mode, **grad, "flushed": f, "rel_err": err}
            )
    return rows


def _study_summary() -> list[dict]:
    losses = {"fp32": 0.1, "fp16-amp": 0.105, "fp16-amp-noscale": 5.0, "bf16-amp": 0.1}
    losses["bf16-pure"] = 0.3
    rows = []
    for mode, loss in losses.items():
        for seed, step in ((0, 700), (1, 900)):
            blew = mode == "fp16-amp-noscale"
            rows.append(
                {
                    "mode": mode,
                    "batch_size": 1024,
                    "seed": seed,
                    "optimizer": "fused",
                    "final_loss": loss,
                    "divergence": "blowup" if blew else "none",
                    "diverged_at_step": step if blew else None,
                }
            )
    return rows


def write_study(folder):
    """A finished numerics study with the tables the summary reads; the others empty."""
    folder.mkdir(parents=True)
    given = {"audit": _audit(), "census": _census(), "summary": _study_summary()}
    for name, table in study_tables.TABLES.items():
        if not table.optional:
            study_tables.write(folder, name, study_tables.frame(name, given.get(name, [])))
    (folder / study_tables.AUDIT_JSON).write_text(
        json.dumps({"chained": "fc1.weight", "chains": {}, "error_paths": []})
    )
    results.write_env(folder, {"gpu": "cpu", "torch": "2.99.0"})
    return folder


@pytest.fixture
def answered(tmp_path):
    write_run(tmp_path / "results" / "run1", _timing_rows(), gpu="Test GPU")
    write_study(tmp_path / "results" / "study1")
    return tmp_path


SUMMARY = [
    "- **Speed.** At batch 32 (eager, fused Adam) a training step takes 160 ms in fp32, 40.0 ms "
    "with TF32 and 16.0 ms under bf16 autocast: 10.0× fp32 and 2.50× TF32.",
    "- **Gradients.** Under float16 autocast the activation gradients are float16 and each weight "
    "gradient leaves its matmul as float16; `param.grad` is float32 only because autograd casts "
    "that gradient back to the weight's dtype. Under bfloat16 autocast they are bfloat16, and "
    "`param.grad` is float32.",
    # The share of elements flushed is no evidence (it was 50.0% of fc3's output gradient here):
    # only the divergence of training without the scaler is.
    "- **GradScaler: needed with float16** (on this synthetic task). Without it training "
    "diverged at batch 1024 (steps 700 and 900, 2 of 2 seeds). A float32 `param.grad` does not "
    "help: the gradients are rounded to float16 before that cast.",
    # Rows that do not count GradScaler's skipped steps: such steps may be among their samples,
    # and they decide a p10 (`scaler_cost`).
    "- **What GradScaler costs.** Not known: timed before GradScaler's skipped steps were "
    "counted and left out.",
    # bf16 autocast against fp16 with the GradScaler it needs, by the same rule: not known either.
    "- **bf16 against fp16** (bf16 autocast against fp16-amp, with the GradScaler fp16 needs; "
    "eager, fused Adam): speed not known (timed before GradScaler's skipped steps were counted "
    "and left out: batch 8 (5.00 against 5.50 ms) and 32 (16.0 against 22.0 ms)); the same peak "
    "memory at each.",
    "- **What bf16 gives up.** bf16 autocast ends its synthetic-task training at 0.100 "
    "against 0.100 at batch 1024; its gradients are 8.00× further from fp32's than scaled fp16's "
    "(median relative error 0.00800 against 0.00100): it keeps float32's range with 3 fewer "
    "mantissa bits.",
    "- **Fastest at batch 8** (any variant, fused Adam): `bf16-pure` at batch 8 (eager, 4.00 ms, "
    "10.0× eager fp32); in training its final loss is 3.00× fp32's at batch 1024.",
    "- **Fastest at batch 32** (any variant, fused Adam): `bf16-amp` at batch 32 (eager, 16.0 ms, "
    "10.0× eager fp32); in training its final loss is 1.00× fp32's at batch 1024.",
    # One seed of a synthetic task decides no "trains like fp32" (the old rule, within 10% of
    # fp32's worst seed, named bf16-amp here).
    "- **Which of these trains like fp32: not known** here: a numerics study trains one or two "
    "seeds on a synthetic task, which cannot decide it; a time-to-quality study on real data "
    "does (docs/quality.md).",
    "- **Memory** (peak allocated at batch 32, eager): fp32 6.00 GiB, bf16-amp 5.50 GiB and "
    "bf16-pure 3.00 GiB. Autocast keeps the weights, gradients and Adam state in float32 (1.00 "
    "GiB), so it saves only on activations; bf16-pure holds them in bfloat16 (0.500 GiB).",
]


def test_the_summary_says_the_answer_with_the_measured_numbers(answered):
    run, study = answered / "results" / "run1", answered / "results" / "study1"
    lines = summary.summary(
        results.load(run),
        results.read_env(run),
        [study_tables.load(study)],
        ["[timing run](results/run1)"],
    )
    assert lines[0] == "Measured on one Test GPU, torch 2.99.0 ([timing run](results/run1)):"
    assert lines[1] == ""
    assert lines[2:] == SUMMARY


def test_the_summary_block_links_its_folders_from_the_page(answered):
    (answered / "results" / "run1" / "report.md").write_text("# report\n")
    block = "<!-- ampbench:summary ../results/run1 numerics=study1 -->\n<!-- /ampbench:summary -->"
    (answered / "docs").mkdir()
    text, _ = readme.regenerate(block, answered / "docs")
    assert (
        "Measured on one Test GPU, torch 2.99.0 ([timing run](../results/run1/report.md) at an "
        "unknown commit, [numerics study](../results/study1) at an unknown commit):"
    ) in text
    assert "\n".join(SUMMARY) in text


def test_a_summary_without_a_study_keeps_only_the_timing_lines(answered):
    run = answered / "results" / "run1"
    lines = summary.summary(results.load(run), results.read_env(run), [], [])
    assert lines[0] == "Measured on one Test GPU, torch 2.99.0:"
    leads = [line.split("**")[1] for line in lines[2:]]
    assert leads == [
        "Speed.",
        "What GradScaler costs.",
        "bf16 against fp16",
        "Fastest at batch 8",
        "Fastest at batch 32",
        "Memory",
    ]
    assert "no numerics study trained it" in lines[5]


SCALER_COST = (
    "- **What GradScaler costs.** It changes the fp16 step by +10.0% at batch 8 and +10.0% at 32 "
    "(22.0 against 20.0 ms at 32; eager, fused Adam); bf16 autocast needs no scaler and takes "
    "16.0 ms there."
)


def test_the_scaler_cost_is_said_only_on_training_steps_outside_the_noise(answered):
    run = answered / "results" / "run1"
    rows, env = results.load(run), results.read_env(run)
    ok = summary.passing(rows, "fused")
    # Rows that do not count the skipped steps decide nothing.
    assert summary.scaler_cost_line(ok, "fused", env).startswith(
        "- **What GradScaler costs.** Not known: timed before GradScaler's skipped steps were"
    )
    counted = ok.assign(skipped_steps=0)
    # One run: 10% apart, beyond what two runs of one grid differ by, and their spans apart.
    assert summary.scaler_cost_line(counted, "fused", env) == SCALER_COST
    interleaved = {**env, "config": {**env["config"], "rounds": 3}}
    assert summary.scaler_cost_line(counted.assign(rounds=3), "fused", interleaved) == SCALER_COST
    # fp16-amp's p10-p90 reaching into fp16-amp-noscale's at batch 8: no sign there.
    wide = counted.assign(
        rounds=3, total_ms_p10=counted["total_ms"] * 0.85, total_ms_p90=counted["total_ms"]
    )
    wide.loc[wide["batch_size"] == 32, ["total_ms_p10", "total_ms_p90"]] = float("nan")
    line = summary.scaler_cost_line(wide, "fused", interleaved)
    assert line.startswith(
        "- **What GradScaler costs.** It changes the fp16 step by +10.0% at batch 32 (22.0 "
        "against 20.0 ms at 32; eager, fused Adam); at 8 the two are within noise;"
    )
    # bf16 autocast against fp16 with its GradScaler, by the same rule, and their peak memory.
    assert summary.bf16_fp16_line(counted, "fused", env) == (
        "- **bf16 against fp16** (bf16 autocast against fp16-amp, with the GradScaler fp16 "
        "needs; eager, fused Adam): 9.1% faster at batch 8 (5.00 against 5.50 ms) and 27.3% "
        "faster at 32 (16.0 against 22.0 ms); the same peak memory at each."
    )
    everywhere = wide.assign(total_ms_p10=wide["total_ms"] * 0.85, total_ms_p90=wide["total_ms"])
    assert summary.scaler_cost_line(everywhere, "fused", interleaved).startswith(
        "- **What GradScaler costs.** Within noise at batch 8 and 32 (eager, fused Adam: the "
        "p10–p90 of the two overlap); bf16 autocast needs no scaler and takes 16.0 ms there."
    )


def test_one_run_says_no_sign_inside_what_two_runs_differ_by():
    def row(ms: float, p10: float | None = None, p90: float | None = None) -> pd.Series:
        return pd.Series(
            {"skipped_steps": 0, "total_ms": ms, "total_ms_p10": p10, "total_ms_p90": p90}
        )

    once = timing.scaler_cost(row(10.2), row(10.0), interleaved=False)
    assert once.verdict == timing.NOT_KNOWN and "what two runs of one grid differ by" in once.why
    assert timing.scaler_cost(row(10.2), row(10.0), interleaved=True).verdict == timing.SLOWER
    lo, hi = timing.RUN_RATIO_SPAN
    beyond = timing.scaler_cost(row(10.0 * hi * 1.01), row(10.0), interleaved=False)
    assert beyond.verdict == timing.SLOWER and beyond.ratio > hi
    below = timing.scaler_cost(row(10.0 * lo * 0.99), row(10.0), interleaved=False)
    assert below.verdict == timing.FASTER
    tied = timing.scaler_cost(row(11.0, 9.5, 12.0), row(10.0, 9.0, 11.0), interleaved=True)
    assert tied.verdict == timing.TIED and (tied.lo, tied.hi) == (9.5 / 11.0, 12.0 / 9.0)


def test_modes_two_ms_apart_inside_each_others_noise_are_tied_not_ranked():
    # Medians 20 and 22 ms, IQRs of 3 and 9 ms: the old rule named bf16-pure the fastest.
    ok = pd.DataFrame(
        [
            {"mode": m, "batch_size": 8, "variant": "eager", "total_ms": ms}
            | {"total_ms_p10": lo, "total_ms_p90": hi, "total_ms_iqr": iqr, "noisy": True}
            for m, ms, lo, hi, iqr in (
                ("fp32", 80.0, 79.0, 81.0, 1.0),
                ("bf16-amp", 22.0, 18.0, 30.0, 9.0),
                ("bf16-pure", 20.0, 18.5, 23.0, 3.0),
            )
        ]
    )
    (line,) = summary.fastest_lines(ok, [], "fused")
    assert line == (
        "- **Fastest at batch 8** (any variant, fused Adam): tied within noise: `bf16-pure` "
        "(eager, 20.0 ms, 4.00× eager fp32) and `bf16-amp` (eager, 22.0 ms, 3.64× eager fp32) "
        "(p10–p90 overlap; the fastest is noisy: IQR 15.0% of its median); `bf16-pure` and "
        "`bf16-amp`: no numerics study trained it."
    )


def test_variants_of_one_mode_tied_within_noise_name_the_mode_and_each_variant():
    ok = pd.DataFrame(
        [
            {"mode": m, "batch_size": 8, "variant": v, "total_ms": ms}
            | {"total_ms_p10": ms * 0.99, "total_ms_p90": ms * 1.01, "noisy": False}
            for m, v, ms in (
                ("fp32", "eager", 40.0),
                ("bf16-pure", "compile", 4.00),
                ("bf16-pure", "cudagraph", 4.04),
                ("bf16-amp", "compile", 5.0),
            )
        ]
    )
    (line,) = summary.fastest_lines(ok, [], "fused")
    assert line == (
        "- **Fastest at batch 8** (any variant, fused Adam): `bf16-pure` at batch 8 (compile, "
        "4.00 ms, 10.0× eager fp32; cudagraph tied within noise); no numerics study trained it."
    )


def test_a_numerics_study_never_says_the_scaler_is_not_needed(answered):
    # 0.1% of elements flushed and training as fp32's: the old rule said "not needed". A census
    # of flushed elements on a synthetic task cannot show it (`bench.verdicts.training`).
    study = study_tables.load(answered / "results" / "study1")
    census, runs = study["census"], study["summary"]
    census.loc[census["mode"] == "fp16-amp-noscale", "flushed"] = 0.001
    noscale = runs["mode"] == "fp16-amp-noscale"
    runs.loc[noscale, ["final_loss", "divergence", "diverged_at_step"]] = [0.1, "none", None]
    line = summary_studies.scaler_line([study])
    assert line.startswith("- **GradScaler with float16: not known** on this synthetic task")
    assert summary_studies.scaler_needed([study]) is None


def test_a_study_that_traced_divergence_is_preferred_for_training(answered):
    old = study_tables.load(answered / "results" / "study1")
    new = study_tables.load(answered / "results" / "study1")
    old["summary"] = old["summary"].assign(divergence=float("nan"), diverged_at_step=float("nan"))
    vs = summary_studies.against_fp32([old, new], "fp16-amp-noscale")
    assert vs.to_dict("records") == [
        {
            "batch_size": 1024,
            "loss": 5.0,
            "fp32_loss": 0.1,
            "ratio": pytest.approx(50.0),
            "within": False,
            "worse": 2,
            "fp32_low": 0.1,
            "fp32_high": 0.1,
            "diverged": 2,
            "steps": [700, 900],
            "runs": 2,
        }
    ]
    assert summary_studies.against_fp32([old], "fp16-amp-noscale")["diverged"].tolist() == [0]


def test_a_summary_block_can_skip_bullets_and_names_a_stale_skip(answered):
    block = (
        "<!-- ampbench:summary ../results/run1 numerics=study1 skip=Memory,Fastest -->\n"
        "<!-- /ampbench:summary -->"
    )
    (answered / "docs").mkdir(exist_ok=True)
    text, _ = readme.regenerate(block, answered / "docs")
    assert "**Speed.**" in text and "**Memory**" not in text and "**Fastest" not in text
    with pytest.raises(UsageError, match="no bullet 'Nope' to skip"):
        readme.regenerate(block.replace("Memory,Fastest", "Nope"), answered / "docs")


def test_the_learning_line_counts_the_runs_left_on_the_plateau():
    s = pd.DataFrame(
        [
            {"mode": m, "batch_size": 2, "seed": i, "final_loss": v, "heldout_loss": v}
            for m, vals in (("fp32", (1.3, 6.0)), ("bf16-amp", (1.4, 1.35)))
            for i, v in enumerate(vals)
        ]
    )
    runs = s[["mode", "batch_size", "seed"]].assign(true_heldout_loss=1.1)
    study = {"summary": s, "runs": runs, "env": {"numerics_config": {"steps": 1000}}}
    line = summary_studies.learning_line([study])
    assert "Runs still on the plateau by step 1000: batch 2: fp32 1 of 2; every other" in line
    everyone = {**study, "summary": s.assign(heldout_loss=1.2)}
    assert summary_studies.learning_line([everyone]) is None


def test_the_float8_line_says_where_float8_pays_and_leaves_out_what_converts_nothing():
    rows = pd.DataFrame(
        [
            {"mode": "bf16-amp", "batch_size": 8, "variant": "compile", "total_ms": 20.0},
            {"mode": "fp8-tensorwise", "batch_size": 8, "variant": "compile", "total_ms": 40.0}
            | {"fp8_linears": "a converted; b kept: too small for tensorwise (in 768 ≤ 4096)"},
            # An older folder's ok row of a mode that converted nothing: the old rule set its
            # bf16 autocast step against bf16 autocast (1.053×).
            {"mode": "fp8-rowwise", "batch_size": 8, "variant": "eager", "total_ms": 19.0}
            | {"fp8_linears": "a kept: too small for rowwise (in 768 ≤ 1024); head kept: x"},
        ]
    ).assign(status="ok", optimizer="fused", parallel="none")
    ok = summary.passing(rows, "fused")
    assert "fp8-rowwise" not in set(ok["mode"])
    line = summary.float8_line(ok, timing.float8_unconverted(rows))
    assert line == (
        "- **Float8** against bf16-amp, each at its fastest variant (bf16-amp too): at batch 8 "
        "against 20.0 ms: fp8-tensorwise 0.5000× (compile, 40.00 ms). Below 1×, float8 does not "
        "pay: fp8-tensorwise at batch 8. fp8-rowwise converts no Linear of this model: "
        "unsupported."
    )
    alone = summary.passing(rows[rows["mode"] != "fp8-tensorwise"], "fused")
    assert summary.float8_line(alone, ["fp8-rowwise"]) == (
        "- **Float8.** fp8-rowwise converts no Linear of this model: unsupported."
    )


def test_a_numerics_study_names_no_fastest_that_trains_like_fp32():
    # Two seeds on a synthetic task: the old rule named fp16-amp-noscale (within 10% of fp32).
    ok = pd.DataFrame(
        [
            {"mode": m, "batch_size": 8, "variant": "eager", "total_ms": ms}
            for m, ms in (("fp32", 40.0), ("fp16-amp-noscale", 5.0), ("bf16-pure", 4.0))
        ]
    )
    summary_rows = pd.DataFrame(
        [
            {"mode": m, "batch_size": 1024, "seed": s, "final_loss": loss}
            | {"divergence": "none", "diverged_at_step": float("nan")}
            for m, loss in (("fp32", 0.1), ("fp16-amp-noscale", 0.1), ("bf16-pure", 0.5))
            for s in (0, 1)
        ]
    )
    census = pd.DataFrame(
        [{"mode": "fp16-amp-noscale", "batch_size": 64, "flushed": 0.5, "tensor": "grad of x"}]
    )
    study = {"summary": summary_rows, "census": census}
    *_, line = summary.fastest_lines(ok, [study], "fused")
    assert line.startswith("- **Which of these trains like fp32: not known**")
    assert not any("Fastest that trains" in x for x in summary.fastest_lines(ok, [study], "fused"))


def test_a_block_names_every_commit_its_folders_were_recorded_at(tmp_path):
    # A block older than the code it describes says so with the commit: named, never compared
    # with the checkout's, so the check reads the same at any later commit.
    one = write_run(tmp_path / "one", small_grid()[:2], commit="a" * 40)
    two = write_run(tmp_path / "two", small_grid()[:2], commit="b" * 40)
    env = results.read_env(two)
    env["dirty"] = True
    env["resumed"] = [{"at": "2026-12-03T07:34", "differs": ["commit 'bbb' there, 'ccccccc' here"]}]
    results.write_env(two, env)
    assert readme_blocks.recorded([one]) == "recorded at commit aaaaaaa"
    assert readme_blocks.recorded([one, two]) == (
        "recorded at commits aaaaaaa, bbbbbbb (uncommitted changes) and ccccccc"
    )
    nogit = write_run(tmp_path / "nogit", small_grid()[:2])
    assert readme_blocks.recorded([nogit]) == "recorded at an unknown commit"
