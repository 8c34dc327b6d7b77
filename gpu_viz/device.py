"""DeviceInfo: what the GPU at hand is made of, read live, or a labelled spec sheet.

``current()`` reads the device through the CUDA runtime (``cudaDeviceGetAttribute``,
which still carries the memory clock that CUDA 13 removed from ``cudaDeviceProp``).
In CPU mode it returns the spec sheet of the deck's GPU, the NVIDIA L4, and says
so in ``source``.

Spec-sheet sources: NVIDIA's product briefs and architecture whitepapers (Turing
TU104, Ampere GA100, Ada AD104, Hopper GH100), and the CUDA C++ Programming
Guide's "Compute capabilities" table for the per-SM limits.  The H200's L2 is
the value the CUDA runtime reports on the H200 this project was measured on.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional

from . import backend

# cudaDeviceAttr values (driver_types.h); stable across CUDA 11-13.
_ATTR = {
    "max_threads_per_block": 1,
    "max_smem_per_block": 8,
    "warp_size": 10,
    "max_regs_per_block": 12,
    "clock_khz": 13,
    "sm_count": 16,
    "mem_clock_khz": 36,
    "mem_bus_bits": 37,
    "l2_bytes": 38,
    "max_threads_per_sm": 39,
    "cc_major": 75,
    "cc_minor": 76,
    "max_smem_per_sm": 81,
    "max_regs_per_sm": 82,
    "max_smem_per_block_optin": 97,
    "max_blocks_per_sm": 106,
}

# FP32 lanes ("CUDA cores") per SM, by compute capability (CUDA C++ Programming
# Guide, "Arithmetic Instructions" throughput table: 32-bit fp add/mul/fma per
# clock per SM).
FP32_CORES_PER_SM = {
    (6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128, (10, 0): 128, (10, 3): 128, (12, 0): 128, (12, 1): 128,
}


def fp32_cores_per_sm(cc) -> Optional[int]:
    """FP32 cores per SM for compute capability ``cc`` = (major, minor); None if unknown."""
    return FP32_CORES_PER_SM.get(tuple(cc))


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """One GPU's hierarchy.  Units are in the field names (bytes, kHz, GB/s).

    ``source`` says where the numbers came from: ``"live: cudaDeviceGetAttribute"``
    or ``"spec sheet: ..."``; every figure drawn from a DeviceInfo shows it.
    """

    name: str
    compute_capability: tuple
    sm_count: int
    fp32_cores_per_sm: Optional[int]
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    warp_size: int
    regs_per_sm: int
    regs_per_block: int
    smem_per_sm_bytes: int
    smem_per_block_bytes: int
    smem_per_block_optin_bytes: int
    l2_bytes: int
    mem_bytes: int
    mem_bus_bits: Optional[int]
    mem_clock_khz: Optional[int]
    clock_khz: Optional[int]
    source: str
    peak_bandwidth_override_GBps: Optional[float] = None

    @property
    def sm(self) -> str:
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    @property
    def is_live(self) -> bool:
        return self.source.startswith("live")

    @property
    def peak_bandwidth_GBps(self) -> Optional[float]:
        """Theoretical DRAM bandwidth in GB/s (1e9 B/s): 2 transfers per memory clock x bus width.

        Where a spec sheet states the vendor's figure, that figure is used.
        """
        if self.peak_bandwidth_override_GBps is not None:
            return self.peak_bandwidth_override_GBps
        if not self.mem_clock_khz or not self.mem_bus_bits:
            return None
        return 2 * self.mem_clock_khz * 1e3 * (self.mem_bus_bits / 8) / 1e9

    @property
    def fp32_cores(self) -> Optional[int]:
        return None if self.fp32_cores_per_sm is None else self.fp32_cores_per_sm * self.sm_count

    @property
    def max_resident_threads(self) -> int:
        return self.max_threads_per_sm * self.sm_count

    def summary(self) -> str:
        bw = self.peak_bandwidth_GBps
        bw_text = f"{bw:,.0f} GB/s peak memory bandwidth" if bw else "peak bandwidth unknown"
        return (f"{self.name} ({self.sm}): {self.sm_count} SMs, {bw_text}, "
                f"{self.l2_bytes / 2**20:.0f} MiB L2, {self.mem_bytes / 2**30:.0f} GiB memory "
                f"[{self.source}]")

    def as_dict(self) -> Dict:
        d = dataclasses.asdict(self)
        d["sm"] = self.sm
        d["peak_bandwidth_GBps"] = self.peak_bandwidth_GBps
        return d


def _sheet(name, cc, sms, threads_sm, blocks_sm, smem_sm_kib, smem_optin_kib, l2_mib, mem_gib,
           bus, bw, clock_mhz, source) -> DeviceInfo:
    return DeviceInfo(
        name=name, compute_capability=cc, sm_count=sms, fp32_cores_per_sm=fp32_cores_per_sm(cc),
        max_threads_per_block=1024, max_threads_per_sm=threads_sm, max_blocks_per_sm=blocks_sm,
        warp_size=32, regs_per_sm=65536, regs_per_block=65536,
        smem_per_sm_bytes=smem_sm_kib * 1024, smem_per_block_bytes=48 * 1024,
        smem_per_block_optin_bytes=smem_optin_kib * 1024, l2_bytes=int(l2_mib * 2**20),
        mem_bytes=int(mem_gib * 2**30), mem_bus_bits=bus, mem_clock_khz=None,
        clock_khz=clock_mhz * 1000, source=f"spec sheet: {source}", peak_bandwidth_override_GBps=bw)


#: Spec sheets of the GPUs the course talks about.  Peak bandwidth is the vendor's figure.
SPEC_SHEETS: Dict[str, DeviceInfo] = {
    "L4": _sheet("NVIDIA L4", (8, 9), 58, 1536, 24, 100, 99, 48, 24, 192, 300.0, 2040,
                 "NVIDIA L4 datasheet / Ada (AD104) whitepaper"),
    "T4": _sheet("Tesla T4", (7, 5), 40, 1024, 16, 64, 64, 4, 16, 256, 320.0, 1590,
                 "NVIDIA T4 datasheet / Turing (TU104) whitepaper"),
    "A100": _sheet("NVIDIA A100-SXM4-80GB", (8, 0), 108, 2048, 32, 164, 163, 40, 80, 5120, 2039.0,
                   1410, "NVIDIA A100 datasheet / Ampere (GA100) whitepaper"),
    "H100": _sheet("NVIDIA H100 80GB HBM3", (9, 0), 132, 2048, 32, 228, 227, 50, 80, 5120, 3350.0,
                   1980, "NVIDIA H100 SXM datasheet / Hopper (GH100) whitepaper"),
    "H200": _sheet("NVIDIA H200", (9, 0), 132, 2048, 32, 228, 227, 60, 141, 6144, 4800.0, 1980,
                   "NVIDIA H200 SXM datasheet; L2 as the CUDA runtime reports it"),
}

#: The deck's GPU: what CPU mode shows, labelled as a spec sheet.
DECK_GPU = "L4"


def spec_sheet(key: str) -> DeviceInfo:
    """The spec sheet for ``key`` in ``SPEC_SHEETS`` (``"L4"``, ``"T4"``, ``"A100"``, ``"H100"``, ``"H200"``).

    Raises:
        KeyError: naming the known keys.
    """
    try:
        return SPEC_SHEETS[key]
    except KeyError:
        raise KeyError(f"spec_sheet: unknown GPU {key!r}; known: {sorted(SPEC_SHEETS)}") from None


def _live(device_id: int) -> DeviceInfo:
    cupy = backend.require_cupy("reading the GPU's attributes")

    rt = cupy.cuda.runtime

    def attr(key):
        try:
            return int(rt.deviceGetAttribute(_ATTR[key], device_id))
        except Exception:
            return None

    props = rt.getDeviceProperties(device_id)
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    cc = (attr("cc_major") or int(props["major"]), attr("cc_minor") or int(props["minor"]))
    with cupy.cuda.Device(device_id):
        _free, total = rt.memGetInfo()
    return DeviceInfo(
        name=name, compute_capability=cc, sm_count=attr("sm_count"),
        fp32_cores_per_sm=fp32_cores_per_sm(cc),
        max_threads_per_block=attr("max_threads_per_block"),
        max_threads_per_sm=attr("max_threads_per_sm"),
        max_blocks_per_sm=attr("max_blocks_per_sm"), warp_size=attr("warp_size"),
        regs_per_sm=attr("max_regs_per_sm"), regs_per_block=attr("max_regs_per_block"),
        smem_per_sm_bytes=attr("max_smem_per_sm"), smem_per_block_bytes=attr("max_smem_per_block"),
        smem_per_block_optin_bytes=attr("max_smem_per_block_optin"), l2_bytes=attr("l2_bytes"),
        mem_bytes=int(total), mem_bus_bits=attr("mem_bus_bits"), mem_clock_khz=attr("mem_clock_khz"),
        clock_khz=attr("clock_khz"), source="live: cudaDeviceGetAttribute")


_live_cache: Dict[int, DeviceInfo] = {}


def current() -> DeviceInfo:
    """The GPU at hand, read live; in CPU mode the deck's L4 spec sheet (``source`` says so)."""
    b = backend.detect()
    if not b.is_gpu:
        return SPEC_SHEETS[DECK_GPU]
    return live(b.device_id)


def live(device_id: int) -> DeviceInfo:
    """CUDA device ``device_id``, read live once (cudaDeviceGetAttribute) and cached.

    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    info = _live_cache.get(device_id)
    if info is None:
        backend.require_gpu("reading the GPU's attributes")
        info = _live_cache[device_id] = _live(device_id)
    return info
