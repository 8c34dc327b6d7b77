"""The memory hierarchy's measurements (kernels/memory.cu, gpu_viz.measure.memory): pure parts on
CPU, the kernels on a GPU, and the recorded path CPU mode shows (notebooks 01, 04)."""
import math

import numpy as np
import pytest

from gpu_viz import backend, device
from gpu_viz.measure import memory as M

H200, L4, T4 = (device.spec_sheet(k) for k in ("H200", "L4", "T4"))


# -- pure helpers --------------------------------------------------------------------------------

def test_chase_chain_is_one_cycle_over_every_node(rng):
    nodes, s = 257, 32
    order = M.chase_permutation(nodes, seed=int(rng.integers(1 << 30)))
    nxt = M.chase_next(order, s, nodes * s)
    j, seen = int(order[0] * s), set()
    for _ in range(nodes):
        assert j % s == 0 and j not in seen
        seen.add(j)
        j = int(nxt[j])
    assert j == order[0] * s and len(seen) == nodes


def test_chase_permutation_is_not_sequential():
    order = M.chase_permutation(4096, seed=1)
    assert np.mean(np.abs(np.diff(order)) == 1) < 0.01  # a prefetcher sees no stride


def test_chase_permutation_validates():
    with pytest.raises(ValueError, match="nodes must be >= 2"):
        M.chase_permutation(1)


def test_littles_law_arithmetic():
    law = M.littles_law(4000.0, 500.0, 132)
    assert law.bytes_in_flight == pytest.approx(2.0e6)          # 4000 B/ns x 500 ns
    assert law.bytes_per_sm == pytest.approx(2.0e6 / 132)
    assert law.warps_per_sm == pytest.approx(2.0e6 / 132 / 512)
    assert law.loads_per_sm == pytest.approx(2.0e6 / 132 / 16)
    assert "MB in flight" in law.explain()


@pytest.mark.parametrize("args, match", [((0, 500, 10), "bandwidth_GBps"), ((100, math.nan, 10), "latency_ns"),
                                         ((100, 500, 0), "sm_count")])
def test_littles_law_validates(args, match):
    with pytest.raises(ValueError, match=match):
        M.littles_law(*args)


def test_sweep_configs_respect_the_sm():
    l4 = M.sweep_configs(L4)
    assert [c["warps_per_sm"] for c in l4] == [1, 2, 4, 8, 16, 32, 48]      # 1536 threads = 48 warps
    assert all(c["threads"] <= 1024 and c["threads"] * c["blocks_per_sm"] == 32 * c["warps_per_sm"] for c in l4)
    assert [c["warps_per_sm"] for c in M.sweep_configs(H200)][-1] == 64
    with pytest.raises(ValueError, match="multiple of 16"):
        M.sweep_configs(H200, [24])


def test_expected_level_and_labels():
    assert M.expected_level(4 * M.KiB, H200) == "L1"
    assert M.expected_level(4 * M.MiB, H200) == "L2"
    assert M.expected_level(256 * M.MiB, H200) == "DRAM"
    assert M.expected_level(64 * M.MiB, H200) == "L2/DRAM"
    assert M.size_label(4096) == "4 KiB" and M.size_label(M.GiB) == "1 GiB" and M.size_label(100) == "100 B"
    assert M.CHASE_SIZES[0] == 4 * M.KiB and M.CHASE_SIZES[-1] == M.GiB


@pytest.mark.skipif(backend.has_gpu(), reason="checks the CPU-mode refusal")
@pytest.mark.parametrize("fn", [lambda: M.pointer_chase(4096), lambda: M.latency_staircase(),
                                lambda: M.read_bandwidth(1 << 20), lambda: M.occupancy_sweep(),
                                lambda: M.host_bandwidth(),
                                lambda: M.hardware_record()])
def test_measurements_refuse_without_gpu(fn):
    with pytest.raises(backend.GPUUnavailable, match="needs a CUDA GPU"):
        fn()


# -- on a GPU ------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.timing
def test_latency_staircase_is_sane():
    info = device.current()
    l1 = M.pointer_chase(4 * M.KiB)
    l2 = M.pointer_chase(min(1 * M.MiB, info.l2_bytes // 4))
    dram = M.dram_latency()
    for p in (l1, l2, dram):
        assert p.cycles_per_load > 0 and p.ns_per_load > 0
        assert 0.3 < p.clock_GHz < 4.0, p
    assert l1.cycles_per_load < l2.cycles_per_load < dram.cycles_per_load, (l1, l2, dram)
    assert 10 < l1.cycles_per_load < 200 and dram.ns_per_load > 150, (l1, dram)


@pytest.mark.gpu
@pytest.mark.timing
def test_staircase_monotone_ish():
    pts = M.latency_staircase(M.CHASE_SIZES[:8])
    cyc = [p.cycles_per_load for p in pts]
    # each step may wobble by 15%, but never falls far below an earlier plateau
    assert all(b > 0.85 * max(cyc[: i + 1]) for i, b in enumerate(cyc[1:])), cyc


@pytest.mark.gpu
def test_pointer_chase_validates():
    with pytest.raises(ValueError, match="multiple of stride_bytes"):
        M.pointer_chase(1000)


@pytest.mark.gpu
@pytest.mark.timing
def test_read_bandwidth_is_plausible():
    info = device.current()
    p = M.read_bandwidth(256 * M.MiB)
    assert 0.3 * info.peak_bandwidth_GBps < p.GBps < 1.3 * info.peak_bandwidth_GBps, (p, info.peak_bandwidth_GBps)


@pytest.mark.gpu
@pytest.mark.timing
def test_occupancy_sweep_rises():
    pts = M.occupancy_sweep()
    assert pts[-1].GBps > 4 * pts[0].GBps, [round(p.GBps) for p in pts]


@pytest.mark.gpu
@pytest.mark.timing
def test_host_bandwidth_is_plausible():
    h = M.host_bandwidth(64 * M.MiB, reps=3)
    assert 1.0 < h["h2d_GBps"] < 1000.0 and 1.0 < h["d2h_GBps"] < 1000.0, h


@pytest.mark.gpu
@pytest.mark.timing
def test_hardware_record_shape():
    rec = M.hardware_record()
    for key in ("latency", "dram_latency", "bandwidth_vs_size", "occupancy_sweep", "littles_law", "occupancy",
                "copy_GBps", "host_bandwidth", "launch_floor_us", "device"):
        assert key in rec
    assert rec["seconds"] < 60
    for rows in rec["occupancy"].values():
        assert all(r["blocks_per_sm"] == r["calculator_blocks_per_sm"] for r in rows)


# -- the recorded path (CPU mode shows a committed record) -------------------------------------------

def _fake_record():
    """A synthetic hardware record with the keys hardware_record() writes (values invented, for the CPU path)."""
    import dataclasses

    from gpu_viz import occupancy as O

    info = device.spec_sheet("H200")
    d = info.as_dict()
    d["compute_capability"] = list(d["compute_capability"])   # as JSON stores it
    lat = [dict(size_bytes=s, stride_bytes=128, loads=2048, cycles_per_load=c, ns_per_load=c / 1.98,
                level=M.expected_level(s, info))
           for s, c in zip(M.CHASE_SIZES, [33, 33, 35, 270, 280, 290, 300, 600, 900, 1100])]
    bw = [dict(size_bytes=s, GBps=g, median_us=s / g / 1e3, p10_us=s / g / 1.05e3, p90_us=s / g / 0.95e3,
               blocks=264, threads=256, warps_per_sm=16, timing="kernel")
          for s, g in zip(M.BANDWIDTH_SIZES, [50, 200, 800, 3000, 7000, 6000, 4300, 4100, 4050])]
    sw = [dict(size_bytes=256 << 20, GBps=min(4100, 90 * w), median_us=1, p10_us=1, p90_us=1, blocks=132,
               threads=32 * w, warps_per_sm=w, timing="kernel") for w in (1, 2, 4, 8, 16, 32, 48, 64)]
    occ = {n: [r.row() for r in O.table(info, O.KernelResources(n, g, s))]
           for n, g, s in (("occ_light", 10, 0), ("occ_heavy", 80, 0), ("occ_smem", 14, 16384))}
    return {"date": "2026-11-29", "gpu": "NVIDIA H200", "sm": "sm_90", "device": d, "latency": lat,
            "dram_latency": lat[-1], "bandwidth_vs_size": bw, "occupancy_sweep": sw,
            "littles_law": dataclasses.asdict(M.littles_law(4100, 555, 132)), "occupancy": occ,
            "copy_GBps": 4000.0, "host_bandwidth": {"h2d_GBps": 53.1, "d2h_GBps": 55.0, "bytes": 256 << 20},
            "launch_floor_us": 2.0, "rows": []}


def test_recorded_path(tmp_path, monkeypatch):
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpu_viz.figures import chip, memory as figs
    from gpu_viz.measure import records

    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    assert records.recorded_hardware() == (None, None)
    (tmp_path / "nvidia-h200-2026-11-29-hardware.json").write_text(json.dumps(_fake_record()))
    rec, label = records.recorded_hardware()
    assert label == backend.recorded_label("NVIDIA H200", "2026-11-29")
    info = records.device_of(rec)
    assert info.sm_count == 132 and info.compute_capability == (9, 0) and "recorded on NVIDIA H200" in info.source
    served = M.classify_levels(rec["latency"], info.l2_bytes)
    assert served[:3] == ["L1", "L1", "L1"] and served[3] == "L2" and served[-1] == "DRAM"
    levels = M.summarize_levels(rec["latency"], info.l2_bytes)
    assert levels["L1"]["cycles"] == 33 and levels["L2"]["size_bytes"] == 16 * M.MiB and levels["DRAM"]["cycles"] == 1100
    for fig in (figs.plot_staircase(rec["latency"], info, label), figs.plot_bandwidth(rec["bandwidth_vs_size"], info, label, 4000),
                figs.plot_sweep(rec["occupancy_sweep"], info, label, 4000, 34), figs.plot_occupancy(rec["occupancy"], info, label),
                chip.draw_chip(info, latency=levels, bandwidth={"DRAM": 4050}, provenance=label)):
        assert any(label in t.get_text() for t in fig.findobj(matplotlib.text.Text))
    plt.close("all")
    with pytest.raises(ValueError, match="no 'device' entry"):
        records.device_of({"gpu": "x"})
    # a partial device names the field it lacks (it was a bare KeyError: 'compute_capability')
    partial = dict(rec, device={k: v for k, v in rec["device"].items() if k != "compute_capability"})
    with pytest.raises(ValueError, match="device.compute_capability"):
        records.device_of(partial)
