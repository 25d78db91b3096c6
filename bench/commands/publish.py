"""`ampbench publish`: the static site built from the results folders (`bench.publish.site`)."""

from __future__ import annotations

import argparse
import sys

from bench.commands import folders
from bench.publish.site import publish
from bench.store import paths


def run(args: argparse.Namespace) -> int:
    folder = folders.directory(args.results_dir)
    try:
        built = publish(folder, args.output or paths.SITE)
    except OSError as exc:  # a file that could not be read or written while building
        raise folders.os_error(exc) from exc
    size = built.size_bytes / 2**20
    print(
        f"ampbench: wrote {built.pages} pages ({size:.1f} MiB) in {built.folder}; "
        "open index.html in a browser",
        file=sys.stderr,
    )
    print(built.front)
    return 0
