"""The optional parts of the test suite's world, and how a test finds out it lacks one: the
packages of the extras (`OPTIONAL`), a git checkout of the project (`not_a_checkout`), and a
`sitecustomize` that makes packages unimportable (`HIDE`), with which `tests/test_optional.py`
checks that the suite skips, saying why, where they are missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

OPTIONAL = {
    "plotly": "site",
    "markdown": "site",
    "torchvision": "vision",
    "timm": "zoo",
    "transformers": "zoo",
    "accelerate": "zoo",
    "lightning": "lightning",
    "pytorch_lightning": "lightning",
    "torchao": "fp8",
    "xdist": "test",
}
"""Each optional top-level module -> the extra of pyproject.toml that brings it."""


def not_a_checkout(root: Path = ROOT) -> str | None:
    """Why `root` is not a git checkout a test can clone or ask git about (no git; a copy of the
    tree without `.git`, such as a release tarball; or one inside another repository), or None
    when it is one."""
    if shutil.which("git") is None:
        return "not a git checkout (git is not installed)"
    found = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(root), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0 or Path(found.stdout.strip()).resolve() != root.resolve():
        return f"not a git checkout ({root} has no .git of its own)"
    return None


HIDE = '''"""Made by tests/optional.py: the top-level modules named in $AMPBENCH_HIDE (a comma list)
cannot be found, as where they are not installed: `import` raises ModuleNotFoundError and
`importlib.util.find_spec` gives None."""

import os
import sys

_HIDDEN = set(filter(None, os.environ.get("AMPBENCH_HIDE", "").split(",")))


class _Hide:
    def __init__(self, inner):
        self._inner = inner

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _HIDDEN:
            return None
        find = getattr(self._inner, "find_spec", None)
        return None if find is None else find(name, path, target)

    def __getattr__(self, attr):
        return getattr(self._inner, attr)


sys.meta_path[:] = [_Hide(finder) for finder in sys.meta_path]
for _name in [m for m in sys.modules if m.partition(".")[0] in _HIDDEN]:
    del sys.modules[_name]
'''
"""A `sitecustomize.py`: on PYTHONPATH, it hides the modules $AMPBENCH_HIDE names from every
import of that Python (a subprocess of a test)."""


def hiding(folder: Path, modules: list[str], env: dict[str, str]) -> dict[str, str]:
    """`env` for a Python in which `modules` cannot be imported: `HIDE` written into `folder`,
    which goes first on PYTHONPATH."""
    (folder / "sitecustomize.py").write_text(HIDE)
    path = [str(folder), *filter(None, env.get("PYTHONPATH", "").split(":"))]
    return {**env, "AMPBENCH_HIDE": ",".join(modules), "PYTHONPATH": ":".join(path)}
