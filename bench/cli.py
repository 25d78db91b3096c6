"""Command line: `ampbench COMMAND ...`, the same as `python -m bench COMMAND ...` and
`./run_bench.sh COMMAND ...`; with no command (nothing, or options only) it runs `run`.

This module only parses: each command calls one function of the module that owns the job. Bad
input ends the program with one line naming the bad value and exit status 2, before any results
folder is created or changed; Ctrl-C ends it with one line saying what was kept (exit 130).

Parsing imports no torch, pandas or matplotlib (the choices come from `bench.cases.choices`), so
`--help` answers at once; each command imports what it needs, and the commands that only read
folders (report, headline, index, history, export, check, compare) import no torch; only a
largest-batch folder's tables (`report` of one, `readme` blocks of one) still do, through
`bench.jobs.maxbatch`.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from bench.cases import choices
from bench.cases.case import REDUCTIONS
from bench.faults import Interrupted, UsageError
from bench.numerics import defaults as numerics_defaults
from bench.store import paths

if TYPE_CHECKING:
    from bench.execution import distributed
    from bench.jobs import session
    from bench.publish import compare

PROG = "ampbench"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


class _Version(argparse.Action):
    """`--version`: `ampbench X.Y.Z`, looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> NoReturn:
        print(f"{PROG} {version()}")
        parser.exit()


def version() -> str:
    """The installed package's version; from pyproject.toml when bench runs from a checkout
    that was never installed."""
    import importlib.metadata

    try:
        return importlib.metadata.version("ampbench")
    except importlib.metadata.PackageNotFoundError:
        text = (paths.ROOT / "pyproject.toml").read_text()
        found = re.search(r'^version\s*=\s*"([^"]+)"', text, flags=re.MULTILINE)
        return found.group(1) if found else "unknown"


def _path(text: str) -> Path:
    """A path as the user typed it: relative to the directory the command was run in."""
    return paths.from_user(text)


def _int(text: str, *, minimum: int, what: str = "value") -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        kind = "positive" if minimum > 0 else "non-negative"
        raise argparse.ArgumentTypeError(f"{what} must be a {kind} integer, got {text!r}")
    return value


def _positive(text: str) -> int:
    return _int(text, minimum=1)


def _nonneg(text: str) -> int:
    return _int(text, minimum=0)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    return value


def _csv(kind: str, choices: tuple[str, ...] | None = None, minimum: int = 1) -> Callable:
    """A comma-separated list of names from `choices`, or of integers >= `minimum`; an empty
    list and a repeated item are refused."""

    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"empty {kind} list {text!r}")
        if choices is None:
            values = [_int(item, minimum=minimum, what=kind) for item in items]
        else:
            for item in items:
                if item not in choices:
                    raise argparse.ArgumentTypeError(
                        f"unknown {kind} {item!r}; choose from {', '.join(choices)}"
                    )
            values = items
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            raise argparse.ArgumentTypeError(f"{kind} {repeated[0]!r} is listed twice in {text!r}")
        return values

    return parse


def _tag(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9.-]+", text):
        raise argparse.ArgumentTypeError(f"use letters, digits, '.' and '-' only, got {text!r}")
    return text


def _pair(text: str) -> compare.Pair:
    from bench.publish import compare  # scipy: only when --pair is given

    try:
        return compare.Pair.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


# Options that several commands share, spelled and explained once.


def _add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="where to run: auto (the default) is cuda when a GPU is visible, else cpu",
    )


def _add_preset(p: argparse.ArgumentParser, default: str = "seed on CUDA, tiny on CPU") -> None:
    p.add_argument("--preset", choices=choices.PRESETS, help=f"model size (default: {default})")


PUBLISHED = "the project's results/"
"""The default of --results-dir for the commands that read or write the published runs."""


def _add_results_dir(
    p: argparse.ArgumentParser,
    what: str = "parent of new folders",
    default: str = "the project's runs/, git-ignored; `promote` publishes a run",
) -> None:
    p.add_argument("--results-dir", type=_path, help=f"{what} (default: {default})")


def _add_tag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tag", type=_tag, help="appended to the new folder's name (letters, digits, '.', '-')"
    )


def _add_optimizers(p: argparse.ArgumentParser) -> None:
    """`--optimizers`, a list; `--optimizer` is the same option (one name is a list of one)."""
    p.add_argument(
        "--optimizers",
        "--optimizer",
        dest="optimizers",
        type=_csv("optimizer", choices.OPTIMIZERS),
        help=f"comma list of Adam implementations, default {','.join(choices.OPTIMIZERS)}",
    )


def _add_optimizer(p: argparse.ArgumentParser, default: str) -> None:
    """`--optimizer`, one name, for a job that trains with one Adam; `--optimizers` is accepted
    too, as in `run`, with one name."""
    p.add_argument(
        "--optimizer",
        "--optimizers",
        dest="optimizer",
        choices=choices.OPTIMIZERS,
        help=f"Adam implementation (default {default})",
    )


def _add_run(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="time every case of a grid into a new results folder (default)")
    _add_preset(r)
    r.add_argument("--input-size", type=_positive, help="override the preset's input size")
    r.add_argument("--hidden-size", type=_positive, help="override the preset's hidden size")
    r.add_argument("--num-classes", type=_positive, help="override the preset's class count")
    r.add_argument(
        "--modes",
        type=_csv("mode", choices.MODES),
        help=f"comma list, default all: {','.join(choices.MODES)} (on the CPU, those that can "
        "run there)",
    )
    _add_optimizers(r)
    r.add_argument(
        "--variants",
        type=_csv("variant", choices.VARIANTS),
        help=f"comma list of execution variants of {','.join(choices.VARIANTS)}; default "
        f"{','.join(choices.DEFAULT_VARIANTS)} on a GPU, eager on the CPU",
    )
    r.add_argument(
        "--batch-sizes",
        type=_csv("batch size"),
        help=f"comma list, default {','.join(map(str, choices.DEFAULT_BATCH_SIZES))} (per GPU)",
    )
    r.add_argument(
        "--gpus",
        type=_positive,
        help="ranks: N > 1 relaunches the run through torchrun, one process per GPU with NCCL "
        "(at most the GPUs visible); on the CPU, N gloo processes (for tests, not speed; at "
        "most the CPU cores, unless --oversubscribe). Default 1: one process",
    )
    r.add_argument(
        "--oversubscribe",
        action="store_true",
        help="with --gpus N on the CPU: start N gloo processes although N exceeds the CPU cores",
    )
    r.add_argument(
        "--parallel",
        type=_csv("parallelism", choices.PARALLELS),
        help=f"comma list of {','.join(choices.PARALLELS)}; default all with --gpus N > 1, "
        "else none",
    )
    r.add_argument(
        "--collective-timeout",
        type=_positive_float,
        default=300.0,
        help="seconds a collective may take before the case fails as `timeout` (default 300)",
    )
    _add_device(r)
    r.add_argument("--steps", type=_positive, help="timed steps per case (default 30)")
    r.add_argument("--warmup", type=_nonneg, help="untimed steps per case (default 5)")
    r.add_argument(
        "--repeats",
        type=_positive,
        help="timed windows of --steps steps per case, after one warm-up; compare weighs the "
        "spread between them (default 3)",
    )
    r.add_argument("--seed", type=_nonneg, help="seed for weights and data (default 0)")
    r.add_argument(
        "--no-overhead", action="store_true", help="skip the harness-against-bare-loop measurement"
    )
    r.add_argument(
        "--numerics",
        action="store_true",
        help="first run a short numerics study in this process into RUN/numerics/ (outside every "
        "timed region)",
    )
    _add_results_dir(r, "parent folder of run folders")
    _add_tag(r)
    r.add_argument(
        "--resume",
        type=_path,
        metavar="RUN_DIR",
        help="finish an interrupted run with its recorded grid: run only its missing cases "
        "(no other option may be given, but --force, --gpus and --oversubscribe)",
    )
    r.add_argument(
        "--force",
        action="store_true",
        help="with --resume: go on although the folder was made at another commit, torch "
        "version or GPU model (recorded in env.json)",
    )


def _add_numerics(sub: argparse._SubParsersAction) -> None:
    # Both devices' defaults: knowing which device this machine has would mean importing torch.
    gpu, cpu = numerics_defaults.PER_DEVICE["cuda"], numerics_defaults.PER_DEVICE["cpu"]

    def show(key: str) -> str:
        def text(value: object) -> str:
            return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)

        if key in numerics_defaults.COMMON:
            return text(numerics_defaults.COMMON[key])
        return f"{text(gpu[key])} on a GPU, {text(cpu[key])} on the CPU"

    n = sub.add_parser(
        "numerics",
        help="dtype audit, underflow census, histogram, convergence, the Answer",
        description="A study on a GPU, or a smoke study of tiny sizes on the CPU: where their "
        "defaults differ, both are shown.",
    )
    _add_preset(n, show("preset"))
    _add_device(n)
    n.add_argument(
        "--modes",
        type=_csv("mode", choices.MODES),
        help="convergence modes (default: every mode that can run on the device)",
    )
    n.add_argument(
        "--census-batch-sizes",
        type=_csv("batch size"),
        help=f"default {show('census_batch_sizes')}",
    )
    n.add_argument(
        "--checkpoints",
        type=_csv("checkpoint", minimum=0),
        help=f"census steps of the fp16 trajectory (default {show('checkpoints')})",
    )
    n.add_argument(
        "--histogram-batch",
        type=_positive,
        help=f"default {show('histogram_batch')} (must be a census size)",
    )
    n.add_argument(
        "--conv-batch-sizes", type=_csv("batch size"), help=f"default {show('conv_batch_sizes')}"
    )
    n.add_argument("--seeds", type=_csv("seed", minimum=0), help=f"default {show('seeds')}")
    n.add_argument(
        "--steps", type=_positive, help=f"convergence steps per run (default {show('steps')})"
    )
    n.add_argument(
        "--long-steps",
        type=_nonneg,
        help=f"one fp16-amp run this long (default {show('long_steps')})",
    )
    n.add_argument(
        "--trace-every",
        type=_nonneg,
        help=f"trace period of the convergence runs, 0 for none (default {show('trace_every')})",
    )
    n.add_argument(
        "--extended-modes",
        type=_csv("mode", choices.MODES),
        help="modes whose every convergence run goes --extended-steps (default none)",
    )
    n.add_argument(
        "--extended-steps",
        type=_nonneg,
        help="steps of the --extended-modes runs, e.g. 3000 (default 0)",
    )
    n.add_argument(
        "--eval-every",
        type=_positive,
        help=f"held-out evaluation period (default {show('eval_every')})",
    )
    n.add_argument(
        "--heldout", type=_positive, help=f"held-out samples (default {show('heldout')})"
    )
    n.add_argument("--noise", type=_positive_float, help=f"task noise (default {show('noise')})")
    _add_optimizer(n, show("optimizer"))
    n.add_argument("--lr", type=_positive_float, help=f"Adam lr (default {show('lr')})")
    n.add_argument(
        "--loss-mult",
        type=_positive_float,
        help="stress: multiply the loss (1/k as in accumulation over k; default 1)",
    )
    n.add_argument(
        "--reduction", choices=REDUCTIONS, help="stress: CrossEntropyLoss reduction (default mean)"
    )
    n.add_argument(
        "--init-scale",
        type=_positive_float,
        help="stress: multiply the initial weights (default 1)",
    )
    n.add_argument("--workers", type=_positive, help="GPUs to spread jobs over (default: all)")
    _add_results_dir(n)
    _add_tag(n)
    n.add_argument(
        "--resume",
        type=_path,
        metavar="RUN_DIR",
        help="finish an interrupted study in its folder, with its settings (only --workers and "
        "--force may be given with it)",
    )
    n.add_argument(
        "--force",
        action="store_true",
        help="with --resume: go on although the folder was made at another commit, torch "
        "version or GPU model (recorded in env.json)",
    )
    n.add_argument(
        "--add-modes",
        type=_csv("mode", choices.MODES),
        help="with --resume: add these convergence modes to the study (finished or not) and run "
        "only their jobs and their dtype audit, keeping every job it has; another commit is "
        "allowed, and recorded; --trace-every may go with it (the added jobs' trace period)",
    )


NUMERICS_OPTIONS = (
    "preset",
    "modes",
    "census_batch_sizes",
    "checkpoints",
    "histogram_batch",
    "conv_batch_sizes",
    "seeds",
    "steps",
    "long_steps",
    "trace_every",
    "extended_modes",
    "extended_steps",
    "eval_every",
    "heldout",
    "noise",
    "optimizer",
    "lr",
    "loss_mult",
    "reduction",
    "init_scale",
)
"""Numerics options that are settings of the study (`NumericsConfig` fields, and the preset)."""


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="ampbench: a benchmark harness for PyTorch mixed-precision training. "
        "With no command (nothing, or options only) it runs `run`, as `./run_bench.sh` and "
        "`python -m bench` do.",
    )
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    _add_run(sub)
    for name, text in (
        ("report", "re-render a folder's report.md (and a numerics folder's figures)"),
        ("headline", "print the README headline table of a run"),
    ):
        q = sub.add_parser(name, help=text)
        q.add_argument("run_dir", type=_path)
    c = sub.add_parser("compare", help="compare two run folders case by case (A baseline, B new)")
    c.add_argument("run_a", type=_path)
    c.add_argument("run_b", type=_path)
    c.add_argument(
        "--pair",
        type=_pair,
        metavar="AXIS=A:B",
        help="compare across one axis, e.g. optimizer=foreach:fused (A and B may be the same run)",
    )
    c.add_argument(
        "--min-effect",
        type=_fraction,
        default=0.02,
        help="smallest relative change reported as faster/slower (default 0.02)",
    )
    c.add_argument("--confidence", type=_fraction, default=0.95, help="default 0.95")
    c.add_argument(
        "--fail-on-slower", action="store_true", help="exit 1 when any case is slower (for CI)"
    )
    c.add_argument("--no-write", action="store_true", help="print only; write no file")
    _add_numerics(sub)
    m = sub.add_parser(
        "maxbatch", help="the largest batch each mode trains: doubling, then bisection"
    )
    _add_preset(m)
    _add_device(m)
    m.add_argument("--modes", type=_csv("mode", choices.MODES), help="comma list (default all)")
    m.add_argument(
        "--variants", type=_csv("variant", choices.VARIANTS), help="comma list (default eager)"
    )
    _add_optimizer(m, "fused")
    m.add_argument("--start", type=_positive, help="first batch size (default 1024; CPU 8)")
    m.add_argument("--limit", type=_positive, help="largest batch size tried (default 2**20)")
    m.add_argument(
        "--resolution",
        type=_fraction,
        help="stop bisecting when the gap is this share of the batch (default 1/16)",
    )
    m.add_argument("--steps", type=_positive, help="timed steps per trial (default 2)")
    m.add_argument("--warmup", type=_nonneg, help="untimed steps per trial (default 1)")
    _add_results_dir(m)
    _add_tag(m)
    _add_publishing(sub)
    return p


def _add_publishing(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser(
        "index", help="regenerate results/README.md, the index of run folders, from the folders"
    )
    _add_results_dir(i, "the folder to index", PUBLISHED)
    i.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 when the index is not what the run folders git tracks say",
    )
    pr = sub.add_parser(
        "promote",
        help="publish run folders: copy them from runs/ into results/ and regenerate its index",
    )
    pr.add_argument("run_dirs", type=_path, nargs="+", metavar="RUN")
    _add_results_dir(pr, "the folder to publish into", PUBLISHED)
    pr.add_argument("--move", action="store_true", help="move the folders instead of copying")
    pr.add_argument(
        "--allow-cpu",
        action="store_true",
        help="copy a CPU smoke run too (refused otherwise; the index leaves it out either way)",
    )
    h = sub.add_parser(
        "history",
        help="each case's median step time across the timing runs of one GPU model, with "
        "verdicts against the run before; writes results/history/<gpu>.md and .png",
    )
    h.add_argument("--gpu", help="GPU model as env.json names it (default: every GPU model)")
    _add_results_dir(h, "the folder of the runs", PUBLISHED)
    e = sub.add_parser("export", help="a run's timings in another tool's format")
    e.add_argument("run_dir", type=_path)
    e.add_argument(
        "--format",
        choices=choices.EXPORT_FORMATS,
        default=choices.EXPORT_FORMATS[0],
        help="github-action-benchmark (the default, and the only one so far): JSON for its "
        "customSmallerIsBetter tool",
    )
    e.add_argument("--output", type=_path, help="write to this file (default: print)")
    r = sub.add_parser(
        "readme", help="fill README.md's generated tables (<!-- ampbench:KIND RUN -->) from runs"
    )
    r.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 when a table disagrees with its run",
    )
    r.add_argument("--file", type=_path, help="the file (default README.md of the project)")
    k = sub.add_parser(
        "check",
        help="check a run against a criteria file (docs/criteria.md): one PASS/FAIL line per "
        "criterion; exit 1 when any fails",
    )
    k.add_argument("run_dir", type=_path)
    k.add_argument(
        "--criteria",
        type=_path,
        required=True,
        metavar="FILE",
        help="TOML file of [[criterion]] tables",
    )


def _given(args: argparse.Namespace, allowed: tuple[str, ...]) -> list[str]:
    """The options of `args.command` set to something other than their defaults, as flags."""
    defaults = vars(build_parser().parse_args([args.command]))
    return [
        "--" + key.replace("_", "-")
        for key, value in vars(args).items()
        if key not in (*allowed, "command", "argv") and value != defaults.get(key)
    ]


def _refuse_with_resume(args: argparse.Namespace, allowed: tuple[str, ...]) -> None:
    given = _given(args, allowed)
    if given:
        raise UsageError(f"--resume takes its settings from the folder's env.json; drop {given[0]}")


def _path_options(command: str) -> tuple[str, ...]:
    """The options of `command` whose value is a path (those parsed by `_path`)."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices.get(command)
    actions = parser._actions if parser is not None else []
    return tuple(o for a in actions if a.type is _path for o in a.option_strings)


def _command_line(argv: list[str] | None = None) -> str:
    """The command as env.json records it, so that it re-runs as written from the project root:
    the command named (`run` when it was left out), and every path option's value as
    `paths.recorded` gives it: relative to the project root where it lies inside the project (a
    path of the machine that ran it means nothing in a committed folder), absolute elsewhere.
    Options may be abbreviated (`--results`) or joined to their value (`--results-dir=x`), as
    argparse allows."""
    argv = _with_command(sys.argv[1:] if argv is None else argv)
    options = _path_options(argv[0]) if argv else ()

    def path_option(token: str) -> str | None:
        if not token.startswith("--"):
            return None
        matches = [o for o in options if o == token or o.startswith(token)]
        return matches[0] if len(matches) == 1 else None

    out: list[str] = []
    value_next = False
    for token in argv:
        if value_next:
            out.append(paths.recorded(_path(token)))
            value_next = False
            continue
        name, eq, value = token.partition("=")
        if path_option(name) and eq:
            out.append(f"{name}={paths.recorded(_path(value))}")
        else:
            out.append(token)
            value_next = path_option(token) is not None
    return shlex.join(["python", "-m", "bench", *out])


def _results_dir(args: argparse.Namespace) -> Path:
    return args.results_dir if args.results_dir is not None else paths.default_results()


def cmd_run(args: argparse.Namespace) -> int:
    from bench.execution import distributed, launch

    world = _world(args)
    if world is None:  # this process only launches the ranks
        keep = ["--collective-timeout", str(args.collective_timeout)]
        return launch.launch(args.gpus, args.argv, keep=keep)
    try:
        run_dir, code = _run_session(args, world)
    except distributed.GroupBroken as exc:
        # The group cannot go on; the launcher records the case and resumes. No cleanup: a
        # communicator stuck in a collective could hang it.
        print(f"ampbench: rank {world.rank}: {exc}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(3)
    if world.leader:
        print(run_dir)
    return code


def _world(args: argparse.Namespace) -> distributed.World | None:
    """This process's place in the run: None when it must launch the ranks through torchrun
    (`--gpus N` outside torchrun), one rank under torchrun, or a one-process world. Before it
    launches ranks it refuses more than the machine holds and a grid of which nothing can run."""
    from bench.execution import distributed, launch
    from bench.measure import env
    from bench.store import results

    gpus = args.gpus or 1
    # A resumed run's ranks run on the device the folder was made on: a relaunch after a broken
    # group carries only --resume, and `auto` would pick CUDA for a CPU (gloo) run on a GPU box.
    device = env.device(args.device)
    if getattr(args, "resume", None) is not None:
        # A folder that is not one is named by the resume itself, below.
        with contextlib.suppress(results.CorruptFolder):
            device = results.read_env(args.resume).get("device", device)
    if distributed.under_torchrun():
        size = int(os.environ["WORLD_SIZE"])
        if args.gpus is not None and args.gpus != size:
            raise UsageError(f"--gpus {args.gpus} but torchrun started {size} ranks")
        return distributed.init(device, args.collective_timeout)
    if gpus > 1:
        launch.check_ranks(gpus, device, oversubscribe=args.oversubscribe)
        if args.numerics:
            raise UsageError("--numerics runs in a one-process run; drop it or --gpus")
        if args.resume is None:
            _run_config(args, device, gpus)
        return None
    return distributed.World.single(device)


def _run_session(args: argparse.Namespace, world: distributed.World) -> tuple[Path, int]:
    from bench.jobs import session

    if args.resume is not None:
        _refuse_with_resume(
            args, ("resume", "force", "gpus", "oversubscribe", "collective_timeout")
        )
        return session.resume(args.resume, force=args.force, world=world)
    cfg = _run_config(args, world.device, world.size)
    return session.start(
        cfg,
        results_dir=_results_dir(args),
        command=_command_line(args.argv),
        tag=args.tag,
        world=world,
    )


def _run_config(args: argparse.Namespace, device: str, world_size: int) -> session.RunConfig:
    """The grid of a new run, checked: bad values and a grid of which no case can run here are
    refused (exit 2) before any folder exists, or any rank is started."""
    from bench.jobs import session

    if args.force:
        raise UsageError("--force goes with --resume")
    try:
        return session.RunConfig.build(
            device=device,
            preset=args.preset,
            input_size=args.input_size,
            hidden_size=args.hidden_size,
            num_classes=args.num_classes,
            modes=args.modes,
            optimizers=args.optimizers,
            variants=args.variants,
            parallels=args.parallel,
            batch_sizes=args.batch_sizes,
            steps=args.steps,
            warmup=args.warmup,
            repeats=args.repeats,
            seed=args.seed,
            overhead=not args.no_overhead,
            numerics=args.numerics,
            world_size=world_size,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def cmd_numerics(args: argparse.Namespace) -> int:
    from bench.measure import env
    from bench.numerics import config, study

    if args.resume is not None:
        added = tuple(args.add_modes or ())
        # With --add-modes, --trace-every may set the added jobs' trace period (a study older
        # than the traces recorded 0).
        extra = ("add_modes", "trace_every") if added else ("add_modes",)
        _refuse_with_resume(args, ("resume", "force", "workers", *extra))
        print(
            study.resume(
                args.resume,
                workers=args.workers,
                force=args.force,
                add_modes=added,
                trace_every=args.trace_every if added else None,
            )
        )
        return 0
    if args.force:
        raise UsageError("--force goes with --resume")
    if args.add_modes:
        raise UsageError("--add-modes goes with --resume")
    options = {k: getattr(args, k) for k in NUMERICS_OPTIONS if getattr(args, k) is not None}
    try:
        cfg = config.NumericsConfig.build(
            device=env.device(args.device), options=options, workers=args.workers
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    command = _command_line(args.argv)
    print(study.start(cfg, results_dir=_results_dir(args), command=command, tag=args.tag))
    return 0


def cmd_maxbatch(args: argparse.Namespace) -> int:
    from bench.jobs import maxbatch
    from bench.measure import env

    device = env.device(args.device)
    keys = ("modes", "variants", "optimizer", "start", "limit", "resolution", "steps", "warmup")
    given = {
        key: tuple(value) if isinstance(value, list) else value
        for key in keys
        if (value := getattr(args, key)) is not None
    }
    if device == "cpu":
        given.setdefault("start", 8)
        given.setdefault("limit", 4096)
    try:
        cfg = maxbatch.MaxBatchConfig(
            device=device,
            preset=args.preset or ("seed" if device == "cuda" else "tiny"),
            **given,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    print(
        maxbatch.start(
            cfg, results_dir=_results_dir(args), command=_command_line(args.argv), tag=args.tag
        )
    )
    return 0


def _run_folder(path: Path, *, rows: bool = True) -> Path:
    """A timing run's folder, checked: one line names what is wrong with it. `rows`: it must
    hold at least one whole row (`report` and `headline` alike: neither has anything to show
    without one)."""
    from bench.store import results

    if not (path / results.ROWS).is_file() or not (path / results.ENV).is_file():
        raise UsageError(f"{path} is not a run folder (no {results.ROWS} and {results.ENV})")
    results.read_env(path)  # a corrupt env.json is named here, in one line
    if rows and not results.read_jsonl(path / results.ROWS):  # a partial last line is no row
        raise UsageError(f"{path} has no rows yet ({results.ROWS} holds no whole row)")
    return path


def cmd_report(args: argparse.Namespace) -> int:
    from bench.numerics import study
    from bench.publish import report
    from bench.store import results

    try:
        if study.is_study(args.run_dir):
            print(study.render(_writable(args.run_dir)))
        elif "maxbatch_config" in results.read_env(args.run_dir):
            from bench.publish import maxbatch as maxbatch_report

            print(maxbatch_report.render(_writable(args.run_dir)))
        else:
            report.write(_writable(_run_folder(args.run_dir)))
            print(args.run_dir / results.REPORT)
    except OSError as exc:  # a read-only file in a writable folder
        raise _os_error(exc) from exc
    return 0


def cmd_headline(args: argparse.Namespace) -> int:
    from bench.publish import report
    from bench.store import results

    df = results.load(_run_folder(args.run_dir))
    table = report.headline(df)
    if table == "(no successful cases)":
        optimizer = report.headline_optimizer(df)
        raise UsageError(f"{args.run_dir}: no eager {optimizer}-Adam case passed; no headline")
    print(table)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from bench.publish import compare
    from bench.store import results

    run_a, run_b = _run_folder(args.run_a), _run_folder(args.run_b)
    if args.pair is None and compare.same_folder(run_a, run_b):
        print(f"A and B are the same folder ({run_a}): nothing to compare")
        return 0
    table = compare.compare(
        run_a, run_b, pair=args.pair, min_effect=args.min_effect, confidence=args.confidence
    )
    if table.empty:  # nothing in common: a mistake in the folders or the --pair
        raise UsageError(f"no case of {run_a} matches a case of {run_b}")
    warnings = compare.env_differences(results.read_env(run_a), results.read_env(run_b))
    for line in warnings:
        print(f"ampbench: warning: environments differ: {line}", file=sys.stderr)
    text = compare.render(
        table,
        run_a=run_a,
        run_b=run_b,
        pair=args.pair,
        min_effect=args.min_effect,
        confidence=args.confidence,
        warnings=warnings,
    )
    print(text)
    if not args.no_write:
        path = compare.output_path(run_a, run_b, args.pair)
        _write(path, text)
        print(f"ampbench: wrote {path}", file=sys.stderr)
    slower = int((table["verdict"] == "slower").sum())
    return 1 if args.fail_on_slower and slower else 0


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path} ({exc.strerror})") from exc


def _writable(folder: Path) -> Path:
    """A folder a command is about to write in, checked before it writes anything there."""
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{folder} is not writable")
    return folder


def _os_error(exc: OSError) -> UsageError:
    """A file a command could not read or write, in one line that names it."""
    return UsageError(f"{exc.filename or exc}: {exc.strerror or 'not usable'}")


def cmd_index(args: argparse.Namespace) -> int:
    from bench.publish import index

    folder = args.results_dir or paths.RESULTS
    if not folder.is_dir():
        raise UsageError(f"--results-dir {folder} is not a directory")
    if args.check:
        stale = index.check(folder)
        fresh = "the index is what the run folders git tracks say"
        print(f"ampbench: {stale or fresh}", file=sys.stderr)
        return 1 if stale else 0
    try:
        print(index.write(_writable(folder)))
    except OSError as exc:  # a read-only README.md in a writable folder
        raise _os_error(exc) from exc
    return 0


def cmd_promote(args: argparse.Namespace) -> int:
    from bench.publish import promote

    published = promote.promote(
        args.run_dirs,
        results_dir=args.results_dir or paths.RESULTS,
        move=args.move,
        allow_cpu=args.allow_cpu,
    )
    for path in published:
        print(path)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from bench.publish import history

    folder = args.results_dir or paths.RESULTS
    if not folder.is_dir():
        raise UsageError(f"--results-dir {folder} is not a directory")
    try:
        written = history.write(folder, args.gpu)
    except OSError as exc:  # a read-only file under history/
        raise _os_error(exc) from exc
    for path in written:
        print(path)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bench.publish import export

    run_dir = _run_folder(args.run_dir)
    try:
        text = export.export(run_dir, args.format)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.output is None:
        print(text, end="")
    else:
        _write(args.output, text)
        print(f"ampbench: wrote {args.output}", file=sys.stderr)
    return 0


def cmd_readme(args: argparse.Namespace) -> int:
    from bench.publish import readme

    path = args.file or paths.ROOT / "README.md"
    if not path.is_file():
        raise UsageError(f"--file {path}: no such file")
    changed = readme.update(path, check=args.check)
    verb = "disagrees with its run" if args.check else "regenerated"
    for block in changed:
        print(f"ampbench: {block.label}: {verb}", file=sys.stderr)
    if not changed:
        print(
            f"ampbench: {path.name} and docs/: every generated table matches its run",
            file=sys.stderr,
        )
    return 1 if args.check and changed else 0


def cmd_check(args: argparse.Namespace) -> int:
    from bench.publish import criteria

    run_dir = _run_folder(args.run_dir)
    try:
        checked = criteria.check_folder(run_dir, args.criteria)
    except criteria.CriteriaError as exc:  # the file or one of its expressions
        raise UsageError(str(exc)) from exc
    print(checked.render())
    return 1 if checked.failed else 0


COMMANDS = {
    "run": cmd_run,
    "report": cmd_report,
    "headline": cmd_headline,
    "compare": cmd_compare,
    "numerics": cmd_numerics,
    "maxbatch": cmd_maxbatch,
    "index": cmd_index,
    "promote": cmd_promote,
    "history": cmd_history,
    "export": cmd_export,
    "readme": cmd_readme,
    "check": cmd_check,
}


def _with_command(argv: list[str]) -> list[str]:
    """`argv` with its command: `run` when none is given (no argument, or options first), as
    `./run_bench.sh` does. `--help` and `--version` alone stay the program's own."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        return ["run", *argv]
    return list(argv)


def main(argv: list[str] | None = None) -> int:
    """`ampbench ARGV`: the exit status (0; 1 when a run or check found a failure; 2 for bad
    input; 130 when interrupted)."""
    try:
        argv = _with_command(sys.argv[1:] if argv is None else argv)
        args = build_parser().parse_args(argv)
        args.argv = argv  # what a relaunch repeats
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"ampbench: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"ampbench: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("ampbench: interrupted; every finished part is kept in its folder", file=sys.stderr)
        return 130


def run() -> NoReturn:
    """The `ampbench` console script."""
    sys.exit(main())
