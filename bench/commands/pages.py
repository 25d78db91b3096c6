"""`ampbench pages`: every published page from the folders (`bench.publish.pages`)."""

from __future__ import annotations

import argparse
import sys

from bench.commands import folders
from bench.faults import UsageError
from bench.publish import pages
from bench.store import paths


def run(args: argparse.Namespace) -> int:
    folder = folders.writable(folders.directory(args.results_dir))
    readme = args.file or paths.ROOT / "README.md"
    if not readme.is_file():
        raise UsageError(f"--file {readme}: no such file")
    try:
        if args.record is not None:
            if args.record.resolve().parent != folder.resolve():
                raise UsageError(f"--record {args.record}: not a folder of {folder}")
            for page in pages.repoint(readme, args.record):
                shown = paths.shown(page)
                print(f"ampbench: {shown}: now quotes {args.record.name}", file=sys.stderr)
        site = None if args.no_site else args.output or paths.SITE
        for line in pages.make(folder, readme, site):
            print(line)
    except OSError as exc:  # a page that could not be read or written
        raise folders.os_error(exc) from exc
    return 0
