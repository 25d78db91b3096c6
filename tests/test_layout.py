"""The layout the architecture doc promises (docs/architecture.md): packages by role that import
only downwards, no import circles, modules small enough to read top to bottom.

Every rule reads every import statement of a module: inside a function or under `if
TYPE_CHECKING:` as well as at its top. An import deferred into a function is still a dependency
(it runs whenever the function does), and a circle through one is still a circle: deferring it
only hides it from Python."""

import ast
import re
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
ARCHITECTURE = BENCH.parent / "docs" / "architecture.md"

ORDER = [
    "faults",
    "outcome",
    "quiet",
    "ground",
    "text",
    "cases",
    "store",
    "data",
    "workloads",
    "modes",
    "plan",
    "verdicts",
    "execution",
    "measure",
    "lifecycle",
    "numerics",
    "quality",
    "ownloop",
    "jobs",
    "publish",
    "commands",
    "cli",
]
"""The floors from the bottom up: a module may import its own package and those before it, and
every import runs down (no exceptions: a needed one means a module is on the wrong floor). The
ground floor (`ground`) holds the torch-free tables every floor reads (modes, optimizers,
workloads, variants, parallelisms) and `text` the table and figure helpers publishing and the
numerics study share; above them the case, the store, the workloads, the modes' torch side, then
the plan and the step (`plan`). `verdicts`, each rule that turns measurements into a claim, sits
below the case-level checks (`execution`, `measure`) and publishing, which all ask it
(`VERDICTS_IMPORT`). `lifecycle` is a folder's life and the packing of runs, which every job and
study uses. The three studies (`numerics`, `quality`, `ownloop`: the own-loop probe and its
`sweep`) have one shape (`STUDIES`): their config and measuring, the verdicts they use, their job
and their report; the timing run's jobs (`jobs`) sit above them (`run --numerics` runs the
numerics study's short form), publishing above those. `commands` holds each command's action,
which imports jobs and publishing at its top; `cli` above it only parses, and imports the chosen
action by name (`test_the_command_line_only_parses`)."""


VERDICTS_IMPORT = {"faults", "ground", "plan.float8_plan", "store", "text"}
"""What a verdict may import of bench, at any depth: the folders, the torch-free tables, the text
layer's cells, and the float8 planning rule (torch-free too), which planning and the timing
verdict both apply."""

COMMANDS = {
    "run",
    "report",
    "headline",
    "compare",
    "ab",
    "numerics",
    "quality",
    "maxbatch",
    "index",
    "promote",
    "history",
    "export",
    "readme",
    "publish",
    "pages",
    "check",
    "sweep",
    "record",
}
"""The commands: each is a module of `bench.cli` that parses nothing but its own options and one
of `bench.commands` that acts on them (`run(args)`)."""

STUDY_PARTS = ["config", "measure", "verdicts", "job", "report"]
"""The parts of every study, from the bottom up: its settings, its measuring (and the tables it
writes), the verdicts it asks of its rows, the job that runs it into a folder, and its report. A
module of a study may import its own part and those before it, with one exception: the job and
the report never import each other (measuring never imports rendering; rendering reads folders
and never runs a study)."""

STUDIES = {
    "numerics": {
        "measure.config": "config",
        "measure.defaults": "config",
        "measure": "measure",
        "analysis": "verdicts",
        "job": "job",
        "render": "report",
    },
    "quality": {
        "config": "config",
        "feed": "measure",
        "train": "measure",
        "tables": "measure",
        "looks": "verdicts",
        "commit": "job",
        "job": "job",
        "render": "report",
    },
    "ownloop": {
        "config": "config",
        "looks": "verdicts",
        "job": "job",
        "next_look": "job",
        "script": "job",
        "render": "report",
        "": "measure",  # the probe and what it writes: what a user imports into a script
    },
}
"""Each study's modules by part, by the longest prefix of their dotted name inside the study."""


def _modules() -> dict[str, Path]:
    return {
        ".".join(p.relative_to(BENCH.parent).with_suffix("").parts): p for p in BENCH.rglob("*.py")
    }


def _imports(path: Path) -> set[str]:
    """The bench modules `path` imports, by any import statement in it (at any depth: inside a
    function, a class or an `if TYPE_CHECKING:` block too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench"):
            for alias in node.names:
                found.add(f"{node.module}.{alias.name}")
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("bench")}
    modules = _modules()
    return {name for name in found if name in modules and name != "bench"}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _study_part(module: str) -> str | None:
    """The part (`STUDY_PARTS`) a module of a study lies in; None outside the studies."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] not in STUDIES or (parts[-1] == "__init__" and len(parts) == 3):
        return None
    inner = ".".join(parts[2:]).removesuffix(".__init__")
    table = STUDIES[parts[1]]
    prefixes = sorted(table, key=len, reverse=True)
    found = next(p for p in prefixes if p == "" or inner == p or inner.startswith(f"{p}."))
    return table[found]


def test_imports_are_read_at_any_depth(tmp_path):
    """What every rule below reads: a deferred import counts as one at the top."""
    module = tmp_path / "deferred.py"
    module.write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from bench.cases.case import Case

            def f():
                from bench.workloads import registry

            class C:
                def g(self):
                    import bench.faults
            """
        )
    )
    assert _imports(module) == {"bench.cases.case", "bench.workloads.registry", "bench.faults"}


def test_no_module_imports_a_package_above_its_own():
    """Inside a function too, with no exception; and every package is on a floor of `ORDER`."""
    rank = {name: i for i, name in enumerate(ORDER)}
    loose = {_package(m) for m in _modules()} - set(rank) - {"__init__", "__main__"}
    assert not loose, f"packages on no floor of ORDER: {sorted(loose)}"
    wrong = []
    for module, path in _modules().items():
        mine = _package(module)
        if mine not in rank:
            continue
        for target in _imports(path):
            theirs = _package(target)
            if theirs in rank and rank[theirs] > rank[mine]:
                wrong.append(f"{module} -> {target}")
    assert not wrong, wrong


def test_measuring_never_imports_publishing():
    """At any depth of a function, too: jobs write folders, publishing reads them, and the text
    that pages are made of is publishing's."""
    measuring = ("measure", "jobs", "execution", "modes", "plan", "workloads")
    wrong = []
    for module, path in _modules().items():
        if _package(module) not in measuring:
            continue
        for target in _imports(path):
            if _package(target) in ("publish", "text", "cli") or _study_part(target) == "report":
                wrong.append(f"{module} -> {target}")
    assert not wrong, wrong


DECIDING = {"verdicts.gates", "verdicts.criteria", "verdicts.criteria_file", "verdicts.grid_power"}
"""Verdict-making modules no page is rendered from: a comparison's exit status, a criteria
file's checks, the rounds judge's power study. A command asks them; publishing never does."""


def test_publish_only_renders():
    """publish/ reads folders and writes pages: at any depth it imports no job or action (copying
    folders, running a study, a study's job) and none of `DECIDING`; the verdicts it renders it
    asks of verdicts/, where they are made."""
    wrong = [
        f"{module} -> {target}"
        for module, path in _modules().items()
        if _package(module) == "publish"
        for target in _imports(path)
        if _package(target) in ("jobs", "commands")
        or _study_part(target) == "job"
        or target.removeprefix("bench.") in DECIDING
    ]
    assert not wrong, wrong


def test_verdicts_import_only_the_ground_the_store_and_the_text():
    wrong = [
        f"{module} -> {target}"
        for module, path in _modules().items()
        if _package(module) == "verdicts"
        for target in _imports(path)
        if _package(target) != "verdicts"
        and not any(f"{target}.".startswith(f"bench.{ok}.") for ok in VERDICTS_IMPORT)
    ]
    assert not wrong, wrong


def test_the_studies_have_one_shape():
    """Every study has every part, and each of its modules imports only its own part and those
    below it, of any study: the config, measuring, verdicts, then the job or the report, which
    never import each other."""
    rank = {name: i for i, name in enumerate(STUDY_PARTS)}
    found: dict[str, set[str]] = {study: set() for study in STUDIES}
    wrong = []
    for module, path in _modules().items():
        mine = _study_part(module)
        if mine is None:
            continue
        found[_package(module)].add(mine)
        for target in _imports(path):
            theirs = _study_part(target)
            if theirs is None:
                continue
            crossed = {mine, theirs} == {"job", "report"}
            if crossed or (rank[theirs] > rank[mine] and theirs != mine):
                wrong.append(f"{module} -> {target}")
    assert not wrong, wrong
    missing = {
        s: sorted(set(STUDY_PARTS) - parts)
        for s, parts in found.items()
        if parts != set(STUDY_PARTS)
    }
    assert not missing, missing


def test_a_study_part_is_read_by_its_name():
    assert _study_part("bench.numerics.measure.config") == "config"
    assert _study_part("bench.numerics.measure.audit") == "measure"
    assert _study_part("bench.numerics.render.sections.dtypes") == "report"
    assert _study_part("bench.quality.render.runs") == "report"
    assert _study_part("bench.quality.commit") == "job"
    assert _study_part("bench.ownloop.probe") == "measure"
    assert _study_part("bench.ownloop.next_look") == "job"
    assert _study_part("bench.jobs.session") is None


def test_no_command_imports_the_program():
    """`bench.cli.main` builds the parser from the command modules and hands it to them (on the
    parsed arguments): a module of the command line that imported main back, inside a function
    too, would be a circle."""
    wrong = [
        module
        for module, path in _modules().items()
        if _package(module) == "cli"
        and module not in ("bench.cli.main", "bench.cli.__init__")
        and "bench.cli.main" in _imports(path)
    ]
    assert not wrong, wrong


def test_the_command_line_only_parses():
    """Each command's parsing module lists its action by name, and the action module is there
    with its `run`; the command line imports no action module, and no job or execution module,
    at any depth: `bench.cli.main` imports the chosen action by name, once."""
    from bench.cli import table

    assert set(table.COMMANDS) == COMMANDS
    for name, dotted in table.ACTIONS.items():
        path = BENCH.parent.joinpath(*dotted.split(".")).with_suffix(".py")
        assert path.is_file() and "\ndef run(" in path.read_text(), f"{name}: no {dotted}.run"
    heavy = {"commands", "jobs", "execution", "measure"}
    wrong = [
        f"{module} -> {target}"
        for module, path in _modules().items()
        if _package(module) == "cli"
        for target in _imports(path)
        if _package(target) in heavy and target not in ("bench.commands.given", "bench.commands")
    ]
    assert not wrong, wrong


def test_no_import_circles():
    """Through imports inside functions too (Python runs a deferred circle, but it is a circle
    of the code all the same: neither module can be read or tested without the other)."""
    graph = {m: _imports(p) for m, p in _modules().items()}

    def visit(node: str, stack: list[str], seen: set[str]) -> list[str] | None:
        if node in stack:
            return [*stack[stack.index(node) :], node]
        if node in seen:
            return None
        seen.add(node)
        for nxt in graph.get(node, ()):
            # A package's __init__ is imported with any of its modules: not an edge of its own.
            if not nxt.endswith(".__init__"):
                cycle = visit(nxt, [*stack, node], seen)
                if cycle:
                    return cycle
        return None

    seen: set[str] = set()
    for start in graph:
        cycle = visit(start, [], seen)
        assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize(
    "path", sorted(BENCH.rglob("*.py")), ids=lambda p: str(p.relative_to(BENCH))
)
def test_modules_stay_readable(path):
    lines = len(path.read_text().splitlines())
    command = path.parent.name in ("cli", "commands") and path.stem in COMMANDS
    limit = 100 if command else 400
    assert lines <= limit, f"{path.relative_to(BENCH)}: {lines} lines (at most {limit})"


MODULE_DOCSTRING_LINES = 4
"""The most lines a module's docstring may take: what the module is for, not its contents
(those are in docs/architecture.md and each function's own docstring)."""


@pytest.mark.parametrize(
    "path", sorted(BENCH.rglob("*.py")), ids=lambda p: str(p.relative_to(BENCH))
)
def test_module_docstrings_are_short(path):
    doc = ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""
    lines = len(doc.strip().splitlines())
    assert lines <= MODULE_DOCSTRING_LINES, f"{path.relative_to(BENCH)}: {lines} lines"


LONGEST_FUNCTION = 80
"""The most lines a function may span (from `def` to its last line, decorators excluded) where
functions do one thing each: measuring, the case and its axes, and the timing report."""

SHORT_FUNCTIONS = [BENCH / "measure", BENCH / "cases", BENCH / "publish" / "report.py"]


def _long_functions(path: Path) -> list[str]:
    """The functions (methods and nested ones too) of `path` over `LONGEST_FUNCTION` lines."""
    return [
        f"{node.name} (line {node.lineno}): {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > LONGEST_FUNCTION
    ]


@pytest.mark.parametrize(
    "path",
    sorted(
        p for root in SHORT_FUNCTIONS for p in ([root] if root.is_file() else root.rglob("*.py"))
    ),
    ids=lambda p: str(p.relative_to(BENCH)),
)
def test_functions_do_one_thing(path):
    long = _long_functions(path)
    assert not long, f"{path.relative_to(BENCH)}: over {LONGEST_FUNCTION} lines: {long}"


def test_the_architecture_doc_lists_the_packages_in_order():
    """docs/architecture.md's tree names the top-level packages and modules in `ORDER`."""
    text = ARCHITECTURE.read_text()
    tree = text[text.index("## The tree") : text.index("## The data flow")]
    listed = re.findall(r"^  ([a-z_]+)(?:/|\.py)\s", tree, flags=re.MULTILINE)
    assert listed == ORDER, f"docs/architecture.md lists {listed}"


DEFERRED_IMPORTS = 28
"""Imports inside a function, over all of bench: import statements, and `importlib.import_module`
calls (the command line's one dispatch). Each defers a heavy package (torch, pandas, matplotlib
where the command line parses or another kind's report renders; transformers, timm, torchvision,
torchao, plotly) or breaks a documented cycle; everything else is imported at the top. The count
may fall (lower it here), never grow."""

OWN_DEFERRED_IMPORTS = 10
"""Of those, the ones of ampbench's own modules, or of a module named at run time (the
command line's dispatch, a user's factory, an optional package by name); each says why."""

REASONED = ("cli", "commands", "publish", "jobs")
"""The packages whose every deferred import says why on its line or the line above (elsewhere,
every deferred import of ampbench's own modules does)."""


def _deferred(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each import inside a function of `path`: an import statement (not one in
    a `try`: a fallback between versions, as for tomllib) or an `importlib.import_module` call."""
    lines = path.read_text().splitlines()
    found = []

    def is_import(node: ast.AST) -> bool:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        func = node.func if isinstance(node, ast.Call) else None
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name == "import_module"

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            deferred = in_function and not isinstance(node, ast.Try)
            if is_import(child) and deferred:
                found.append((child.lineno, "\n".join(lines[child.lineno - 1 : child.end_lineno])))
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    walk(ast.parse("\n".join(lines)), False)
    return found


def _own(text: str) -> bool:
    """Whether a deferred import's text imports one of ampbench's own modules, or may: an
    `import_module` of a name computed at run time counts as one."""
    computed = "import_module(" in text and not re.search(r"import_module\(\s*[\"']", text)
    return "bench" in text.replace("ampbench", "") or text.lstrip().startswith("from .") or computed


def test_deferred_imports_are_few_and_say_why():
    found = {path: _deferred(path) for path in BENCH.rglob("*.py")}
    count = sum(len(imports) for imports in found.values())
    assert count <= DEFERRED_IMPORTS, f"{count} imports inside functions: move the new ones up"
    own = sum(_own(text) for imports in found.values() for _, text in imports)
    assert own <= OWN_DEFERRED_IMPORTS, f"{own} imports of bench inside functions: move them up"
    silent = []
    for path, imports in found.items():
        reasoned = _package(".".join(path.relative_to(BENCH.parent).with_suffix("").parts))
        lines = path.read_text().splitlines()
        for lineno, text in imports:
            said = "#" in text or lines[lineno - 2].strip().startswith("#")
            if (reasoned in REASONED or _own(text)) and not said:
                silent.append(f"{path.relative_to(BENCH)}:{lineno}")
    assert not silent, f"deferred imports without a reason: {silent}"


def test_deferred_imports_are_found_in_functions_only(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        textwrap.dedent(
            """
            import importlib
            import os

            def f():
                import json  # why

                try:
                    import tomllib
                except ImportError:
                    pass
                return importlib.import_module("bench.x")
            """
        )
    )
    found = [(6, "    import json  # why"), (12, '    return importlib.import_module("bench.x")')]
    assert _deferred(module) == found
    assert [_own(text) for _, text in found] == [False, True]


def test_the_development_doc_names_every_script():
    """docs/development.md's table of scripts/ names each file there, one line each, and no
    file that is gone."""
    text = (BENCH.parent / "docs" / "development.md").read_text()
    table = text[text.index("## What is in scripts/") :]
    named = set(re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE))
    there = {p.name for p in (BENCH.parent / "scripts").iterdir() if p.is_file()}
    assert named == there, f"unnamed: {sorted(there - named)}; gone: {sorted(named - there)}"
