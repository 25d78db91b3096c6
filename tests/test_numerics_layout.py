"""The numerics package keeps its layout: modules a reader can take in whole, modes asked of the
mode table rather than named, and measuring that never imports publishing (read from the source,
no torch involved)."""

import ast
import re
from pathlib import Path

import pytest

from bench.ground import catalog

PACKAGE = Path(__file__).resolve().parent.parent / "bench" / "numerics"
MODULES = sorted(PACKAGE.rglob("*.py"))
MEASURING = sorted([*PACKAGE.glob("measure/*.py"), *PACKAGE.glob("analysis/*.py")])
"""The modules that measure, or derive what a job writes (`analysis.summary`)."""


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def _id(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


@pytest.mark.parametrize("path", MODULES, ids=_id)
def test_no_module_is_over_400_lines(path):
    assert len(path.read_text().splitlines()) <= 400


@pytest.mark.parametrize("path", MODULES, ids=_id)
def test_no_module_names_a_mode(path):
    names = "|".join(re.escape(name) for name in catalog.CARDS)
    quoted = [m[1] for m in re.findall(rf"""(["'])({names})\1""", path.read_text())]
    assert quoted == [], f"{path.name} names modes {quoted}: ask `bench.ground.catalog`"


@pytest.mark.parametrize("path", MEASURING, ids=_id)
def test_measuring_never_imports_publishing(path):
    published = re.compile(r"^bench\.(publish|numerics\.render)(\.|$)")
    bad = sorted(m for m in _imports(path) if published.match(m))
    assert bad == [], f"{_id(path)} imports {bad}"
