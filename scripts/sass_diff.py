#!/usr/bin/env python3
"""Compare the SASS of the fused ops' kernels between two checkouts, without a GPU.

A refactor of ``kernels/rmsnorm_fused.cu`` or ``kernels/rmsnorm_wide.cu`` that must not change
what runs (a shared header, a retired mode) is proved by the machine code: every kernel the ops
can launch is compiled with the local ``nvcc`` to a cubin, disassembled with ``cuobjdump -sass``,
and compared kernel by kernel.

    python scripts/sass_diff.py dump OUT_DIR [--arches sm_75,sm_80,sm_89,sm_90] [--only fused|wide]
    python scripts/sass_diff.py compare BEFORE_DIR AFTER_DIR

``dump`` uses the package and ``kernels/`` of the checkout it runs from (put another checkout
first on ``PYTHONPATH`` to dump that one): the fused kernels of every module build (dtype, fp32
weight, extended output) for each arch, and the wide kernel of every configuration its policy
uses (sm_90: the only arch that runs it; before sm_90 it compiles to a trap), and the hardware
probes of ``kernels/probes.cu`` for each arch.  Each kernel's
SASS goes to ``OUT_DIR/<file>/<arch>/<kernel>.sass``, each instruction with its encoding (so the
scheduling control bits count too); only the ``/*addr*/`` column is dropped.

``compare`` prints, per file and arch, how many kernels are identical, differ, or exist on one
side only, and the first differing lines of each that differs; it exits 1 when any differs.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

FUNCTION = re.compile(r"^\s*Function : (\S+)\s*$")
ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/")


def _split_sass(text: str) -> Dict[str, str]:
    """``{kernel: normalised SASS}`` from ``cuobjdump -sass`` output."""
    out: Dict[str, List[str]] = {}
    current = None
    for line in text.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = m.group(1)
            out[current] = []
            continue
        if current is None or not line.strip():
            continue
        line = " ".join(ADDRESS.sub("", line).split())  # the encodings stay: control bits included
        if line:
            out[current].append(line)
    return {k: "\n".join(v) + "\n" for k, v in out.items()}


def _compile(file: str, arch: str, options: Tuple[str, ...]) -> Dict[str, str]:
    from gpu_viz import kernels

    cuobjdump = kernels.find_tool("cuobjdump")
    if cuobjdump is None:
        raise SystemExit("cuobjdump not found (pip install nvidia-cuda-cuobjdump, or the CUDA toolkit)")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        kernels.nvcc_compile(file, arch, options, cubin=cubin)
        proc = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, encoding="utf-8", check=True)
    return _split_sass(proc.stdout)


def _jobs(arches: Iterable[str], only: str) -> List[Tuple[str, str, Tuple[str, ...]]]:
    from gpu_viz.rmsnorm import dtypes

    jobs = []
    if only in ("", "fused"):
        try:  # the fused ops' build options: one module per (dtype, fp32 weight, extended output)
            from gpu_viz.rmsnorm.fused.names import compile_options
        except ImportError:  # the layout before the fused op's layers
            from gpu_viz.rmsnorm.fused import compile_options
        builds = [(dt, w32, ext) for dt in dtypes.DTYPES for w32 in ((False,) if dt == "float32" else (False, True))
                  for ext in (False, True)]
        jobs += [("rmsnorm_fused.cu", arch, compile_options(*b)) for arch in arches for b in builds]
    if only in ("", "wide"):
        from gpu_viz.rmsnorm import wide

        jobs += [("rmsnorm_wide.cu", "sm_90", cfg.options) for cfg in wide.configs_in_use()]
    if only in ("", "probes"):  # the hardware probes' kernels (one build per arch)
        jobs += [("probes.cu", arch, ()) for arch in arches]
    return jobs


def dump(out: Path, arches: List[str], only: str, workers: int) -> int:
    jobs = _jobs(arches, only)
    print(f"compiling {len(jobs)} modules with {workers} nvcc processes ...", flush=True)
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda j: (j, _compile(*j)), jobs))
    count = 0
    for (file, arch, _), sass in results:
        folder = out / file / arch
        folder.mkdir(parents=True, exist_ok=True)
        for kernel, text in sass.items():
            (folder / f"{kernel}.sass").write_text(text, encoding="utf-8")
            count += 1
    print(f"{count} kernels written under {out}")
    return 0


def compare(before: Path, after: Path, show: int = 12) -> int:
    differ = 0
    a_dirs = {p.relative_to(before) for p in before.glob("*/*")}
    b_dirs = {p.relative_to(after) for p in after.glob("*/*")}
    for folder in sorted(a_dirs ^ b_dirs):
        print(f"{folder}: dumped {'before' if folder in a_dirs else 'after'} only (not compared)")
    for folder in sorted(a_dirs & b_dirs):
        a = {p.name: p.read_text(encoding="utf-8") for p in (before / folder).glob("*.sass")}
        b = {p.name: p.read_text(encoding="utf-8") for p in (after / folder).glob("*.sass")}
        same = sorted(k for k in a.keys() & b.keys() if a[k] == b[k])
        changed = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
        print(f"{folder}: {len(same)} identical, {len(changed)} differ, {len(a.keys() - b.keys())} only before, "
              f"{len(b.keys() - a.keys())} only after")
        for k in sorted(a.keys() ^ b.keys()):
            print(f"  only {'before' if k in a else 'after'}: {k[:-5]}")
        for k in changed:
            differ += 1
            la, lb = a[k].splitlines(), b[k].splitlines()
            print(f"  differs: {k[:-5]} ({len(la)} -> {len(lb)} instructions)")
            shown = 0
            for i, (x, y) in enumerate(zip(la, lb)):
                if x != y and shown < show:
                    print(f"    {i}: {x}\n    {i}: {y}")
                    shown += 1
    print("SASS identical" if not differ else f"{differ} kernels differ")
    return 1 if differ else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="compile and disassemble every kernel the ops use")
    d.add_argument("out", type=Path)
    d.add_argument("--arches", default="sm_75,sm_80,sm_89,sm_90", help="for the fused kernels (comma-separated)")
    d.add_argument("--only", choices=("fused", "wide", "probes"), default="")
    d.add_argument("--workers", type=int, default=2)
    c = sub.add_parser("compare", help="compare two dumps kernel by kernel")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        return dump(args.out, args.arches.split(","), args.only, args.workers)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
