"""The committed ptxas report (gpu_viz/rmsnorm/ptxas.py): CPU mode's registers table without nvcc.

It must describe the kernels as they are (its digest matches their code; a compile of a sample
gives the same numbers), cover what notebook 13 shows, and retire itself when the code changes.
"""
import time

import pytest

from gpu_viz import kernels
from gpu_viz.rmsnorm import ptxas


def test_a_report_is_committed_for_the_current_kernels():
    rec, why = ptxas.committed()
    assert rec is not None, why + " (python -m gpu_viz.rmsnorm.ptxas --out benchmarks/results)"
    assert set(rec["fused"]) == set(kernels.ARCHES) and "sm_90" in rec["wide"]
    assert rec["nvcc"] and rec["date"]


def test_the_digest_ignores_comments_and_sees_code(tmp_path, monkeypatch):
    """A region fence or a reworded comment keeps the report; a changed line of code retires it."""
    real = kernels.read_source
    base = ptxas.source_digest()
    monkeypatch.setattr(kernels, "read_source", lambda n: real(n) + "\n// [region anything]\n   \n")
    assert ptxas.source_digest() == base
    monkeypatch.setattr(kernels, "read_source",
                        lambda n: real(n).replace("__fadd_rn(v, other)", "v + other") if n == "reduce.cuh" else real(n))
    assert ptxas.source_digest() != base
    rec, _ = ptxas.committed()
    rows, why = ptxas.fused_rows("sm_90")
    assert rows is None and "older kernel code" in why and "python -m gpu_viz.rmsnorm.ptxas" in why


def test_notebook_10s_table_comes_from_the_report_in_seconds(monkeypatch):
    """CPU mode: the table's cases read from the committed report, no compile (item: notebook 13
    sat silent for two minutes compiling every fused kernel)."""
    from gpu_viz import backend
    from gpu_viz.measure import records
    from gpu_viz.rmsnorm import bench_record as bm

    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    monkeypatch.setattr(kernels, "nvcc_compile", lambda *a, **k: pytest.fail("compiled in CPU mode"))
    info, _ = records.lesson_device()
    t0 = time.perf_counter()
    report, source = bm.kernel_report_any(info.sm)
    cases = [(op, M, N) for op in ("rmsnorm_gate", "rmsnorm") for (M, N) in ((1024, 768), (16384, 4096), (2, 65536))]
    res = bm.kernel_resources(cases, "float16", info=info, report=report)
    assert time.perf_counter() - t0 < 10
    assert "committed report" in source and "nvcc" in source
    assert all(r["registers"] is not None and r["occupancy"] is not None for r in res), res


@pytest.mark.skipif(kernels.find_tool("nvcc") is None, reason="nvcc not on PATH")
def test_the_report_matches_a_fresh_compile_of_a_sample():
    """The committed numbers are ptxas's: one module of fp16 kernels for sm_90 compiled now."""
    from gpu_viz.rmsnorm.fused import names as fused

    rec, why = ptxas.committed()
    assert rec is not None, why
    if rec["nvcc"] != ptxas.nvcc_version():
        pytest.skip(f"the report is of nvcc {rec['nvcc']}, this machine has {ptxas.nvcc_version()}")
    fresh = kernels.nvcc_compile(fused.FILE, "sm_90", fused.compile_options("float16", False, False))
    table = rec["fused"]["sm_90"]
    assert fresh and all(table[u.kernel] == ptxas._numbers(u) for u in fresh), \
        [(u.kernel, table.get(u.kernel), ptxas._numbers(u)) for u in fresh if table.get(u.kernel) != ptxas._numbers(u)][:3]
