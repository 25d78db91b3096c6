"""The model axis on the command line: `--model`, `--preset`, a user's own model, and one-line
errors for each way of getting them wrong (exit 2, no folder made)."""

import textwrap

import pytest

from bench.cli import main


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user's module in the directory the command runs from, with factories good and bad."""
    (tmp_path / "my_models.py").write_text(
        textwrap.dedent(
            """
            from torch import nn
            from bench.workloads.base import from_model

            def good():
                return from_model(
                    "two-linears",
                    lambda device: nn.Sequential(nn.Linear(8, 16, device=device),
                                                 nn.Linear(16, 4, device=device)),
                    lambda n, device, gen: (
                        __import__("torch").randn(n, 8, device=device, generator=gen),
                        __import__("torch").randint(0, 4, (n,), device=device, generator=gen),
                    ),
                )

            def raises():
                raise RuntimeError("no weights here")

            def not_a_workload():
                return nn.Linear(2, 2)
            """
        )
    )
    monkeypatch.setenv("AMPBENCH_CWD", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("model", "preset", "message"),
    [
        ("transformer", None, "--model: 'transformer' is not a workload (mlp, gpt, resnet50), a"),
        ("no_such_module:f", None, "--model no_such_module:f: cannot import it"),
        ("my_models:missing", None, "--model my_models:missing: module my_models has no factory"),
        ("my_models:raises", None, "the factory raised RuntimeError: no weights here"),
        ("my_models:not_a_workload", None, "the factory returned Linear, not a"),
        ("gpt", "seed", "--preset 'seed' is unknown; choose from gpt2-124m, gpt-1.3b, tiny"),
        ("my_models:good", "large", "--preset 'large' is unknown; choose from default"),
    ],
)
def test_a_bad_model_or_preset_is_one_line_and_exit_2(
    user_module, tmp_path, capsys, model, preset, message
):
    out = tmp_path / "out"
    argv = ["run", "--device", "cpu", "--model", model, "--results-dir", str(out)]
    argv += ["--preset", preset] if preset else []
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_the_mlp_sizes_are_refused_for_another_model(tmp_path, capsys):
    argv = ["run", "--device", "cpu", "--model", "gpt", "--input-size", "8"]
    assert main([*argv, "--results-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # One line naming the option and its value, and the workload's own sizes.
    assert err == [
        "ampbench: error: --input-size 8: --model gpt takes no sizes of its own; its context, "
        "width, vocab are its preset's (--preset)"
    ]
    assert not (tmp_path / "out").exists()


def test_the_mlp_sizes_options_still_size_the_mlp(tmp_path):
    from bench.store import results

    argv = ["run", "--device", "cpu", "--input-size", "8", "--hidden-size", "16"]
    argv += ["--num-classes", "3", "--modes", "fp32", "--optimizers", "fused"]
    argv += ["--batch-sizes", "2", "--steps", "1", "--repeats", "1", "--no-overhead"]
    assert main([*argv, "--results-dir", str(tmp_path)]) == 0
    (run,) = tmp_path.iterdir()
    (row,) = results.load(run).to_dict("records")
    assert row["case_id"] == "fp32/fused/b2/8x16x3/cpu/s0"
    assert row["sizes"].named() == {"input": 8, "hidden": 16, "classes": 3}


def test_the_example_own_model_runs_through_the_command_line(tmp_path):
    from bench.store import results

    out = tmp_path / "out"
    argv = ["run", "--device", "cpu", "--model", "examples.own_model:workload"]
    argv += ["--modes", "fp32,bf16-amp", "--optimizers", "fused", "--batch-sizes", "4"]
    argv += ["--steps", "2", "--repeats", "2", "--no-overhead", "--results-dir", str(out)]
    assert main(argv) == 0
    (run,) = out.iterdir()
    rows = results.load(run)
    assert list(rows["status"]) == ["ok", "ok"]
    assert set(rows["model"]) == {"examples.own_model:workload"}
    assert set(rows["preset"]) == {"default"}
    assert (rows["fwd_gflop"] > 0).all()  # counted from the model, as for any workload
    report = (run / "report.md").read_text()  # the model's name, and its own description
    assert "Model: examples.own_model:workload, preset default: a small CNN on 32×32" in report
