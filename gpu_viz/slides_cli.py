"""``gpu-viz slides``: the command line of the deck build (:func:`gpu_viz.slides.build`) and the
PDFs (:mod:`gpu_viz.pdf`)."""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from . import pdf
from .check import positive_int_arg
from .deck_vendor import SlidesError, _inside, vendor
from .outdir import FolderError
from .slides import DEFAULT_NOTEBOOKS, DEFAULT_OUT, BuildInterrupted, _stopped_by_signals, build


def _failed(exc: Exception, what: str = "") -> int:
    """Print a build's error and return its exit status: 128 + the signal for an interrupted build
    (130 for Ctrl-C), 2 for a refused or failed one."""
    print(f"gpu-viz slides: {what if isinstance(exc, BuildInterrupted) else ''}{exc}", file=sys.stderr)
    return 128 + exc.signum if isinstance(exc, BuildInterrupted) else 2


def _os_error_message(exc: OSError, out: Path) -> str:
    """One line for an OSError: the system's reason and the path, naming --out when the path is
    (in) the output folder -- never Python's tuple of the error."""
    what = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    path = Path(exc.filename) if exc.filename else None
    if path is not None and (_inside(path, out) or _inside(out, path)):
        return f"--out {out}: {what} ({path}); pass --out a folder you can write"
    return what + (f": {path}" if path else "")


def _cli(args) -> int:
    if args.out == "":
        print("gpu-viz slides: --out is empty: name the output folder (e.g. --out slides-build)", file=sys.stderr)
        return 2
    out = Path(args.out)
    vendor_from = Path(args.vendor_from) if args.vendor_from else None
    try:
        if args.vendor_only:
            with _stopped_by_signals():
                how = vendor(out / "vendor", vendor_from=vendor_from, refresh=vendor_from is None, force=args.force)
            print(f"vendor/ {how}: {out / 'vendor'}")
            return 0
        result = build(out_dir=out, notebooks_dir=Path(args.notebooks), only=args.only,
                       execute=not args.no_execute, executed_dir=Path(args.executed_dir) if args.executed_dir
                       else None, timeout=args.timeout, jobs=args.jobs, vendor_from=vendor_from,
                       force_cpu=args.cpu, force=args.force)
    except (BuildInterrupted, SlidesError, FolderError) as exc:
        return _failed(exc)
    except OSError as exc:  # not through the output folder's writer (e.g. reading a notebook)
        print(f"gpu-viz slides: {_os_error_message(exc, out)}", file=sys.stderr)
        return 2
    failed = [d for d in result.decks if not d.ok]
    for d in failed:
        print(f"gpu-viz slides: {d.name} FAILED: {d.error[:1500]}", file=sys.stderr)
    print(f"{len(result.decks) - len(failed)} of {len(result.decks)} decks built; open {result.index}")
    if not args.no_pdf and len(failed) < len(result.decks):
        try:
            exe = pdf.chromium_path()
        except SlidesError as exc:  # $GPU_VIZ_CHROMIUM names no browser
            print(f"gpu-viz slides: {exc}; the decks are built, the PDFs are not", file=sys.stderr)
            return 2
        if exe is None or importlib.util.find_spec("playwright") is None:
            # the decks are built; the PDFs are the one part that needs a browser
            print("gpu-viz slides: PDFs skipped: they need Chromium (apt-get install chromium, or set "
                  "$GPU_VIZ_CHROMIUM) and the playwright package; the decks are built", file=sys.stderr)
            return 1 if failed else 0
        try:
            with _stopped_by_signals():
                made = pdf.render(out)
        except (BuildInterrupted, SlidesError, FolderError) as exc:
            return _failed(exc, "PDFs ")
        print(f"{len(made)} PDFs written beside the decks (one page per slide)")
    return 1 if failed else 0


#: What ``gpu-viz slides --help`` says (the module docstring is for the package's readers).
CLI_DESCRIPTION = """\
Execute the course notebooks (live on a GPU, in CPU mode without one) and render each as an
offline reveal.js deck at 1280x720: NN_topic.slides.html, its PDF (one page per slide; needs
Chromium), and index.html linking them all.  Open index.html in a browser, no server needed.
In a deck: -> / Space next slide, <- back, S speaker notes, F full screen, Esc overview."""


def register_cli(subparsers) -> None:
    """Add the ``slides`` subcommand to ``gpu-viz``."""
    p = subparsers.add_parser("slides", help="execute the notebooks and render offline reveal.js decks",
                              description=CLI_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(DEFAULT_OUT),
                   help=f"output folder: new, empty, or an earlier build's (default: {DEFAULT_OUT})")
    p.add_argument("--notebooks", default=str(DEFAULT_NOTEBOOKS), help="folder of NN_topic.ipynb notebooks")
    p.add_argument("--only", metavar="PATTERN", help="comma-separated notebook numbers (10), globs (0[1-3]*) or substrings of names (rmsnorm)")
    p.add_argument("--no-execute", action="store_true", help="render the executed copies already built")
    p.add_argument("--executed-dir", help="where executed notebooks go / are read (default: OUT/executed)")
    p.add_argument("--timeout", type=positive_int_arg, default=600, help="per-cell timeout in seconds, >= 1 (default 600)")
    p.add_argument("--jobs", type=positive_int_arg, default=1, help="notebooks executed in parallel, >= 1 (default 1)")
    p.add_argument("--vendor-only", action="store_true",
                   help="only (re)build OUT/vendor (the decks' JavaScript, from npm); execute and render nothing")
    p.add_argument("--cpu", action="store_true", help="execute in CPU mode even on a GPU machine")
    p.add_argument("--no-pdf", action="store_true",
                   help="skip the PDFs (reveal.js print mode through headless Chromium; needs playwright)")
    p.add_argument("--vendor-from", metavar="DIR",
                   help="copy the vendored JavaScript from DIR (a complete vendor/ folder) instead of npm")
    p.add_argument("--force", action="store_true",
                   help="build into an --out folder that holds files a gpu-viz build did not write (they are "
                        "still never overwritten or deleted; without --force such a folder is refused)")
    p.set_defaults(func=_cli)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="gpu-viz")
    register_cli(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args(["slides"] + sys.argv[1:])
    sys.exit(a.func(a))
