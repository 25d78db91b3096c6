"""One home for verdicts: measuring keeps sample statistics only, the rounds judge lives in
`bench.verdicts`, and planning a case (`bench.execution.variants`) imports no pandas."""

import ast
from pathlib import Path

from bench.measure import stats

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_measuring_keeps_no_verdict():
    for name in ("rounds_verdict", "holm", "family_verdicts", "rounds_needed", "MIN_EFFECT"):
        assert not hasattr(stats, name), name


def _top_level_imports(module: str) -> set[str]:
    """What importing `module` imports at once: its statements outside any function (a function's
    own import waits for its call), and those of the packages above it."""
    parts = module.split(".")
    found = set()
    for i in range(1, len(parts) + 1):
        path = BENCH.parent.joinpath(*parts[:i])
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        tree = ast.parse(path.read_text())
        deferred = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(f)
        }
        for node in ast.walk(tree):
            if id(node) in deferred:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_planning_a_case_imports_no_pandas():
    seen, todo = set(), ["bench.execution.variants"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = BENCH.parent.joinpath(*module.split("."))
        if not (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()):
            continue  # a name imported from a module, not a module
        for name in _top_level_imports(module):
            assert name.split(".")[0] != "pandas", f"{module} imports {name}"
            if name.startswith("bench."):
                todo.append(name)
    assert "bench.plan.float8_plan" in seen and "bench.verdicts.timing" not in seen
