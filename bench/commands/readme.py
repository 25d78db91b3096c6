"""`ampbench readme`: README.md's generated tables filled or checked (`bench.publish.readme`)."""

from __future__ import annotations

import argparse
import sys

from bench.faults import UsageError
from bench.publish import readme
from bench.store import paths


def run(args: argparse.Namespace) -> int:
    file = args.file or paths.ROOT / "README.md"
    if not file.is_file():
        raise UsageError(f"--file {file}: no such file")
    changed = readme.update(file, check=args.check)
    verb = "disagrees with its run" if args.check else "regenerated"
    for block in changed:
        print(f"ampbench: {block.label}: {verb}", file=sys.stderr)
    if not changed:
        print(
            f"ampbench: {file.name} and docs/: every generated table matches its run",
            file=sys.stderr,
        )
    return 1 if args.check and changed else 0
