"""Options that several commands share, spelled and explained once, and the converters that
turn their text into values through `bench.cases.checks`."""

from __future__ import annotations

import argparse
import importlib.metadata
import re
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from bench.cases import checks
from bench.commands.given import SIZE_DEST
from bench.faults import UsageError
from bench.ground import cards, catalog
from bench.store import paths
from bench.verdicts import defaults, memory

PROG = "ampbench"


class Parser(argparse.ArgumentParser):
    """Bad input is a `UsageError`: one line, exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def version() -> str:
    """The installed package's version; from pyproject.toml when bench runs from a checkout
    that was never installed."""

    try:
        return importlib.metadata.version("ampbench")
    except importlib.metadata.PackageNotFoundError:
        text = (paths.ROOT / "pyproject.toml").read_text()
        found = re.search(r'^version\s*=\s*"([^"]+)"', text, flags=re.MULTILINE)
        return found.group(1) if found else "unknown"


class Version(argparse.Action):
    """`--version`: `ampbench X.Y.Z`, looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> NoReturn:
        print(f"{PROG} {version()}")
        parser.exit()


def path(text: str) -> Path:
    """A path as the user typed it: relative to the directory the command was run in."""
    return paths.from_user(text)


def converter(check: checks.Check, noun: str = "", *, items: bool = False) -> Callable:
    """An argparse `type` from a check: one value, or (`items`) a comma list of them; `noun`
    names an item in an error (`batch '0' is not a positive integer`)."""

    def parse(text: str) -> object:
        try:
            return checks.parse_items(noun, text, check) if items else check.parse(noun, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = noun or "value"
    return parse


POSITIVE = converter(checks.POSITIVE_INT)
NON_NEGATIVE = converter(checks.NON_NEGATIVE_INT)
POSITIVE_FLOAT = converter(checks.POSITIVE_FINITE)
FRACTION = converter(checks.FRACTION)
MODE_NAMES = converter(checks.choice(catalog.CARDS), "mode", items=True)
SEEDS = converter(checks.NON_NEGATIVE_INT, "seed", items=True)
DURATION = converter(checks.DURATION)


def add_verdict_settings(p: argparse.ArgumentParser) -> None:
    """`--min-effect` and `--confidence` of the verdicts; left out, they are None and the
    verdicts' own defaults (`bench.verdicts.defaults`) apply."""
    p.add_argument(
        "--min-effect",
        type=FRACTION,
        default=None,
        help="smallest relative change reported as faster/slower "
        f"(default {defaults.MIN_EFFECT:g})",
    )
    p.add_argument(
        "--confidence",
        type=FRACTION,
        default=None,
        help="the confidence of each case's interval; 1 minus it bounds the chance of any false "
        f"faster or slower across the cases (Holm's correction; default {defaults.CONFIDENCE:g})",
    )


def _tolerance(text: str) -> str:
    try:
        return memory.Tolerance.parse(text).spec()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_judging(p: argparse.ArgumentParser, statistic: str | None = "median") -> None:
    """A comparison's judge and gates (`compare`, `ab`): the verdict settings, `--statistic`
    (what one round of a case is summed up by, default `statistic`) and what makes it exit 1."""
    add_verdict_settings(p)
    p.add_argument(
        "--statistic",
        choices=("median", "p10"),
        default=statistic,
        help="what each round of a case is summed up by: the median of its step times (default) "
        "or their 10th percentile (steadier where other work shares the machine)",
    )
    p.add_argument(
        "--fail-on-slower", action="store_true", help="exit 1 when any case is slower (for CI)"
    )
    p.add_argument(
        "--memory-tolerance",
        type=_tolerance,
        default=None,
        metavar="TOL",
        help="how far B's peak allocated memory may move from A's and be `same memory`: N%%, "
        + f"NMiB or both (default {memory.DEFAULT.spec()}: {memory.DEFAULT.text()})".replace(
            "%", "%%"
        ),
    )
    p.add_argument(
        "--fail-on-more-memory",
        action="store_true",
        help="exit 1 when any case uses more memory (for CI)",
    )
    p.add_argument(
        "--criteria",
        type=path,
        default=None,
        metavar="FILE",
        help="exit 1 when a comparison criterion of this file fails (docs/criteria.md), e.g. "
        "no case uses more memory; its [memory] tolerance applies unless --memory-tolerance",
    )


def add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="where to run: auto (the default) is cuda when a GPU is visible, else cpu",
    )


def add_sizes(p: argparse.ArgumentParser) -> None:
    """The options that set a workload's own sizes where they are free (the MLP's
    `--input-size`, `--hidden-size`, `--num-classes`), as the workloads' cards name them."""
    for card in cards.CARDS.values():
        for name, flag in card.options.items():
            p.add_argument(
                flag,
                dest=SIZE_DEST + name,
                type=converter(checks.POSITIVE_INT, flag),
                metavar=flag.removeprefix("--").upper().replace("-", "_"),
                help=f"override the {card.name} preset's {name} size (--model {card.name})",
            )


def add_preset(
    p: argparse.ArgumentParser,
    default: str = (
        "the model's own: seed for mlp, gpt2-124m for gpt and resnet50 for resnet50 on CUDA, "
        "tiny on the CPU"
    ),
) -> None:
    named = "; ".join(f"{name}: {', '.join(c.presets)}" for name, c in cards.CARDS.items())
    # The zoo's presets are known once a model is named: these are the ones every zoo model has,
    # and the real sizes some transformers types add (`bench.workloads.zoo.hf.NAMED`).
    zoo = (
        "hf:, timm:, torchvision: models: default (the real size), tiny; hf:llama 1b; "
        "hf:t5, hf:bart base"
    )
    p.add_argument("--preset", help=f"the model's size preset ({named}; {zoo}; default: {default})")


def add_results_dir(
    p: argparse.ArgumentParser,
    what: str = "parent of new folders",
    default: str = "the project's runs/, git-ignored; `promote` publishes a run",
    *,
    published: bool = False,
) -> None:
    """`--results-dir`, its default resolved here: the published results/ for a command that
    reads or writes the published runs, else where new folders go (`paths.default_results`)."""
    folder = paths.RESULTS if published else paths.default_results()
    default = "the project's results/" if published else default
    p.add_argument("--results-dir", type=path, default=folder, help=f"{what} (default: {default})")


def add_new_folder(p: argparse.ArgumentParser, *where: str, debug: bool = True) -> None:
    """Where a job's new folder goes (`--results-dir`, `add_results_dir(p, *where)`), `--tag`,
    and `--debug` for the jobs that run cases (`bench.faults.debug`)."""
    add_results_dir(p, *where)
    p.add_argument(
        "--tag",
        type=converter(checks.TAG),
        help="appended to the new folder's name (letters, digits, '.', '-')",
    )
    if not debug:
        return
    p.add_argument(
        "--debug",
        action="store_true",
        help="raise the first case's exception instead of recording it as a row, so that its "
        "traceback shows and `python -m pdb -m bench ...` stops there (an out-of-memory error "
        "or an unsupported case is still a row); also shows the warnings of other packages",
    )


def add_resume(p: argparse.ArgumentParser, what: str) -> None:
    """`--resume RUN_DIR` and `--force`."""
    p.add_argument("--resume", type=path, metavar="RUN_DIR", help=what)
    p.add_argument(
        "--force",
        action="store_true",
        help="with --resume: go on although the folder was made at another commit, torch "
        "version or GPU model (recorded in env.json)",
    )


def add_run_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=path)
