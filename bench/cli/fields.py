"""Options made from the fields of a config dataclass (`add`), and from the axes of `Case` a run
sweeps (`add_axes`): one per field, parsed through its `check`, explained by its docstring and
default; each defaults to None, so a command sees what was given."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib.util
import itertools
from collections.abc import Iterable, Mapping

from bench.cases import case, checks, grid
from bench.cli.options import converter


@functools.cache
def docstrings(cls: type) -> dict[str, str]:
    """Field name -> the docstring under it, read once from the source of the class and of the
    classes it derives from, with `ast` (a class made at run time has none of its own)."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        spec = importlib.util.find_spec(klass.__module__)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        with open(spec.origin) as file:
            tree = ast.parse(file.read())
        body = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass.__name__]
        nodes = body[0].body if body else []
        for node, after in itertools.pairwise(nodes):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                out[node.target.id] = " ".join(after.value.value.split())
    return out


def flag(f: dataclasses.Field) -> str:
    return f.metadata.get("option") or "--" + f.name.replace("_", "-")


def shown_default(f: dataclasses.Field) -> str | None:
    """The default a new job takes: the metadata's `new_run`, else the field's; None if none."""
    value = f.metadata.get("new_run", f.default)
    return None if value is dataclasses.MISSING else checks.shown(value)


def help_text(doc: str, default: str | None) -> str:
    doc = doc.rstrip(".") or "see the docs"
    doc = doc[0].lower() + doc[1:] if doc[1:2].islower() else doc
    return f"{doc} (default {default})" if default is not None else doc


def add(
    p: argparse.ArgumentParser,
    cls: type,
    names: Iterable[str] | None = None,
    *,
    defaults: Mapping[str, str] | None = None,
) -> None:
    """One option per field of `cls` (only `names`, when given); `defaults` shows a default
    that is not the field's (per device, say) by field name."""
    docs, defaults = docstrings(cls), defaults or {}
    wanted = None if names is None else set(names)
    for f in dataclasses.fields(cls):
        if f.metadata.get("cli") is False or (wanted is not None and f.name not in wanted):
            continue
        default = defaults.get(f.name, shown_default(f))
        text = help_text(docs.get(f.name, ""), default if f.type not in ("bool", bool) else None)
        options = [flag(f), *f.metadata.get("aliases", ())]
        metavar = flag(f).removeprefix("--").upper().replace("-", "_")
        if f.type in ("bool", bool):
            store = "store_false" if flag(f).startswith("--no-") else "store_true"
            # None when not given, as every other option: the config's own default applies,
            # which may depend on the rest (`bench.jobs.configs.run_config`'s overhead check on
            # the CPU).
            p.add_argument(*options, dest=f.name, action=store, default=None, help=text)
            continue
        check = f.metadata.get("check")
        many = str(f.type).startswith("tuple")
        noun = f.metadata.get("noun", f.name.rstrip("s").replace("_", " ") if many else "")
        kind = converter(check, noun, items=many) if check else None
        if check is not None and check.choices and not many:
            p.add_argument(*options, dest=f.name, choices=check.choices, help=text)
        else:
            p.add_argument(*options, dest=f.name, type=kind, metavar=metavar, help=text)


def _axis_default(name: str) -> str:
    """A swept axis's default as help shows it, from `grid.new_run_default`."""

    def text(device: str, world_size: int = 1) -> str:
        return ",".join(map(str, grid.new_run_default(name, device, world_size)))

    gpu, cpu, ranked = text("cuda"), text("cpu"), text("cuda", 2)
    if name == "batch_size":
        return f"{gpu}; a zoo model (hf:, timm:, torchvision:) has its own (docs/own-model.md)"
    if gpu != cpu:
        return f"{gpu} on a GPU, {cpu} on the CPU"
    return f"{gpu}; {ranked} with --gpus N > 1" if ranked != gpu else gpu


def add_axes(p: argparse.ArgumentParser) -> None:
    """One option per swept axis of `Case`: a comma list of its values."""
    docs = docstrings(case.Case)
    for f in dataclasses.fields(case.Case):
        how = f.metadata.get("sweep")
        if how is None:
            continue
        doc = how.help or docs.get(f.name, f.name)
        doc = doc[0].lower() + doc[1:]
        p.add_argument(
            how.flag,
            *how.aliases,
            dest=how.plural,
            metavar=how.flag.removeprefix("--").upper().replace("-", "_"),
            type=converter(f.metadata["check"], how.noun, items=True),
            help=help_text(f"comma list: {doc}", _axis_default(f.name)),
        )
