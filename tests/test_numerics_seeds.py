"""How the numerics report reads runs whose seeds disagree (a plateau, then a jump whose step
varies with the seed), and how it shows a transformer's many parameters: hand-made tables, no
torch."""

import pandas as pd
import pytest

from bench.numerics.analysis import runs as analysis
from bench.numerics.analysis import summary as run_summary
from bench.numerics.measure import tables
from bench.numerics.render.markdown import chain_text
from bench.numerics.render.sections.beyond import update_underflow_table
from bench.numerics.render.sentences import beyond
from bench.numerics.render.sentences import divergence as answer_divergence
from bench.publish import report
from bench.store import results
from tests.stored import small_grid, write_run


def _summary(losses: dict[str, list[float]], heldout: dict[str, list[float]] | None = None):
    rows = []
    for mode, values in losses.items():
        for seed, loss in enumerate(values):
            held = (heldout or {}).get(mode, values)[seed]
            rows.append(
                {"mode": mode, "batch_size": 2, "seed": seed, "final_loss": loss}
                | {"heldout_loss": held}
            )
    return pd.DataFrame(rows)


def test_a_seed_is_worse_only_against_the_references_worst_seed():
    s = _summary({"fp32": [5.35, 6.29], "noscale": [6.43, 6.88], "late": [1.37, 5.31]})
    # Both stuck on the plateau like fp32's seeds: the mean is 14% above fp32's, yet no seed
    # ends more than 10% above fp32's worst.
    stuck = analysis.versus(s, "noscale", 2, "fp32")
    assert stuck.within and stuck.worse == 0 and stuck.loss == pytest.approx(6.655)
    assert stuck.describe("fp32") == (
        "within 10% of fp32's worst seed (fp32's own seeds end between 5.35 and 6.29)"
    )
    s = _summary({"fp32": [1.349, 1.358], "late": [1.367, 5.307], "nan": [1.35, float("nan")]})
    late = analysis.versus(s, "late", 2, "fp32")
    assert not late.within and (late.worse, late.seeds) == (1, 2)
    assert late.describe("fp32") == "**not** within 10% in 1 of 2 seeds"
    assert analysis.versus(s, "nan", 2, "fp32").worse == 1  # a non-finite seed is worse
    assert analysis.versus(s, "fp32", 4, "fp32") is None  # not trained at that batch size
    good = analysis.versus(_summary({"fp32": [1.0, 1.02], "x": [1.05, 1.08]}), "x", 2, "fp32")
    assert good.describe("fp32") == "within 10%"


def test_the_seeds_that_learned_the_task_are_counted_against_its_perfect_loss():
    s = _summary({"fp32": [5.3, 6.2], "bf16": [1.4, 5.9]}, {"fp32": [5.3, 6.2], "bf16": [1.6, 6]})
    runs = s[["mode", "batch_size", "seed"]].assign(true_heldout_loss=1.1)
    counts = analysis.learned(s, runs).set_index("mode")
    assert counts.loc["fp32", "learned"] == 0 and counts.loc["bf16", "learned"] == 1
    assert (counts["seeds"] == 2).all()
    (text,) = answer_divergence.learning_sentences(s, runs)
    assert "at batch 2: fp32 0/2, bf16 1/2" in text and "within 1.5× the perfect" in text
    # A task without a known perfect loss (an own model's pool of batches): no count, no claim.
    assert analysis.learned(s, runs.assign(true_heldout_loss=float("nan"))).empty
    assert answer_divergence.learning_sentences(s, runs.assign(true_heldout_loss=1e9)) == []


def test_a_chain_folds_its_repeated_nodes():
    chain = ["Nll", "Add", "Add", "Add", "Mm", "Add", "AccumulateGrad"]
    assert chain_text(chain) == "Nll → Add ×3 → Mm → Add → AccumulateGrad"


def _traces() -> pd.DataFrame:
    rows = []
    for seed in (0, 1):
        for step in (0, 20, 40):
            for module, share in (
                ("embed.tok.weight", 0.9),
                ("blocks.0.ln1.weight", 1.0),
                ("blocks.1.ln1.weight", 1.0),
                ("blocks.0.mlp.fc.weight", 0.2 + seed * 0.1),
                ("blocks.1.mlp.fc.weight", 0.4 + seed * 0.1),
            ):
                rows.append(
                    {"mode": "bf16-pure", "batch_size": 2, "seed": seed, "step": step}
                    | {"module": module, "update_underflow_share": share * (step > 0 or 0.5)}
                    | {"unchanged_share": share}
                )
    return pd.DataFrame(rows)


def test_the_update_underflow_table_folds_blocks_and_puts_steps_in_columns():
    table = update_underflow_table(_traces()).set_index("module")
    assert list(table.index) == [
        "embed.tok.weight",
        "blocks.*.ln1.weight ×2",
        "blocks.*.mlp.fc.weight ×2",
    ]
    assert list(table.columns) == [
        *("mode", "batch_size", "underflow at step 0", "underflow at step 20"),
        *("underflow at step 40", "unchanged at step 40"),
    ]
    # Mean over seeds (0.25, 0.45), then over the blocks: 0.35.
    assert table.loc["blocks.*.mlp.fc.weight ×2", "underflow at step 40"] == "35.000%"
    assert table.loc["blocks.*.mlp.fc.weight ×2", "underflow at step 0"] == "17.500%"


def test_the_answer_names_the_parameters_pure_bf16_left_frozen():
    census = pd.DataFrame(columns=list(tables.TABLES["census"].columns))
    (text,) = beyond.update_underflow_sentences(_traces(), census)
    assert "(frozen, in effect): `bf16-pure` at batch 2: blocks.*.ln1.weight." in text


def test_the_traces_are_written_compressed_and_older_plain_files_still_read(tmp_path):
    df = _traces()
    tables.write(tmp_path, "traces", df)
    assert (tmp_path / "convergence_traces.npz").is_file()
    assert not (tmp_path / "convergence_traces.csv").exists()
    assert len(tables.read(tmp_path, "traces")) == len(df)
    first = (tmp_path / "convergence_traces.npz").read_bytes()
    tables.write(tmp_path, "traces", df)
    assert (tmp_path / "convergence_traces.npz").read_bytes() == first  # no timestamp
    for old_form in ("convergence_traces.csv", "convergence_traces.csv.gz"):
        old = tmp_path / old_form.replace(".", "_")
        old.mkdir()
        df.head(3).to_csv(old / old_form, index=False)
        assert len(tables.read(old, "traces")) == 3
        assert tables.TABLES["traces"].path(old).name == old_form


def test_a_run_of_other_variants_alone_has_a_headline_of_its_first(tmp_path):
    write_run(tmp_path / "run1", small_grid(variant="cudagraph"))
    text = report.headline(results.load(tmp_path / "run1"))
    assert "Adam, cudagraph:" in text and "| fp32" in text


def test_parameters_sparse_in_fp32_are_left_out_of_the_traces_folds():
    rows = []
    for mode in ("fp32", "fp16-amp-noscale"):
        for step in (0, 20):
            for module, zero in (("embed.tok.weight", 0.98), ("head.weight", 0.0)):
                flushed = 0.9 if mode != "fp32" and module == "head.weight" else zero
                rows.append(
                    {"mode": mode, "step": step, "module": module} | {"grad_zero_share": flushed}
                )
    tr = pd.DataFrame(rows)
    assert analysis.sparse_parameters(tr) == {"embed.tok.weight"}  # by fp32's zeros alone
    assert analysis.sparse_parameters(tr[tr["mode"] != "fp32"]) == set()  # no reference: none


def test_the_answer_says_what_fp16_flushed_in_runs_that_did_not_diverge():
    rows = []
    for mode in ("fp32", "fp16-amp-noscale"):
        for seed in (0, 1):
            for step in (0, 100, 200):
                for module, zero in (("embed.tok.weight", 0.98), ("head.weight", 0.0)):
                    if mode != "fp32" and module == "head.weight" and step >= 100:
                        zero = 0.9 + 0.02 * seed
                    rows.append(
                        {"mode": mode, "batch_size": 2, "seed": seed, "step": step}
                        | {"module": module, "grad_zero_share": zero}
                    )
    traces = pd.DataFrame(rows)
    summary = traces[["mode", "batch_size", "seed"]].drop_duplicates()
    summary = summary.assign(divergence=run_summary.HEALTHY, diverged_at_step=float("nan"))
    (text,) = answer_divergence.calm_sentences(traces, summary)
    # The embedding's zeros are by construction (fp32 has them too): not what fp16 flushed.
    assert (
        "At batch 2, where fp16 without a scaler did not diverge, 91.0% of head.weight's gradient "
        "elements were zero on average after step 100 (mean over 2 seeds; fp32's: 0.00%)" in text
    )
    blown = summary.assign(divergence=run_summary.BLOWUP)
    assert answer_divergence.calm_sentences(traces, blown) == []  # the mechanism says it there
