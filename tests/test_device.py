"""DeviceInfo: spec sheets, the FP32-core table, and live attributes on a GPU."""
import pytest

from gpu_viz import backend, device


def test_spec_sheets_peak_bandwidth_and_cores():
    l4 = device.spec_sheet("L4")
    assert (l4.sm_count, l4.fp32_cores_per_sm, l4.max_threads_per_sm) == (58, 128, 1536)
    assert l4.peak_bandwidth_GBps == 300.0 and l4.fp32_cores == 7424
    assert device.spec_sheet("T4").sm == "sm_75" and device.spec_sheet("H200").sm_count == 132
    with pytest.raises(KeyError, match="unknown GPU 'V100'"):
        device.spec_sheet("V100")


def test_peak_bandwidth_from_clock_and_bus():
    info = device.DeviceInfo(**{**device.spec_sheet("L4").__dict__, "peak_bandwidth_override_GBps": None,
                                "mem_clock_khz": 6_251_000, "mem_bus_bits": 192})
    assert info.peak_bandwidth_GBps == pytest.approx(300.0, rel=0.01)


def test_fp32_cores_table():
    assert device.fp32_cores_per_sm((7, 5)) == 64 and device.fp32_cores_per_sm((8, 9)) == 128
    assert device.fp32_cores_per_sm((1, 0)) is None


def test_cpu_mode_is_labelled(monkeypatch):
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))
    info = device.current()
    assert info.name == "NVIDIA L4" and info.source.startswith("spec sheet") and not info.is_live


@pytest.mark.gpu
def test_live_attributes_agree_with_cupy():
    import cupy as cp

    info = device.current()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
    assert info.is_live and info.sm_count == props["multiProcessorCount"]
    assert info.max_threads_per_block == 1024 and info.warp_size == 32
    assert info.l2_bytes > 1 << 20 and info.mem_bytes > 1 << 30
    assert info.peak_bandwidth_GBps and 100 < info.peak_bandwidth_GBps < 20000
