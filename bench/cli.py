"""Command line: `python -m bench run|report|headline|compare ...`.

Bad input ends the program with one line naming the bad value and exit status 2, before any
results folder is created.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import NoReturn

import torch

from bench import ceilings, compare, env, numerics, report, results
from bench.case import OPTIMIZERS, REDUCTIONS, Case, grid
from bench.model import PRESETS, ModelSize
from bench.modes import MODES
from bench.runner import measure_overhead, run_suite

DEFAULT_BATCH_SIZES = (256, 1024, 4096)
CEILING_SIZES = {
    "cuda": {"matmul_n": 8192, "copy_mib": 1024},
    "cpu": {"matmul_n": 256, "copy_mib": 16},
}
"""Ceiling problem sizes: on the GPU large enough to fill the chip and spill the L2 many times."""


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


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


def _csv(kind: str, choices: tuple[str, ...] | None = None):
    """A comma-separated list of names from `choices`, or of positive integers."""

    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"empty {kind} list {text!r}")
        if choices is None:
            return [_int(item, minimum=1, what=kind) for item in items]
        for item in items:
            if item not in choices:
                raise argparse.ArgumentTypeError(
                    f"unknown {kind} {item!r}; choose from {', '.join(choices)}"
                )
        return items

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m bench", description="ampbench: mixed-precision training benchmark")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="time every case of a grid into a new results folder")
    r.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="model size (default: seed on CUDA, tiny on the CPU)",
    )
    r.add_argument("--input-size", type=_positive, help="override the preset's input size")
    r.add_argument("--hidden-size", type=_positive, help="override the preset's hidden size")
    r.add_argument("--num-classes", type=_positive, help="override the preset's class count")
    r.add_argument(
        "--modes",
        type=_csv("mode", tuple(MODES)),
        help=f"comma list, default all: {','.join(MODES)}",
    )
    r.add_argument(
        "--optimizers",
        type=_csv("optimizer", OPTIMIZERS),
        help="comma list of Adam implementations, default foreach,fused",
    )
    r.add_argument(
        "--batch-sizes", type=_csv("batch size"), help="comma list, default 256,1024,4096"
    )
    r.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    r.add_argument("--steps", type=_positive, help="timed steps per case (default 30)")
    r.add_argument("--warmup", type=_nonneg, help="untimed steps per case (default 5)")
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
    r.add_argument(
        "--results-dir",
        type=Path,
        default=Path("results"),
        help="parent folder of run folders (default results/)",
    )
    r.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="finish an interrupted run: run only its missing cases",
    )

    for name, text in (
        ("report", "re-render report.md and results.csv of a run"),
        ("headline", "print the README headline table of a run"),
    ):
        q = sub.add_parser(name, help=text)
        q.add_argument("run_dir", type=Path)
    c = sub.add_parser("compare", help="compare two run folders case by case (A baseline, B new)")
    c.add_argument("run_a", type=Path)
    c.add_argument("run_b", type=Path)
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

    n = sub.add_parser("numerics", help="dtype audit, underflow census, histogram, convergence")
    n.add_argument("--preset", choices=sorted(PRESETS), help="default: seed on CUDA, tiny on CPU")
    n.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    n.add_argument("--modes", type=_csv("mode", tuple(MODES)), help="convergence modes (all)")
    n.add_argument(
        "--census-batch-sizes", type=_csv("batch size"), help="default 64,256,1024,4096,8192"
    )
    n.add_argument(
        "--checkpoints",
        type=_nonneg_csv,
        help="census steps of the fp16 trajectory (default 0,200,1000)",
    )
    n.add_argument("--histogram-batch", type=_positive, help="default 1024 (must be a census size)")
    n.add_argument("--conv-batch-sizes", type=_csv("batch size"), help="default 1024,8192")
    n.add_argument("--seeds", type=_nonneg_csv, help="default 0,1")
    n.add_argument("--steps", type=_positive, help="convergence steps per run (default 1000)")
    n.add_argument("--long-steps", type=_nonneg, help="one fp16-amp run this long (default 2500)")
    n.add_argument("--eval-every", type=_positive, help="held-out evaluation period (default 100)")
    n.add_argument("--heldout", type=_positive, help="held-out samples (default 8192)")
    n.add_argument("--noise", type=_positive_float, default=2.0, help="task noise (default 2)")
    n.add_argument("--optimizer", choices=OPTIMIZERS, default="fused")
    n.add_argument("--lr", type=_positive_float, default=1e-3, help="Adam lr (default 1e-3)")
    n.add_argument(
        "--loss-mult",
        type=_positive_float,
        default=1.0,
        help="stress: multiply the loss (1/k as in accumulation over k)",
    )
    n.add_argument(
        "--reduction", choices=REDUCTIONS, default="mean", help="stress: CrossEntropyLoss reduction"
    )
    n.add_argument(
        "--init-scale",
        type=_positive_float,
        default=1.0,
        help="stress: multiply the initial weights",
    )
    n.add_argument("--workers", type=_positive, help="GPUs to spread jobs over (default: all)")
    n.add_argument("--results-dir", type=Path, default=Path("results"))
    n.add_argument("--tag", type=_tag, help="appended to the folder name")
    n.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="finish an interrupted study in its folder, with its settings (only --workers may "
        "be given with it)",
    )
    return p


def _tag(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9.-]+", text):
        raise argparse.ArgumentTypeError(f"use letters, digits, '.' and '-' only, got {text!r}")
    return text


def _pair(text: str) -> compare.Pair:
    try:
        return compare.Pair.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _nonneg_csv(text: str) -> list[int]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"empty list {text!r}")
    return [_int(item, minimum=0, what="checkpoint") for item in items]


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    return value


GRID_OPTIONS = (
    "preset",
    "input_size",
    "hidden_size",
    "num_classes",
    "modes",
    "optimizers",
    "batch_sizes",
    "steps",
    "warmup",
    "seed",
)


def _config(args: argparse.Namespace) -> dict:
    """The run's grid, from the flags and the defaults; stored in env.json for --resume."""
    device = _device(args.device)
    preset = args.preset or ("seed" if device == "cuda" else "tiny")
    size = PRESETS[preset]
    return {
        "device": device,
        "preset": preset,
        "input_size": args.input_size or size.input_size,
        "hidden_size": args.hidden_size or size.hidden_size,
        "num_classes": args.num_classes or size.num_classes,
        "modes": args.modes or list(MODES),
        "optimizers": args.optimizers or list(OPTIMIZERS),
        "batch_sizes": args.batch_sizes or list(DEFAULT_BATCH_SIZES),
        "steps": args.steps or 30,
        "warmup": 5 if args.warmup is None else args.warmup,
        "seed": args.seed or 0,
        "overhead": not args.no_overhead,
        "numerics": args.numerics,
    }


def _cases(cfg: dict) -> list[Case]:
    size = ModelSize(
        input_size=cfg["input_size"], hidden_size=cfg["hidden_size"], num_classes=cfg["num_classes"]
    )
    try:
        return grid(
            modes=cfg["modes"],
            optimizers=cfg["optimizers"],
            batch_sizes=cfg["batch_sizes"],
            size=size,
            device=cfg["device"],
            seed=cfg["seed"],
            warmup=cfg["warmup"],
            steps=cfg["steps"],
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _overhead_case(cases: list[Case]) -> Case:
    """The case the issue sets the overhead target on when present: bf16-amp, fused Adam, the
    largest batch size; otherwise the first case at the largest batch size."""
    largest = max(c.batch_size for c in cases)
    at_largest = [c for c in cases if c.batch_size == largest]
    preferred = [c for c in at_largest if c.mode == "bf16-amp" and c.optimizer == "fused"]
    return (preferred or at_largest)[0]


def _reopen(run_dir: Path, given: list[str], settings: str) -> dict:
    """The env.json of a folder to resume, with this resumption recorded in it (not yet written):
    bad input ends here, before anything in the folder changes."""
    if given:
        flag = given[0].replace("_", "-")
        raise UsageError(f"--resume takes {settings} from the run's env.json; drop --{flag}")
    if not (run_dir / results.ENV).is_file():
        raise UsageError(f"--resume {run_dir}: no {results.ENV} there")
    info = results.read_env(run_dir)
    if info["device"] == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"--resume {run_dir} is a CUDA run, but no GPU is available here")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    info.setdefault("resumed", []).append({"at": now, "argv": sys.argv})
    return info


def cmd_run(args: argparse.Namespace) -> int:
    now = lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")  # noqa: E731
    if args.resume is not None:
        given = [o for o in GRID_OPTIONS if getattr(args, o) is not None]
        run_dir = args.resume
        info = _reopen(run_dir, given, "its grid")
        cfg = info["config"]
        cases = _cases(cfg)
    else:
        cfg = _config(args)
        cases = _cases(cfg)  # validated before any folder exists
        info = env.collect(cfg["device"])
        info["started"] = now()
        info["command"] = shlex.join(["python", "-m", "bench", *sys.argv[1:]])
        info["config"] = cfg
        name = results.run_dir_name(datetime.now(timezone.utc), info["gpu"], info["commit"])
        run_dir = results.new_run_dir(args.results_dir, name)
        info["run_name"] = run_dir.name
        print(f"ampbench: run folder {run_dir}", file=sys.stderr)
        if cfg["device"] == "cpu":
            print(
                "ampbench: no GPU, so this is a CPU smoke run: its figures say nothing about GPU "
                "speed",
                file=sys.stderr,
            )
        results.write_env(run_dir, info)

    if "ceilings" not in info:
        print("ampbench: measuring ceilings (matmul per dtype, copy bandwidth)", file=sys.stderr)
        info["ceilings"] = ceilings.measure(cfg["device"], **CEILING_SIZES[cfg["device"]])
        results.write_env(run_dir, info)

    if cfg.get("numerics") and not (run_dir / NUMERICS_DIR / "summary.csv").is_file():
        _short_numerics(cfg, cases, run_dir / NUMERICS_DIR, info)
    run_suite(cases, run_dir, info["ceilings"])
    if cfg["overhead"] and "overhead" not in info:
        case = _overhead_case(cases)
        print(f"ampbench: harness overhead against a bare loop on {case.case_id}", file=sys.stderr)
        try:
            info["overhead"] = measure_overhead(case)
        except Exception as exc:  # recorded, not fatal: the cases are already safe on disk
            info["overhead"] = {"case_id": case.case_id, "error": f"{type(exc).__name__}: {exc}"}
    info["ended"] = now()
    results.write_env(run_dir, info)
    df = report.write(run_dir)
    print(report.headline(df), file=sys.stderr)
    print(f"ampbench: wrote {run_dir / results.REPORT}", file=sys.stderr)
    print(run_dir)
    return 0


NUMERICS_DIR = "numerics"
"""Where `run --numerics` puts its short study, inside the run folder."""


def _short_numerics(cfg: dict, cases: list[Case], folder: Path, info: dict) -> None:
    """The short numerics study, before the timed cases (it resumes if it was interrupted)."""
    ncfg = numerics.short_config(
        device=cfg["device"],
        size=cases[0].size,
        modes=cfg["modes"],
        batch_sizes=cfg["batch_sizes"],
        optimizer="fused" if "fused" in cfg["optimizers"] else cfg["optimizers"][0],
    )
    folder.mkdir(exist_ok=True)
    sub = {
        **info,
        "run_name": f"{info['run_name']}/{NUMERICS_DIR}",
        "numerics_config": ncfg.record(),
    }
    sub.pop("ceilings", None)
    results.write_env(folder, sub)
    print(f"ampbench: short numerics study into {folder}", file=sys.stderr)
    _finish_numerics(ncfg, folder, sub)


def _device(requested: str) -> str:
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda was asked for, but torch.cuda.is_available() is False")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def cmd_numerics(args: argparse.Namespace) -> int:
    if args.resume is not None:
        return _resume_numerics(args)
    device = _device(args.device)
    cuda = device == "cuda"
    size = PRESETS[args.preset or ("seed" if cuda else "tiny")]
    census_sizes = tuple(
        args.census_batch_sizes or ((64, 256, 1024, 4096, 8192) if cuda else (8, 32))
    )
    hist = args.histogram_batch or (1024 if cuda else census_sizes[-1])
    if hist not in census_sizes:
        raise UsageError(f"--histogram-batch {hist} is not one of the census batch sizes")
    steps = args.steps or (1000 if cuda else 40)
    cfg = numerics.NumericsConfig(
        device=device,
        size=size,
        modes=tuple(args.modes or MODES),
        census_batch_sizes=census_sizes,
        checkpoints=tuple(sorted(set(args.checkpoints or ((0, 200, 1000) if cuda else (0, 10))))),
        histogram_batch=hist,
        conv_batch_sizes=tuple(args.conv_batch_sizes or ((1024, 8192) if cuda else (16, 32))),
        seeds=tuple(args.seeds or (0, 1)),
        steps=steps,
        long_steps=args.long_steps if args.long_steps is not None else (2500 if cuda else 60),
        eval_every=args.eval_every or (100 if cuda else 10),
        heldout=args.heldout or (8192 if cuda else 256),
        noise=args.noise,
        optimizer=args.optimizer,
        lr=args.lr,
        loss_mult=args.loss_mult,
        reduction=args.reduction,
        init_scale=args.init_scale,
        workers=_workers(args, device),
    )
    if cfg.steps % cfg.eval_every:
        raise UsageError(f"--steps {cfg.steps} is not a multiple of --eval-every {cfg.eval_every}")
    try:
        cfg.jobs()  # validates every case before a folder exists
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    info = env.collect(device)
    info["started"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    info["command"] = shlex.join(["python", "-m", "bench", *sys.argv[1:]])
    info["numerics_config"] = cfg.record()
    name = results.run_dir_name(datetime.now(timezone.utc), info["gpu"], info["commit"])
    run_dir = results.new_run_dir(
        args.results_dir, name + "_numerics" + (f"_{args.tag}" if args.tag else "")
    )
    info["run_name"] = run_dir.name
    results.write_env(run_dir, info)
    print(f"ampbench: numerics folder {run_dir}", file=sys.stderr)
    _finish_numerics(cfg, run_dir, info)
    print(run_dir)
    return 0


def _workers(args: argparse.Namespace, device: str) -> int:
    if device != "cuda":
        return 1
    workers = args.workers or max(1, numerics.gpu_count())
    if workers > numerics.gpu_count():
        raise UsageError(f"--workers {workers}: only {numerics.gpu_count()} GPU(s) visible")
    return workers


RESUME_KEEPS = ("commit", "dirty", "torch", "gpu")
"""What must match between the machine that started a study and the one that finishes it."""


def _resume_numerics(args: argparse.Namespace) -> int:
    run_dir = args.resume
    defaults = vars(build_parser().parse_args(["numerics"]))
    given = [
        k for k, v in defaults.items() if k not in ("resume", "workers") and vars(args)[k] != v
    ]
    info = _reopen(run_dir, given, "the study's settings")
    if "numerics_config" not in info:
        raise UsageError(f"--resume {run_dir}: not a numerics folder (no numerics_config)")
    if "ended" in info:
        raise UsageError(f"--resume {run_dir}: the study is complete; `report` re-renders it")
    here = env.collect(info["device"])
    for key in RESUME_KEEPS:
        if here[key] != info[key]:
            raise UsageError(
                f"--resume {run_dir}: its {key} is {info[key]!r}, this machine's is {here[key]!r}"
            )
    cfg = numerics.NumericsConfig.from_record(
        info["numerics_config"], workers=_workers(args, info["device"])
    )
    results.write_env(run_dir, info)
    print(f"ampbench: resuming {run_dir}", file=sys.stderr)
    _finish_numerics(cfg, run_dir, info)
    print(run_dir)
    return 0


def _finish_numerics(cfg: numerics.NumericsConfig, run_dir: Path, info: dict) -> None:
    """Run the study (or what is left of it), then mark it ended and render its report."""
    numerics.run(cfg, run_dir)
    info["ended"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    results.write_env(run_dir, info)
    numerics.render(run_dir, info)


def _existing_run(path: Path) -> Path:
    if not (path / results.ROWS).is_file() or not (path / results.ENV).is_file():
        raise UsageError(f"{path} is not a run folder (no {results.ROWS} and {results.ENV})")
    return path


def cmd_report(args: argparse.Namespace) -> int:
    if (args.run_dir / "audit.json").is_file():  # a numerics folder: figures and report
        numerics.render(args.run_dir, results.read_env(args.run_dir))
    else:
        report.write(_existing_run(args.run_dir))
    print(args.run_dir / results.REPORT)
    return 0


def cmd_headline(args: argparse.Namespace) -> int:
    print(report.headline(results.load(_existing_run(args.run_dir))))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    run_a, run_b = _existing_run(args.run_a), _existing_run(args.run_b)
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
        path.write_text(text)
        print(f"ampbench: wrote {path}", file=sys.stderr)
    slower = int((table["verdict"] == "slower").sum())
    return 1 if args.fail_on_slower and slower else 0


COMMANDS = {
    "run": cmd_run,
    "report": cmd_report,
    "headline": cmd_headline,
    "compare": cmd_compare,
    "numerics": cmd_numerics,
}


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"ampbench: error: {exc}", file=sys.stderr)
        return 2
