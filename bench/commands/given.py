"""What a command's parsed arguments give its job: the config fields and sizes given, the options
a resume refuses, a config's refusal as bad input."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Iterator

from bench.faults import UsageError

SIZE_DEST = "size:"
"""The prefix of a size option's argparse destination: `size:input` holds `--input-size`."""


def given(args: argparse.Namespace, cls: type) -> dict:
    """The fields of `cls` the user gave options for (not None), lists as tuples."""
    out = {}
    for f in dataclasses.fields(cls):
        value = getattr(args, f.name, None)
        if f.metadata.get("cli") is False:
            continue
        if value is not None:
            out[f.name] = tuple(value) if isinstance(value, list) else value
    return out


def given_sizes(args: argparse.Namespace) -> dict[str, int]:
    """Size name -> value, of the size options given (`bench.cli.options.add_sizes`)."""
    found = vars(args).items()
    return {k.removeprefix(SIZE_DEST): v for k, v in found if k.startswith(SIZE_DEST) and v}


def refuse_with_resume(args: argparse.Namespace, allowed: tuple[str, ...]) -> None:
    """A resume takes its settings from the folder: refuse any option of the command, but
    `allowed`, that was given a value other than its default (one line naming the first). `args`
    as `bench.cli.main` parsed them, its parser on them (`args.parser`)."""
    sub = next(a for a in args.parser._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices.get(args.command)
    defaults = {a.dest: a.default for a in parser._actions} if parser else {}
    for action in parser._actions if parser else []:
        key = action.dest
        if key in (*allowed, "help") or not action.option_strings:
            continue
        if getattr(args, key, None) != defaults.get(key):
            raise UsageError(
                "--resume takes its settings from the folder's env.json; drop "
                + action.option_strings[0]
            )


@contextlib.contextmanager
def settings() -> Iterator[None]:
    """Around building a job's config: a `ValueError` of its checks is bad input (one line,
    exit status 2), before any folder exists."""
    try:
        yield
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
