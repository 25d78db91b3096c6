"""Command line: `python -m bench run|report|headline|compare ...`.

Bad input ends the program with one line naming the bad value and exit status 2, before any
results folder is created.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import NoReturn

import torch

from bench import ceilings, compare, env, report, results
from bench.case import OPTIMIZERS, Case, grid
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
    return p


def _pair(text: str) -> compare.Pair:
    try:
        return compare.Pair.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


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
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda was asked for, but torch.cuda.is_available() is False")
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
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


def cmd_run(args: argparse.Namespace) -> int:
    now = lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")  # noqa: E731
    if args.resume is not None:
        given = [o for o in GRID_OPTIONS if getattr(args, o) is not None]
        if given:
            raise UsageError(f"--resume takes its grid from the run's env.json; drop --{given[0]}")
        if not (args.resume / results.ENV).is_file():
            raise UsageError(f"--resume {args.resume}: no {results.ENV} there")
        run_dir = args.resume
        info = results.read_env(run_dir)
        cfg = info["config"]
        if cfg["device"] == "cuda" and not torch.cuda.is_available():
            raise UsageError(f"--resume {run_dir} is a CUDA run, but no GPU is available here")
        cases = _cases(cfg)
        info.setdefault("resumed", []).append({"at": now(), "argv": sys.argv})
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


def _existing_run(path: Path) -> Path:
    if not (path / results.ROWS).is_file() or not (path / results.ENV).is_file():
        raise UsageError(f"{path} is not a run folder (no {results.ROWS} and {results.ENV})")
    return path


def cmd_report(args: argparse.Namespace) -> int:
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


COMMANDS = {"run": cmd_run, "report": cmd_report, "headline": cmd_headline, "compare": cmd_compare}


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"ampbench: error: {exc}", file=sys.stderr)
        return 2
