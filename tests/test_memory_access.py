"""gpu_viz.memory_access and the emulator's counts: sectors and lines of a warp's global request,
banks and wavefronts of its shared access -- the models checked against the cases the literature
states, the emulator's per-instruction counts against the same functions, the counts summed as
Nsight Compute names them, and the ncu record's three outcomes (read, blocked, missing).

Sources of the expected numbers (each case names its own):
  [guide]  CUDA C++ Programming Guide, "Shared Memory" (compute capability 5.x and later): 32 banks
           of 32 bits; lanes reading one 32-bit word share it (broadcast / multicast).
  [ncu]    Nsight Compute Kernel Profiling Guide, "Memory Tables": a warp's global access is one
           request; sectors are 32 B, lines 128 B; bank conflicts = wavefronts beyond the ideal.
  [lds128] NVIDIA forum, "Clarification: bank_conflicts metric vs wavefronts for shared memory
           LDS.128": LDS.128 needs at least 4 wavefronts (512 B / 128 B); a layout whose quarter-warps
           each put 8 lanes in one group of banks takes 32, counted as 28 conflicts.
  [cutlass] github.com/NVIDIA/cutlass/issues/328 (NVIDIA's answer): 8-byte accesses are served a half-warp at a
           time, 16-byte accesses a quarter-warp at a time.
"""
import json
import re
import stat
import sys

import numpy as np
import pytest

from gpu_viz import emulator, memory_access as ma

needs_emulator = pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed (the emulator's compiler)")
LANES = np.arange(32)


# ----------------------------------------------------------------------------- global: sectors per request
@pytest.mark.parametrize("offsets, nbytes, sectors, lines, source", [
    (4 * LANES, 4, 4, 1, "[ncu] 32 x 4 B consecutive, aligned"),
    (4 * LANES + 4, 4, 5, 2, "[ncu] the same shifted by 4 B"),
    (8 * LANES, 4, 8, 2, "stride 2 floats"),
    (16 * LANES, 4, 16, 4, "stride 4 floats"),
    (128 * LANES, 4, 32, 32, "stride 32 floats: a sector per lane"),
    (12 * LANES, 4, 12, 3, "x of a 12-byte struct"),
    (2 * LANES, 2, 2, 1, "fp16: 64 B"),
    (8 * LANES, 8, 8, 2, "8 B a lane"),
    (16 * LANES, 16, 16, 4, "16 B a lane: 512 B"),
    (np.zeros(32, np.int64), 4, 1, 1, "every lane on one word"),
    (4 * LANES[::-1], 4, 4, 1, "a permutation of one line"),
    (np.array([30]), 4, 2, 1, "one lane straddling two sectors"),
    (np.array([126]), 4, 2, 2, "one lane straddling two lines"),
])
def test_sectors_and_lines_of_textbook_requests(offsets, nbytes, sectors, lines, source):
    r = ma.global_request(np.asarray(offsets), nbytes)
    assert (r.sectors.size, r.lines.size) == (sectors, lines), source
    assert r.efficiency == pytest.approx(r.bytes / (32 * sectors))


def test_requests_group_a_launch_by_warp_and_sum():
    threads = np.arange(96)
    reqs = ma.requests(threads, 4 * threads * 2, 4)           # stride 2 for 3 warps
    assert len(reqs) == 3 and [r.sectors.size for r in reqs] == [8, 8, 8]
    s = ma.summary(reqs)
    assert (s["requests"], s["sectors"], s["sectors_per_request"], s["efficiency"]) == (3, 24, 8.0, 0.5)
    # threads out of order and a partial warp: grouped by warp all the same
    perm = np.random.default_rng(0).permutation(70)
    reqs = ma.requests(perm, 4 * perm, 4)
    assert [r.lanes.size for r in reqs] == [32, 32, 6] and ma.summary(reqs)["sectors"] == 4 + 4 + 1


# ----------------------------------------------------------------------------- shared: wavefronts
@pytest.mark.parametrize("offsets, nbytes, wavefronts, ideal, source", [
    (4 * LANES, 4, 1, 1, "[guide] 32 lanes, 32 banks"),
    (8 * LANES, 4, 2, 1, "[guide] stride 2: two lanes a bank"),
    (16 * LANES, 4, 4, 1, "stride 4"),
    (128 * LANES, 4, 32, 1, "[guide] stride 32: one bank"),
    (132 * LANES, 4, 1, 1, "stride 33: odd strides are conflict-free"),
    (np.zeros(32, np.int64), 4, 1, 1, "[guide] broadcast: every lane on one word"),
    (4 * (LANES // 2), 4, 1, 1, "[guide] multicast: lanes in pairs on a word"),
    (LANES, 1, 1, 1, "[guide] 32 bytes in 8 words"),
    (2 * LANES, 2, 1, 1, "16-bit lanes: 16 words"),
    (8 * LANES, 8, 2, 2, "[cutlass] 8 B a lane, consecutive: a half-warp per wavefront"),
    (16 * LANES, 8, 4, 2, "8 B lanes 16 B apart: two words a bank in each half-warp"),
    (16 * LANES, 16, 4, 4, "[lds128] 16 B a lane, consecutive: the minimum of 4"),
    (128 * (LANES % 8) + 16 * (LANES // 8), 16, 32, 4, "[lds128] 8 lanes of each quarter in one bank group"),
    (16 * (LANES % 8), 16, 4, 4, "[cutlass] every quarter-warp reads the same 128 B"),
])
def test_wavefronts_of_textbook_accesses(offsets, nbytes, wavefronts, ideal, source):
    r = ma.shared_request(np.asarray(offsets), nbytes)
    assert (r.wavefronts, r.ideal) == (wavefronts, ideal), source
    assert r.conflicts == wavefronts - ideal


def test_the_lds128_forum_case_counts_28_conflicts_per_instruction():
    """[lds128]: 32 wavefronts against 4 per LDS.128, i.e. 28 counted as bank conflicts."""
    r = ma.shared_request(128 * (LANES % 8) + 16 * (LANES // 8), 16)
    assert (r.wavefronts, r.conflicts, r.ways()) == (32, 28, 8)


@pytest.mark.parametrize("call, arg", [
    (lambda: ma.global_request([1.5, 2.0], 4), "offsets"),
    (lambda: ma.global_request([-4, 0], 4), "offsets"),
    (lambda: ma.global_request([0, 4], 3), "nbytes"),
    (lambda: ma.global_request([0, 4], True), "nbytes"),
    (lambda: ma.shared_request(np.arange(40) * 4, 4), "offsets"),
    (lambda: ma.shared_request([0, 4], 4, lanes=[1, 1]), "lanes"),
    (lambda: ma.shared_request([0, 4], 4, lanes=[0, 40]), "lanes"),
    (lambda: ma.requests([0, 1], [0], 4), "threads and offsets"),
    (lambda: ma.requests([0], [0], 4, space="local"), "space"),
])
def test_bad_arguments_are_named(call, arg):
    with pytest.raises((TypeError, ValueError), match=arg):
        call()


# ----------------------------------------------------------------------------- the emulator's own counts
PATTERNS = r"""
extern "C" __global__ void patterns(const float* x, float* y, int stride) {
  __shared__ float s[32 * 33];
  int t = threadIdx.x;
  s[t * stride % (32 * 33)] = x[t];
  __syncwarp();
  y[t] = x[t * stride] + s[t * stride % (32 * 33)];
}
extern "C" __global__ void vec(const float4* x, float4* y) {
  __shared__ float4 s[32];
  int t = threadIdx.x;
  s[t] = x[t];
  __syncwarp();
  y[t] = s[31 - t];
}
"""


@needs_emulator
@pytest.mark.parametrize("stride", [1, 2, 4, 32, 33])
def test_emulator_counts_each_instruction_as_the_model_does(stride):
    prog = emulator.compile(PATTERNS, name="patterns.cu")
    dev = emulator.Device()
    run = prog.launch("patterns", 1, 32, (dev.asarray(np.ones(32 * 33, np.float32)), dev.zeros(32), np.int32(stride)),
                      device=dev)
    rows = {(r["op"], r["space"], r["line"]): r for r in ma.run_counts(run)}
    strided = rows[("ld", "global", 7)] if ("ld", "global", 7) in rows else None
    loads = [r for r in ma.run_counts(run) if r["op"] == "ld" and r["space"] == "global"]
    want_sectors = sorted([ma.global_request(4 * LANES, 4).sectors.size,
                           ma.global_request(4 * stride * LANES, 4).sectors.size])
    assert sorted(r["sectors"] for r in loads) == want_sectors, (strided, loads)
    shared = [r for r in ma.run_counts(run) if r["space"] == "shared"]
    want = ma.shared_request(4 * (stride * LANES % (32 * 33)), 4)
    assert {(r["wavefronts"], r["ideal"]) for r in shared} == {(want.wavefronts, want.ideal)}
    assert all(r["width"] == 4 for r in loads + shared)


@needs_emulator
def test_memory_summary_counts_global_bytes_only():
    """Bug class: shared-memory bytes were added to the global bytes, so a kernel with coalesced
    global loads and any shared traffic reported a global efficiency above 100 %."""
    prog = emulator.compile(PATTERNS, name="patterns.cu")
    dev = emulator.Device()
    for kernel, args in (("patterns", (dev.asarray(np.ones(32 * 33, np.float32)), dev.zeros(32), np.int32(1))),
                         ("vec", (dev.asarray(np.ones((32, 4), np.float32)), dev.zeros((32, 4))))):
        summ = prog.launch(kernel, 1, 32, args, device=dev).memory_summary()
        assert summ["global_efficiency"] == pytest.approx(1.0), (kernel, summ)
        assert summ["global_bytes_requested"] == 32 * (8 if kernel == "patterns" else 32) + (
            32 * 4 if kernel == "patterns" else 0)


@needs_emulator
def test_vector_accesses_counted_per_quarter_warp():
    prog = emulator.compile(PATTERNS, name="patterns.cu")
    dev = emulator.Device()
    run = prog.launch("vec", 1, 32, (dev.asarray(np.ones((32, 4), np.float32)), dev.zeros((32, 4))), device=dev)
    rows = ma.run_counts(run)
    assert {(r["op"], r["space"], r["width"], r["sectors_per_request"]) for r in rows if r["space"] == "global"} == \
        {("ld", "global", 16, 16.0), ("st", "global", 16, 16.0)}
    assert {(r["op"], r["wavefronts"], r["ideal"]) for r in rows if r["space"] == "shared"} == {("st", 4, 4), ("ld", 4, 4)}


@needs_emulator
def test_ncu_counts_sum_loads_and_stores_by_space():
    from gpu_viz.claims import memory_access as claims

    spec = next(s for s in claims.counter_launches() if s["name"] == "banks: 32x32 tile")
    run, _ = claims.emulate(spec)
    got = ma.ncu_counts(run)
    assert set(got) == set(ma.NCU_METRICS)
    # 256 x 256 floats: 2,048 warp loads of in (4 sectors each) and 2,048 warp stores of out
    assert got["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 2048
    assert got["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 4 * 2048
    assert got["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 4 * 2048
    assert got["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] == 0
    assert got["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 31 * 2048


# ----------------------------------------------------------------------------- the random policy across launches
RACY = r"""
extern "C" __global__ void count(int* c, int n) {
  for (int i = 0; i < n; ++i) c[0] = c[0] + 1;
}
"""


@needs_emulator
def test_a_random_session_gives_each_launch_its_own_interleaving_replayably():
    """Inside emulated(policy="random", seed=s) the k-th launch runs with seed s + k: a producer that
    launches a racy kernel many times sees a distribution, and opening the session again with the
    same seed gives the same one."""
    from gpu_viz import backend, kernels  # noqa: F401

    def outcomes(seed):
        out = []
        with emulator.emulated(policy="random", seed=seed) as session:
            prog = emulator.compile(RACY, name="racy.cu")
            for _ in range(6):
                c = session.device.zeros(1, np.int32)
                k = emulator.runtime._EmulatedKernel(session, prog, "count")
                k((2,), (64,), (c, np.int32(4)))
                out.append(int(c.get()[0]))
            seeds = [r for r in session.runs]
        return out, len(seeds)

    a, n = outcomes(11)
    assert n == 6 and len(set(a)) > 1, a
    assert outcomes(11)[0] == a
    # the k-th launch is the launch with seed + k
    prog = emulator.compile(RACY, name="racy.cu")
    dev = emulator.Device()
    direct = []
    for k in range(6):
        c = dev.zeros(1, np.int32)
        prog.launch("count", 2, 64, (c, np.int32(4)), device=dev, policy="random", seed=11 + k)
        direct.append(int(c.get()[0]))
    assert direct == a


# ----------------------------------------------------------------------------- Nsight Compute's record
def _fake_ncu(tmp_path, body: str) -> str:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_parse_ncu_csv_keeps_launch_order_and_skips_the_log():
    from gpu_viz.claims import memory_access as claims

    text = ('==PROF== Connected to process 1\n"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
            '"1","1","read_strided","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","1,024"\n'
            '"0","1","transpose_tiled(float const*)","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","","62"\n'
            '"0","1","transpose_tiled(float const*)","sm__cycles.sum","cycle","5"\n')
    got = claims.parse_ncu_csv(text)
    assert got == [{"kernel": "transpose_tiled", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 62.0},
                   {"kernel": "read_strided", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 1024.0}]
    with pytest.raises(ValueError, match="Metric Name"):
        claims.parse_ncu_csv("==PROF== no csv\n")


def test_counters_blocked_when_ncu_is_missing_or_refused(tmp_path, monkeypatch):
    from gpu_viz import kernels
    from gpu_viz.claims import memory_access as claims

    monkeypatch.setattr(kernels, "find_tool", lambda name: None)
    res = claims.counters()
    assert res["counters"] == "blocked" and "not installed" in res["reason"]
    ncu = _fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU '
                              'Performance Counters on the target device 0." >&2\nexit 1\n')
    res = claims.counters(ncu=ncu)
    assert res["counters"] == "blocked" and "refused the performance counters" in res["reason"] \
        and "ERR_NVGPUCTRPERM" in res["reason"]
    res = claims.counters(ncu=_fake_ncu(tmp_path, 'echo "==ERROR== something else" >&2\nexit 3\n'))
    assert res["counters"] == "blocked" and "ncu failed (3)" in res["reason"]


@needs_emulator
def test_counters_read_compare_each_launch_with_the_emulator(tmp_path):
    """A profiler that reports the emulator's own numbers gives every launch equal; one that reports
    a different sector count for one launch gives that launch unequal (the comparison can fail)."""
    from gpu_viz.claims import memory_access as claims

    specs = claims.counter_launches()
    lines = ['"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"']
    for i, spec in enumerate(specs):
        run, _ = claims.emulate(spec)
        for m, v in ma.ncu_counts(run).items():
            if i == 3 and m.endswith("sectors_pipe_lsu_mem_global_op_ld.sum"):
                v += 1
            lines.append(f'"{i}","1","{spec["kernel"]}","{m}","",{v}')
    csv_file = tmp_path / "out.csv"
    csv_file.write_text("\n".join(lines) + "\n")
    res = claims.counters(ncu=_fake_ncu(tmp_path, f'cat "{csv_file}"\n'))
    assert res["counters"] == "read" and len(res["rows"]) == len(specs)
    assert [r["equal"] for r in res["rows"]] == [i != 3 for i in range(len(specs))]


def test_a_blocked_counters_record_passes_the_schema_and_the_notebook_says_why(tmp_path, monkeypatch):
    from gpu_viz.claims import memory_access as claims
    from gpu_viz.measure import records

    rec = {"date": "2026-12-01", "gpu": "NVIDIA L4", "sm": "sm_89", "rows": [], "counters": "blocked",
           "reason": "the driver refused the performance counters: ERR_NVGPUCTRPERM"}
    path = tmp_path / "nvidia-l4-2026-12-01-memory-counters.json"
    path.write_text(json.dumps(rec))
    assert records.problem(rec, path.name) is None
    assert records.problem({k: v for k, v in rec.items() if k != "counters"}, path.name)
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    text = claims.counters_section()
    assert "could not read the counters on NVIDIA L4" in text and "ERR_NVGPUCTRPERM" in text and \
        "recorded on NVIDIA L4, 2026-12-01" in text


# ----------------------------------------------------------------------------- GPU paths in CPU mode
def _gpu_paths():
    from gpu_viz.claims import memory_access as claims

    x = np.zeros(64, np.float32)
    return [("record.coalescing", "trace", (x,), {"n": 64}), ("record.banks", "trace", (np.zeros(1024, np.float32),), {}),
            ("record.races", "trace", (np.zeros(8, np.int32),), {"runs": 1}),
            ("record.reduction_ladder", "trace", (x,), {"block": 64}),
            ("record.reduction_ladder", "run", (x, "shuffle"), {}),
            ("claims.memory_access", "bandwidth", (), {}), ("claims.memory_access", "ladder_timings", (), {}),
            ("claims.memory_access", "recorded_addresses", (), {}),
            ("claims.memory_access", "race_distributions", (), {}), ("claims.memory_access", "record", (), {}),
            ("claims.memory_access", "record_counters", (), {}), ("claims.memory_access", "launch_on_gpu",
                                                                  (claims.counter_launches()[0],), {})]


@pytest.mark.parametrize("module, fn, args, kw", _gpu_paths(), ids=lambda v: v if isinstance(v, str) else "")
def test_without_cupy_every_gpu_path_says_gpu_unavailable(monkeypatch, module, fn, args, kw):
    """CPU mode with CuPy missing: GPUUnavailable naming what needed the GPU, never ModuleNotFoundError."""
    import importlib

    from gpu_viz import backend

    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="CuPy is not installed",
                                                            cause=backend.CAUSE_FORCED_CPU))
    f = getattr(importlib.import_module(f"gpu_viz.{module}"), fn)
    with pytest.raises(backend.GPUUnavailable):
        f(*args, **kw)


def test_the_cpu_mode_sections_say_what_was_not_run(monkeypatch, tmp_path):
    """With no committed record and no GPU, each GPU section says so and names the command that makes
    one -- it never shows an empty table or a number from nowhere."""
    from gpu_viz import backend
    from gpu_viz.claims import memory_access as claims
    from gpu_viz.measure import records

    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    for text in (claims.bandwidth_section(), claims.ladder_timing_section(), claims.addresses_section(),
                 claims.race_record_section()):
        assert "gpu-viz record memory-access" in text and "|" not in text, text
    assert "gpu-viz record memory-counters" in claims.counters_section()


def _said_once(text):
    """Bug class: a learner's line that says one thing twice ("On silicon: ... On silicon: ...", "no
    committed record yet -- no committed record yet") and gives a developer's steps (--out, commit).
    One sentence, no phrase of three words twice, no developer's step."""
    words = re.findall(r"[\w'-]+", text.lower())
    phrases = [" ".join(words[i:i + 3]) for i in range(len(words) - 2)]
    twice = sorted({ph for ph in phrases if phrases.count(ph) > 1})
    sentences = re.findall(r"[.!?](?:\s|$)", text.replace("*", "").strip())
    assert twice == [] and len(sentences) <= 1, (twice, text)
    assert "--out" not in text and "commit" not in text, text


def test_the_cpu_mode_sections_without_a_record_say_it_once(monkeypatch, tmp_path):
    """Each GPU section in CPU mode without a record, as the notebooks show it (notebook 08 puts
    "**On silicon** (at least 100 runs a kernel): " before race_record_section): one statement that
    names the command making the record."""
    from gpu_viz import backend
    from gpu_viz.claims import memory_access as claims
    from gpu_viz.measure import records

    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    shown = {"bandwidth": claims.bandwidth_section(counts=[]), "ladder": claims.ladder_timing_section(counts=[]),
             "addresses": claims.addresses_section(), "counters": claims.counters_section(),
             "races (notebook 08)": "**On silicon** (at least 100 runs a kernel): " + claims.race_record_section()}
    for what, text in shown.items():
        _said_once(text)
        tag = "memory-counters" if what == "counters" else "memory-access"
        assert f"`gpu-viz record {tag}`" in text, (what, text)
    for part in claims.sources_section().split("\n\n"):  # each source, after its heading
        _said_once(part)
    for tag in ("memory-access", "memory-counters", "probes", "hardware"):
        _said_once(records.missing(tag))
        _said_once(records.missing(tag, live=False))
