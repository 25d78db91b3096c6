"""Follow one run's config through the code: a tiny CPU `ampbench run`, every call between two
of ampbench's modules recorded (sys.setprofile), and the walk summed up per package.

Writes (to stdout): the packages in the order the run first enters them, the distinct modules and
call edges, each call edge that goes *up* the layers (a callee in a package above its caller's, in
tests/test_layout.py's ORDER): a callback, or code below a job climbing back up to it; and the
config's own walk: the calls that are handed the run's config or what it expands into (a
`RunConfig`, `Case` or `Plan` among their arguments), in order, a *stay* being a run of such calls
in one module, with the rooms (modules) and the modules most often entered. Usage: `python
scripts/config_walk.py [RESULTS_DIR]` from the repository root."""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cli.main import main  # noqa: E402
from tests.test_layout import ORDER  # noqa: E402

BENCH = str(ROOT / "bench")
ARGV = ["run", "--device", "cpu", "--modes", "fp32,fp16-amp", "--batch-sizes", "4"]
ARGV += ["--optimizers", "fused", "--steps", "2", "--warmup", "0", "--no-overhead"]
CARRIERS = {"RunConfig", "Case", "Plan"}
"""What the config is, stage by stage, by class name (the same names before and after a move)."""


def module_of(filename: str) -> str | None:
    if not filename.startswith(BENCH):
        return None
    parts = Path(filename).relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def rank(module: str) -> int:
    package = package_of(module)
    return ORDER.index(package) if package in ORDER else -1


def carries_config(frame) -> bool:
    """Whether the call's arguments hold the config or what it expands into."""
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    return any(type(frame.f_locals.get(n)).__name__ in CARRIERS for n in names)


def walk(results_dir: Path) -> tuple[list[str], set[tuple[str, str]], list[str], int]:
    stack: list[str | None] = []
    edges: set[tuple[str, str]] = set()
    entered: list[str] = []
    config_calls: list[str] = []

    def profile(frame, event, _arg) -> None:
        if event == "call":
            callee = module_of(frame.f_code.co_filename)
            caller = next((m for m in reversed(stack) if m is not None), None)
            if callee is not None:
                if caller is not None and caller != callee:
                    edges.add((caller, callee))
                if package_of(callee) not in entered:
                    entered.append(package_of(callee))
                if carries_config(frame):
                    config_calls.append(callee)
            stack.append(callee)
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        code = main([*ARGV, "--results-dir", str(results_dir)])
    finally:
        sys.setprofile(None)
    return entered, edges, config_calls, code


def stays(calls: list[str]) -> list[str]:
    """The config's walk as stays: consecutive calls in one module are one stay."""
    return [m for i, m in enumerate(calls) if i == 0 or calls[i - 1] != m]


def main_() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        results_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tmp)
        entered, edges, config_calls, code = walk(results_dir)
    modules = {m for edge in edges for m in edge}
    up = sorted((a, b) for a, b in edges if rank(b) > rank(a) and package_of(a) != package_of(b))
    into_jobs = [(a, b) for a, b in up if package_of(b) == "jobs"]
    print(f"command: ampbench {' '.join(ARGV)} (exit {code})")
    print(f"packages in the order first entered: {' -> '.join(p or 'bench' for p in entered)}")
    print(f"modules visited: {len(modules)}; distinct call edges between modules: {len(edges)}")
    print(f"calls up the layers: {len(up)}; of them into jobs/ from below: {len(into_jobs)}")
    for a, b in up:
        print(f"  up: {a} -> {b}")
    walked = stays(config_calls)
    print(
        f"the config's walk: {len(config_calls)} calls handed it, {len(walked)} stays in "
        f"{len(set(walked))} rooms (modules)"
    )
    for module, count in collections.Counter(walked).most_common(8):
        print(f"  entered {count} times: {module}")
    return code


if __name__ == "__main__":
    sys.exit(main_())
