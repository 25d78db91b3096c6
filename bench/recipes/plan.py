"""A case resolved: the objects one case trains and runs with, looked up once at the job boundary
(`bench.jobs.plans.resolve`) and handed down. The runner (`bench.measure.runner`), the execution
variants (`bench.execution.variants`) and the train step (`bench.recipes.step`) take a `Plan` and
never look a name up again, as torchtitan's trainer looks its `TrainSpec` up once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from bench.cases.axes import Parallel, Variant
from bench.cases.case import Case
from bench.recipes.modes import Mode
from bench.workloads.base import Workload


@dataclass(frozen=True, kw_only=True)
class Plan:
    case: Case
    """The case as its row names it: every axis, as strings and numbers."""
    workload: Workload
    """The case's model (`case.model`), built-in, from a zoo or a user's factory."""
    size: object
    """The workload's size object of the case (its preset's, or the case's own sizes)."""
    mode: Mode
    """The recipe the case trains with: `case.mode`'s, or one a study tries that the mode table
    has not (`with_mode`)."""
    variant: Variant
    """How the step is executed (`case.variant`)."""
    parallel: Parallel
    """How the model is spread over the ranks (`case.parallel`)."""

    def with_mode(self, mode: Mode) -> Plan:
        """This plan under another recipe; the case names it where the mode table has it (a
        recipe a study tries leaves the case as it was)."""
        if mode.card is None or mode.card.name != mode.name:
            return dataclasses.replace(self, mode=mode)
        case = dataclasses.replace(self.case, mode=mode.name)
        return dataclasses.replace(self, mode=mode, case=case)

    def with_case(self, **axes: object) -> Plan:
        """This plan with other values of axes that need no lookup (batch size, seed, lr, ...)."""
        looked_up = {"model", "preset", "sizes", "mode", "variant", "parallel"} & set(axes)
        if looked_up:
            raise ValueError(f"with_case: {sorted(looked_up)[0]} needs a new plan (resolve)")
        return dataclasses.replace(self, case=dataclasses.replace(self.case, **axes))
