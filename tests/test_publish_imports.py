"""Publishing works from folders alone: importing every module of `bench.publish` imports no
torch, so reports, the index, the README blocks and the other tools run on a machine without it.
Checked in a fresh interpreter, where nothing else has imported torch already."""

import pkgutil
import subprocess
import sys

import bench.publish

_IMPORT_ALL = """
import importlib
import sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")))
"""


def test_every_publishing_module_imports_without_torch():
    names = sorted(f"bench.publish.{m.name}" for m in pkgutil.iter_modules(bench.publish.__path__))
    assert "bench.publish.report" in names and "bench.publish.index" in names
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, *names],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"torch imported by publishing: {proc.stdout.strip()}"
