"""The job boundary: a case (names) resolved into its plan (objects), once
(`bench.recipes.plan.Plan`). Every job resolves its cases here and hands the plans down; nothing
below looks a workload, a mode, a variant or a parallelism up by name."""

from __future__ import annotations

from collections.abc import Iterable

from bench.cases.axes import PARALLELS, VARIANTS
from bench.cases.case import Case
from bench.recipes.modes import MODES, Mode
from bench.recipes.plan import Plan
from bench.workloads import registry


def resolve(case: Case, mode: Mode | None = None) -> Plan:
    """The plan of `case`: its workload and size, its mode's recipe (or `mode`, a recipe the
    table has not), its variant and its parallelism. A bad model name is one line
    (`bench.faults.UsageError`, from the registry)."""
    workload = registry.get(case.model)
    if mode is None:
        mode = MODES[case.mode]
    return Plan(
        case=case,
        workload=workload,
        size=workload.size_of(case),
        mode=mode,
        variant=VARIANTS[case.variant],
        parallel=PARALLELS[case.parallel],
    )


def recipes(names: Iterable[str] | None = None) -> dict[str, Mode]:
    """The recipes of `names` (every mode of the table where None), looked up once here for a
    study that trains or audits several recipes on one case (`Plan.with_mode` applies each)."""
    return dict(MODES) if names is None else {name: MODES[name] for name in names}
