"""A model is one plug-in (docs/architecture.md, "Where to add"): a workload defined here, in the
test module and nowhere else, runs through the `run`, `numerics` and `maxbatch` jobs as
`--model tests.test_plugin:workload`; its cases carry its own sizes; `--model` has one resolver,
keyed by prefix; and no module but the MLP's own branches on the MLP's name. CPU, tiny sizes."""

from __future__ import annotations

import dataclasses
import re
import sys
import types
from pathlib import Path

import pytest
import torch
from torch import nn

from bench.cases.case import Case
from bench.cases.sizes import Sizes
from bench.cli.main import main
from bench.ground import cards
from bench.jobs import configs
from bench.numerics.measure import tables
from bench.plan.plan import resolve
from bench.plan.step import build, train_step
from bench.store import results
from bench.workloads import heads, mlp, registry
from bench.workloads.base import Workload, from_model

SPEC = "tests.test_plugin:workload"
BENCH = Path(__file__).resolve().parent.parent / "bench"
DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"

# --- the plug-in: one module-level factory, nothing registered elsewhere ----------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Size:
    features: int
    width: int
    classes: int


PRESETS = {
    "tiny": Size(features=6, width=8, classes=5),
    "small": Size(features=12, width=16, classes=7),
}


class Net(nn.Module):
    def __init__(self, size: Size, device: str) -> None:
        super().__init__()
        self.inp = nn.Linear(size.features, size.width, device=device)
        self.act = nn.Tanh()
        self.out = nn.Linear(size.width, size.classes, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.act(self.inp(x)))


def _batch(size: Size, n: int, device: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    if torch.device(device).type == "meta":  # FLOP counting: shapes, no values
        x = torch.empty(n, size.features, device=device)
        return x, torch.empty(n, dtype=torch.long, device=device)
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, size.features, generator=gen, device=device)
    return x, torch.randint(0, size.classes, (n,), generator=gen, device=device)


def workload() -> Workload:
    """The plug-in: a two-Linear classifier whose sizes are features × width × classes."""
    return Workload(
        name="tanh-net",
        description="Linear(features, width) → Tanh → Linear(width, classes)",
        presets=PRESETS,
        default_preset={"cuda": "small", "cpu": "tiny"},
        build=lambda size, device, seed: Net(size, device),
        make_batch=_batch,
        loss=heads.loss,
        named_sizes=lambda s: {"features": s.features, "width": s.width, "classes": s.classes},
        # Its Linears, its head (kept out of float8), its blocks, observed points and audited
        # weight: found in its module tree (`bench.workloads.structure`).
    )


# --- it runs through every job ----------------------------------------------------------------


def _folder(parent: Path) -> Path:
    (folder,) = [p for p in parent.iterdir() if p.is_dir()]
    return folder


def test_the_plugin_runs_through_the_run_job(tmp_path):
    argv = ["run", "--device", "cpu", "--model", SPEC, "--modes", "fp32,bf16-amp"]
    argv += ["--batch-sizes", "2,4", "--steps", "2", "--warmup", "0", "--repeats", "1"]
    assert main([*argv, "--optimizers", "fused", "--results-dir", str(tmp_path)]) == 0
    rows = results.load(_folder(tmp_path))
    assert len(rows) == 4 and set(rows["status"]) == {"ok"}
    assert set(rows["model"]) == {SPEC} and set(rows["preset"]) == {"tiny"}
    # The case ids spell out the plug-in's own sizes, features × width × classes.
    assert all("/6x8x5/cpu/" in case_id for case_id in rows["case_id"])


def test_the_plugin_runs_through_the_numerics_job(tmp_path):
    argv = ["numerics", "--device", "cpu", "--model", SPEC, "--modes", "fp32,fp16-amp"]
    argv += ["--census-batch-sizes", "2", "--checkpoints", "0,2", "--histogram-batch", "2"]
    argv += ["--conv-batch-sizes", "2", "--seeds", "0", "--steps", "4", "--long-steps", "0"]
    argv += ["--eval-every", "2", "--heldout", "4", "--results-dir", str(tmp_path)]
    assert main(argv) == 0
    census = tables.load(_folder(tmp_path))["census"]
    observed = census.loc[census["kind"] == tables.ACTIVATION_GRAD, "module"]
    assert list(dict.fromkeys(observed)) == ["inp", "act", "out"]


def test_the_plugin_runs_through_the_maxbatch_job(tmp_path):
    argv = ["maxbatch", "--device", "cpu", "--model", SPEC, "--modes", "fp32"]
    argv += ["--start", "4", "--limit", "8", "--steps", "1", "--warmup", "0"]
    assert main([*argv, "--results-dir", str(tmp_path)]) == 0
    trials = results.read_jsonl(_folder(tmp_path) / results.TRIALS)
    assert [(t["batch_size"], t["status"]) for t in trials] == [(4, "ok"), (8, "ok")]
    assert all(f"/6x8x5/cpu/s0/model={SPEC}/preset=tiny" in t["case_id"] for t in trials)


# --- its cases carry its own sizes ------------------------------------------------------------


def test_a_case_of_the_plugin_carries_the_sizes_it_gives():
    plug = registry.get(SPEC)
    assert plug.sizes("small").named() == {"features": 12, "width": 16, "classes": 7}
    case = registry.make_case(SPEC, "small", mode="fp32", optimizer="fused", batch_size=2)
    assert (case.model, case.preset) == (SPEC, "small")
    assert "/12x16x7/" in case.case_id and case.case_id.endswith(f"model={SPEC}/preset=small")
    assert resolve(case).size == PRESETS["small"]


def test_the_gpts_case_id_spells_its_own_sizes():
    case = registry.make_case("gpt", "tiny", mode="fp32", optimizer="fused", batch_size=2)
    size = registry.BUILT_IN["gpt"].size("tiny")
    assert f"/{size.context}x{size.width}x{size.vocab}/" in case.case_id


def test_the_mlps_sizes_are_its_cases_own():
    # Any three sizes, not only a preset's; the preset stays empty, as in every older id.
    case = registry.make_case("mlp", "tiny", mode="fp32", optimizer="fused", batch_size=8)
    assert case.preset == "" and "/32x64x10/" in case.case_id and "preset=" not in case.case_id
    odd = dataclasses.replace(case, sizes=Sizes.of(input=3, hidden=5, classes=2))
    assert resolve(odd).size == mlp.ModelSize(input_size=3, hidden_size=5, num_classes=2)


def test_a_run_config_takes_the_workloads_sizes_and_refuses_the_mlps_options():
    cfg = configs.run_config(device="cpu", preset="small", model=SPEC, modes=("fp32",))
    assert cfg.sizes.named() == {"features": 12, "width": 16, "classes": 7}
    assert not cfg.overhead  # only a workload whose card says so checks it on the CPU
    with pytest.raises(ValueError, match=r"^--input-size 3: --model \S+ takes no sizes of its own"):
        configs.run_config(device="cpu", preset=None, model=SPEC, sizes={"input": 3})
    with pytest.raises(ValueError, match="--numerics: the short study is mlp's"):
        configs.run_config(device="cpu", preset=None, model=SPEC, numerics=True)


# --- the preset choices are the workloads' own ------------------------------------------------


def test_the_preset_choices_are_the_workloads_own():
    assert {n: tuple(w.presets) for n, w in registry.BUILT_IN.items()} == {
        n: c.presets for n, c in cards.CARDS.items()
    }
    for name, w in registry.BUILT_IN.items():
        assert w.flags() == cards.CARDS[name].flags()


def test_a_built_in_workload_that_differs_from_its_card_is_refused():
    assert set(registry.BUILT_IN) == set(cards.CARDS)
    other = dataclasses.replace(
        registry.BUILT_IN["gpt"], presets={"other": registry.BUILT_IN["gpt"].size("tiny")}
    )
    with pytest.raises(ValueError, match="differ from its card"):
        registry.carded(other)
    with pytest.raises(ValueError, match="differ from its card"):
        registry.carded(dataclasses.replace(registry.BUILT_IN["mlp"], short_numerics=False))


def test_a_case_checks_a_built_in_preset_without_torch():
    with pytest.raises(ValueError, match="--preset of gpt"):
        Case(
            mode="fp32",
            optimizer="fused",
            batch_size=1,
            sizes=Sizes.of(context=1, width=1, vocab=1),
            model="gpt",
            preset="nope",
        )


# --- one resolver, keyed by prefix ------------------------------------------------------------


def test_the_resolver_picks_by_prefix():
    assert registry.kind("mlp") == registry.BUILT_IN_KEY
    for prefix in cards.ZOOS:
        assert registry.kind(f"{prefix}:some-model") == prefix
    assert registry.kind(SPEC) == registry.SPEC_KEY
    assert set(registry.RESOLVERS) == {registry.BUILT_IN_KEY, *cards.ZOOS, registry.SPEC_KEY}
    assert registry.get("gpt") is registry.BUILT_IN["gpt"]
    assert registry.get(SPEC).name == "tanh-net"


@pytest.mark.parametrize("prefix", cards.ZOOS)
def test_each_zoo_prefix_goes_to_its_zoo_with_the_name_after_it(prefix, monkeypatch):
    asked = []
    monkeypatch.setitem(registry.RESOLVERS, prefix, lambda name: asked.append(name) or workload())
    registry.get.cache_clear()
    try:
        assert registry.get(f"{prefix}:plugin-probe").name == "tanh-net"
    finally:
        registry.get.cache_clear()
    assert asked == ["plugin-probe"]


def test_a_new_prefix_is_one_entry_of_the_table(monkeypatch):
    monkeypatch.setitem(registry.RESOLVERS, "mine", lambda name: workload())
    registry.get.cache_clear()
    try:
        assert registry.kind("mine:net") == "mine"
        assert registry.get("mine:net").name == "tanh-net"
    finally:
        registry.get.cache_clear()


# --- the MLP answers for itself ---------------------------------------------------------------

MLP_BRANCH = re.compile(r"""[!=]=\s*\[?["']mlp["']|["']mlp["']\]?\s*[!=]=""")
"""A comparison with the MLP's name: `model == "mlp"`, `cfg.get("model", "mlp") != "mlp"`,
`models != ["mlp"]`."""


def test_no_module_but_the_mlps_branches_on_its_name():
    found = [
        f"{path.relative_to(BENCH.parent)}:{n}"
        for path in BENCH.rglob("*.py")
        if path not in (BENCH / "workloads" / "mlp.py", BENCH / "workloads" / "cards.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if MLP_BRANCH.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    "module",
    [
        "cases/case.py",
        "cases/grid.py",
        "ground/axes.py",
        "cases/maxbatch.py",
        "jobs/configs.py",
        "workloads/registry.py",
        "numerics/measure/config.py",
    ],
)
def test_the_modules_that_size_a_case_do_not_name_the_mlp(module):
    assert '"mlp"' not in (BENCH / module).read_text()


# --- the doc's worked example is one file that works -------------------------------------------


def test_the_architecture_docs_worked_example_trains(monkeypatch):
    text = DOC.read_text().split("## A model is one plug-in", 1)[1]
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    module = types.ModuleType("plugin_doc_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # a dataclass looks itself up
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    spec = f"{module.__name__}:workload"
    case = registry.make_case(
        spec, "tiny", mode="bf16-amp", optimizer="foreach", batch_size=2, device="cpu"
    )
    assert f"/b2/6x8x5/cpu/s0/model={spec}/preset=tiny" in case.case_id
    assert torch.isfinite(train_step(build(resolve(case))))


def test_the_plugins_structure_is_found_in_its_module_tree():
    from bench.modes import fp8

    plug, size = registry.get(SPEC), PRESETS["small"]
    assert plug.linears_of(size) == {"inp": (12, 16), "out": (16, 7)}
    assert set(plug.fp8_excluded_of(size)) == {"out"}  # the output head
    assert fp8.convertible(plug, size) == []  # 12 × 16: not both multiples of 16
    assert plug.audited_of(size, "cpu") == "inp.weight"


def test_from_model_builds_the_same_class_with_the_sizes_it_is_given():
    made = from_model(
        "three-functions",
        lambda device: Net(PRESETS["tiny"], device),
        lambda n, device, gen: _batch(PRESETS["tiny"], n, device, 0),
        sizes={"features": 6, "width": 8, "classes": 5},
    )
    assert isinstance(made, Workload) and made.sizes("default")["features"] == 6
    case = made.case("pkg.mod:f", "default", mode="fp32", optimizer="fused", batch_size=1)
    assert case.sizes.named() == {"features": 6, "width": 8, "classes": 5}
    assert "/6x8x5/" in case.case_id
    # Without sizes, the three 1s every such id has spelled.
    assert str(from_model("plain", made.build, made.make_batch).sizes("default")) == "1x1x1"


@pytest.mark.parametrize("name", [*registry.BUILT_IN, SPEC])
def test_every_workload_answers_the_same_typed_questions(name):
    plug = registry.get(name)
    if plug.unsupported_reason() is not None:
        pytest.skip(plug.unsupported_reason())
    preset = plug.default_preset["cpu"]
    model, (x, y) = plug.model(preset, "cpu"), plug.batch(preset, 2, "cpu", seed=1)
    assert torch.isfinite(plug.loss(model(x), y, "mean"))
    assert isinstance(plug.sizes(preset), Sizes) and preset in plug.presets
