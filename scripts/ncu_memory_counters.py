"""Nsight Compute's memory counters of notebooks 07 and 08's kernels, beside the counts the emulator derives
from the same launches' addresses -- or, where the counters cannot be read, why.

Collects, for every launch of :func:`gpu_viz.claims.memory_access.counter_launches` (each coalescing
pattern, each bank case, three transposes, reduce.cuh's block sum, each reduction rung):
    l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum / _st.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum  / _st.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum / _st.sum
    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum / _st.sum
and writes ``<gpu>-<date>-memory-counters.json`` into --out.  When ncu is missing, or the driver
refuses a non-admin the performance counters (ERR_NVGPUCTRPERM: common on rented GPUs and Colab),
the record is still written, with ``"counters": "blocked"`` and the reason; notebooks 07 and 08 say so and
shows the derived counts alone.

    python scripts/ncu_memory_counters.py --out benchmarks/results     (run by scripts/gpu-check)
Exits 0 when a record was written (counters read and all equal, or blocked with a reason), 1 when
the counters were read and some launch disagrees with the emulator (each printed), 2 without a GPU.
"""
import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("."), help="folder for the JSON record (default: here)")
    args = ap.parse_args(argv)
    from gpu_viz import backend
    from gpu_viz.claims import memory_access
    from gpu_viz.measure import records

    if not backend.has_gpu():
        print(f"ncu_memory_counters: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    path = memory_access.record_counters(args.out)
    rec = records.load_records(path.name, path.parent)[0]
    print(path)
    if rec["counters"] != "read":
        print(f"counters not read: {rec['reason']}")
        return 0
    bad = [r for r in rec["rows"] if not r["equal"]]
    for r in rec["rows"]:
        mark = "equal" if r["equal"] else "DIFFER"
        print(f"{mark:6s} {r['case']}: " + ", ".join(f"{m.split('__', 1)[1]} ncu {r['ncu'][m]} / emulated "
                                                   f"{r['emulated'][m]}" for m in r["ncu"] if r['ncu'][m] or
                                                   r['emulated'][m]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
