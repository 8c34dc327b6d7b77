"""`gpu-viz info | doctor | bench | record | slides | class-kit`: the course from the command line."""
from __future__ import annotations

import argparse
import json
import sys


def _info(args) -> int:
    from . import backend, device

    b = backend.detect()
    print(b.describe())
    info = device.current()
    # in CPU mode the traces model the deck's GPU: say so, lest its line read as one found here
    print(("" if b.mode == "gpu" else "the GPU the CPU models stand for (none on this machine): ") + info.summary())
    if args.json:
        print(json.dumps(info.as_dict(), indent=1, default=str))
    return 0


def main(argv=None) -> int:
    from . import classkit, doctor, record_cli, slides_cli, words
    from .rmsnorm import report

    words.readable_streams()  # a Latin-1 / cp1252 terminal prints the tables too (dashes as ASCII)

    parser = argparse.ArgumentParser(prog="gpu-viz", description=__doc__)
    sub = parser.add_subparsers(dest="command", metavar="command")
    p = sub.add_parser("info", help="the GPU (or CPU mode) the course will use",
                       description="Say which GPU the course will use here (name, sm_XX, SMs, memory "
                                   "bandwidth, L2), or that it runs in CPU mode and why.")
    p.add_argument("--json", action="store_true", help="also print every attribute as JSON")
    p.set_defaults(func=_info)
    for module in (doctor, report, record_cli, slides_cli, classkit):
        module.register_cli(sub)
    # known args first: a wrong option is then reported by the parser it was given to, naming it
    # (argparse alone reports a missing command, or the top-level usage for a command's option)
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.error(f"choose a command: {', '.join(sub.choices)}"
                     + (f" (unrecognized arguments: {' '.join(extra)})" if extra else ""))
    if extra:
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
