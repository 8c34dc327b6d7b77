"""Chip / SM / mapping figures: drawn from DeviceInfo numbers, every figure says where its data came from."""
import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from gpu_viz import device  # noqa: E402
from gpu_viz.figures import chip  # noqa: E402


def texts(fig):
    return "\n".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("key", sorted(device.SPEC_SHEETS))
def test_chip_numbers_come_from_the_device(key):
    info = device.spec_sheet(key)
    fig = chip.draw_chip(info)
    t = texts(fig)
    assert f"GPU: {info.sm_count} streaming multiprocessors" in t
    assert f"L2 cache: {info.l2_bytes // 2**20} MiB" in t
    assert f"{info.peak_bandwidth_GBps:,.0f} GB/s" in t
    assert f"{info.mem_bus_bits}-bit bus" in t
    assert "Data: " in t and info.source in t
    # one small square per SM
    assert sum(isinstance(p, Rectangle) for p in fig.axes[0].patches) == info.sm_count


def test_chip_with_measurements_needs_provenance():
    info = device.spec_sheet("H200")
    lat = {"L1": {"cycles": 33, "ns": 17}, "DRAM": {"cycles": 950, "ns": 480}}
    with pytest.raises(ValueError, match="provenance is required"):
        chip.draw_chip(info, latency=lat)
    t = texts(chip.draw_chip(info, latency=lat, bandwidth={"DRAM": 4100.0, "h2d": 53.2}, provenance="recorded on X, 2026"))
    assert "53 GB/s\nhost->GPU\n(measured)" in t
    assert "950 cycles" in t and "480 ns" in t and "4,100 GB/s" in t and "measurements: recorded on X, 2026" in t


@pytest.mark.parametrize("key", ["T4", "L4", "H200"])
def test_sm_draws_every_fp32_lane(key):
    info = device.spec_sheet(key)
    fig = chip.draw_sm(info)
    lanes = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert len(lanes) == info.fp32_cores_per_sm
    t = texts(fig)
    assert f"{info.max_threads_per_sm:,} ({info.max_threads_per_sm // 32} warps)" in t
    assert f"{info.regs_per_sm // 4:,} x 32-bit" in t
    assert info.source in t


def test_mapping_has_the_decks_four_rows():
    info = device.spec_sheet("L4")
    t = texts(chip.draw_mapping(info))
    for logical, physical, _ in chip.MAPPING:
        assert logical in t and physical in t
    assert "58 SMs, 89,088 threads resident at once" in t
    assert "128 lanes per SM" in t


def test_bad_info_is_named():
    with pytest.raises(TypeError, match="info must be a gpu_viz.device.DeviceInfo"):
        chip.draw_chip({"name": "L4"})


def test_hierarchy_table():
    rows = chip.hierarchy_rows(device.SPEC_SHEETS.values())
    md = chip.markdown_table(rows, chip.HIERARCHY_COLUMNS)
    assert md.count("\n") == len(rows) + 1
    assert "| NVIDIA H200 | sm_90 | 132 |" in md and "spec sheet" in md
    with pytest.raises(ValueError, match="rows is empty"):
        chip.markdown_table([])
