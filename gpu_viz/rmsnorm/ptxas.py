"""The committed ptxas report of the fused ops' kernels: what CPU mode shows without compiling.

Notebook 13's "Registers, spills and occupancy" table needs ptxas's registers, spills and shared
memory of the kernel each shape launches.  Compiling every kernel of ``kernels/rmsnorm_fused.cu``
with nvcc takes a minute or two, so CPU mode reads this report instead: one JSON file in
``benchmarks/results/``, ``nvcc-<version>-<date>-ptxas.json``, holding

* ``nvcc`` (the compiler's version) and ``date`` (when it was compiled; no GPU is involved);
* ``source_digest``: a hash of the kernel sources' code with comments and blank space left out
  (:func:`source_digest`), so a change to a comment or a slide's region fence keeps the report
  and a change to the code retires it: :func:`committed` then says it is stale;
* ``fused``: ``{arch: {kernel: [registers, spill stores B, spill loads B, local B, shared B]}}``
  for every kernel of ``rmsnorm_fused.cu`` and every arch of :data:`gpu_viz.kernels.ARCHES`;
* ``wide``: the same for every cluster kernel :func:`gpu_viz.rmsnorm.wide.configs_in_use`
  can launch, on the arches with thread-block clusters (sm_90).

    python -m gpu_viz.rmsnorm.ptxas --out benchmarks/results     # write a new report (needs nvcc)
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .. import kernels

TAG = "ptxas"
#: The files whose code decides the report: the two kernel files and the headers they include.
SOURCES = ("rmsnorm_fused.cu", "rmsnorm_wide.cu", "convert.cuh", "pack.cuh", "reduce.cuh", "sreg.cuh")
#: The order of a kernel's numbers in the report.
FIELDS = ("registers", "spill_stores_bytes", "spill_loads_bytes", "local_bytes", "shared_bytes")


def source_digest(sources=SOURCES) -> str:
    """sha256 of the sources' code: each line without its ``//`` comment and surrounding blanks,
    empty lines dropped, files in name order.  Comments (a region fence, a reworded note) leave
    it as it was; any change to the code changes it."""
    h = hashlib.sha256()
    for name in sorted(sources):
        h.update(name.encode() + b"\0")
        for line in kernels.read_source(name).splitlines():
            code = re.sub(r"//.*", "", line).strip()
            if code:
                h.update(code.encode() + b"\n")
    return h.hexdigest()


def nvcc_version() -> str:
    """The local nvcc's version, "13.0.88" (``nvcc --version``).

    Raises:
        FileNotFoundError: no nvcc.
    """
    import subprocess

    nvcc = kernels.find_tool("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found on PATH or in the pip wheels: the ptxas report needs it")
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, encoding="utf-8", errors="replace", check=True).stdout
    m = re.search(r"\bV(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def _numbers(u) -> List[int]:
    return [u.registers, u.spill_stores_bytes, u.spill_loads_bytes, u.stack_frame_bytes, u.shared_bytes]


def make_report(arches=None) -> Dict:
    """Compile every fused and cluster kernel with the local nvcc for ``arches`` (default
    :data:`gpu_viz.kernels.ARCHES`) and return the report (the module docstring's fields)."""
    from . import wide
    from .fused import op as fused

    arches = list(arches or kernels.ARCHES)
    report = {"date": _dt.date.today().isoformat(), "tool": TAG, "nvcc": nvcc_version(), "arches": arches,
              "sources": list(SOURCES), "source_digest": source_digest(), "fields": list(FIELDS),
              "fused": {}, "wide": {}}
    for arch in arches:
        report["fused"][arch] = {u.kernel: _numbers(u) for u in fused._ptxas_rows(arch)}
        cc = (int(arch[3:-1]), int(arch[-1]))
        if cc >= (9, 0):
            report["wide"][arch] = {}
            for cfg in wide.configs_in_use(cc=cc):
                (u,) = kernels.nvcc_compile(wide.FILE, arch, cfg.options)
                report["wide"][arch][cfg.kernel] = _numbers(u)
    return report


def save(report: Dict, out) -> Path:
    """Write ``report`` to ``<out>/nvcc-<version>-<date>-ptxas.json`` (a new name, never over another)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"nvcc-{re.sub(r'[^0-9a-z]+', '-', report['nvcc'].lower())}-{report['date']}"
    for seq in range(1, 1000):
        path = out / f"{stem}{'' if seq == 1 else f'.{seq}'}-{TAG}.json"
        if not path.exists():
            path.write_text(json.dumps(report, indent=0, sort_keys=False) + "\n", encoding="utf-8")
            return path
    raise FileExistsError(f"999 ptxas reports of {stem} in {out}")


def committed(directory=None) -> Tuple[Optional[Dict], str]:
    """``(report, "")`` of the newest committed report whose digest matches the sources, else
    ``(None, why)``: none committed, or the kernels' code changed since (regenerate it with
    ``python -m gpu_viz.rmsnorm.ptxas --out benchmarks/results``)."""
    from ..measure import records

    recs = [r for r in records.load_records(f"*-{TAG}.json", directory) if r.get("tool") == TAG]
    if not recs:
        return None, "no committed ptxas report"
    rec = recs[0]
    if rec.get("source_digest") != source_digest(rec.get("sources", SOURCES)):
        return None, (f"the committed ptxas report ({rec['_file']}) is of older kernel code: regenerate it with "
                      "`python -m gpu_viz.rmsnorm.ptxas --out benchmarks/results`")
    return rec, ""


def label(report: Dict, arch: str) -> str:
    """Where the numbers came from, for a table's caption."""
    # the file's name stays out: a caption is read on a slide (the notes and the record name it)
    return f"ptxas -v for {arch} from nvcc {report['nvcc']}, compiled {report['date']} (the committed report; no GPU, nothing run)"


def fused_rows(arch: str, directory=None) -> Tuple[Optional[List[Dict]], str]:
    """The committed report's rows for ``arch`` in :func:`gpu_viz.rmsnorm.fused.kernel_report`'s
    format, and their label; ``(None, why)`` when there is no current report for that arch."""
    from .fused import names as fused

    rec, why = committed(directory)
    if rec is None:
        return None, why
    table = rec["fused"].get(arch)
    if not table:
        return None, f"the committed ptxas report has no {arch}"
    rows = []
    for name, nums in table.items():
        vals = dict(zip(rec.get("fields", FIELDS), nums))
        rows.append({"kernel": name, **fused.describe_kernel(name), "arch": arch, **vals,
                     "max_threads_per_block": None, "source": "ptxas (committed report)"})
    return rows, label(rec, arch)


def wide_usage(kernel: str, arch: str, directory=None) -> Optional[Dict]:
    """The committed report's numbers for cluster kernel ``kernel`` on ``arch`` (the keys of
    :data:`FIELDS`), or None when the current report lacks it."""
    rec, _why = committed(directory)
    nums = ((rec or {}).get("wide", {}).get(arch) or {}).get(kernel)
    return dict(zip(rec.get("fields", FIELDS), nums)) if nums else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpu_viz.rmsnorm.ptxas",
                                description="Compile the fused ops' kernels with the local nvcc and save "
                                            "the ptxas report CPU mode shows (no GPU needed).")
    p.add_argument("--out", type=Path, default=Path("."), help="folder for the JSON report (default: here)")
    p.add_argument("--arch", action="append", help="an arch (repeatable; default: every arch of the course)")
    args = p.parse_args(argv)
    try:
        path = save(make_report(args.arch), args.out)
    except FileNotFoundError as exc:
        print(f"no ptxas report: {exc}")
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
