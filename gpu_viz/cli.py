"""`gpu-viz info | doctor | bench | slides`: the course from the command line."""
from __future__ import annotations

import argparse
import json
import sys


def _info(args) -> int:
    from . import backend, device

    b = backend.detect()
    print(b.describe())
    info = device.current()
    print(info.summary())
    if args.json:
        print(json.dumps(info.as_dict(), indent=1, default=str))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="gpu-viz", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="the GPU (or CPU mode) the course will use")
    p.add_argument("--json", action="store_true", help="also print every attribute as JSON")
    p.set_defaults(func=_info)
    for register in _EXTRA_COMMANDS:
        register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def _register_optional():
    """Subcommands that live in their own modules (doctor, bench, slides)."""
    found = []
    for modname in ("gpu_viz.doctor", "gpu_viz.benchmarks", "gpu_viz.slides"):
        try:
            mod = __import__(modname, fromlist=["register_cli"])
        except ImportError as exc:
            if exc.name != modname:
                raise
            continue
        found.append(mod.register_cli)
    return found


_EXTRA_COMMANDS = _register_optional()

if __name__ == "__main__":
    sys.exit(main())
