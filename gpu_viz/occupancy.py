"""Occupancy: how many blocks of a kernel fit on one SM at once, and which resource runs out first.

Two producers of the same number:

* :func:`calculate` -- a CPU calculator from :class:`gpu_viz.device.DeviceInfo` limits and the
  kernel's resources (registers per thread, shared memory per block).  It follows the rules of
  the CUDA toolkit's ``cuda_occupancy.h`` (register allocation per warp in units of 256, in 4
  SM sub-partitions; shared memory in units of 128 B (256 B before sm_80) plus the 1 KiB the
  driver reserves per block on sm_80+; the per-SM thread and block caps) and names the limiting
  resource: ``"threads"``, ``"blocks"``, ``"registers"``, ``"shared memory"``.
* :func:`live_blocks_per_sm` -- the CUDA driver's answer,
  ``cuOccupancyMaxActiveBlocksPerMultiprocessor``, for a compiled kernel on the GPU at hand.
* :func:`occupancy_kernels`, :func:`check_occ_kernel` -- ``kernels/occupancy.cu``'s three kernels
  (light, register-heavy, shared-memory-heavy; notebook 05), each checked against float64.

On a GPU the two must agree for every block size (tests/test_occupancy.py checks it).

:func:`check_launch` validates a launch configuration *before* launching, with the numbers
in the message: the 1024-thread block cap is the first thing it checks.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from . import backend, device, kernels
from .check import check_int

THREADS = "threads"
BLOCKS = "blocks"
REGISTERS = "registers"
SHARED_MEMORY = "shared memory"
BLOCK_SIZE = "block size"
#: The resources that can cap blocks per SM, in the order they are reported.
RESOURCES: Tuple[str, ...] = (THREADS, BLOCKS, REGISTERS, SHARED_MEMORY)

#: Register allocation: per warp, in units of this many registers (all sm_75+ GPUs).
REG_ALLOC_UNIT = 256
#: SM sub-partitions (one warp scheduler and a quarter of the register file each).
SUB_PARTITIONS = 4
#: Most registers one thread may use (the compiler's cap).
MAX_REGS_PER_THREAD = 255

# Shared-memory sizes an SM can be configured to (carveout steps), by compute capability major
# (and minor where it matters), from cuda_occupancy.h.
_SMEM_CONFIGS_KIB = {
    (7, 5): (32, 64),
    (7, 0): (0, 8, 16, 32, 64, 96),
    (8, 0): (0, 8, 16, 32, 64, 100, 132, 164),
    (8, 7): (0, 8, 16, 32, 64, 100, 132, 164),
    8: (0, 8, 16, 32, 64, 100),
    9: (0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
    10: (0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
    12: (0, 8, 16, 32, 64, 100),
}


class LaunchConfigError(ValueError):
    """A launch configuration the GPU would refuse (raised before launching, numbers included)."""


def smem_alloc_unit(cc) -> int:
    """Shared-memory allocation granularity in bytes: 256 before sm_80, 128 from sm_80 on."""
    return 256 if tuple(cc)[0] < 8 else 128


def _smem_configs(cc) -> Tuple[int, ...]:
    cc = tuple(cc)
    return _SMEM_CONFIGS_KIB.get(cc) or _SMEM_CONFIGS_KIB.get(cc[0]) or _SMEM_CONFIGS_KIB[9]


def _align_up_carveout(nbytes: int, cc) -> Optional[int]:
    """The smallest carveout (bytes) of this architecture holding ``nbytes``; None if none does."""
    for kib in _smem_configs(cc):
        if nbytes <= kib * 1024 and (kib > 0 or nbytes == 0):
            return kib * 1024
    return None


def reserved_smem_per_block(info: device.DeviceInfo) -> int:
    """Bytes of shared memory the driver reserves per block: 1 KiB on sm_80+, 0 before.

    Read live (``cudaDevAttrReservedSharedMemoryPerBlock``) when ``info`` is the live device.
    """
    if info.is_live and backend.has_gpu():
        try:
            cupy = backend.require_cupy("reading the reserved shared memory")
            return int(cupy.cuda.runtime.deviceGetAttribute(111, backend.detect().device_id))
        except Exception:
            pass
    return 1024 if info.compute_capability[0] >= 8 else 0


@dataclasses.dataclass(frozen=True)
class KernelResources:
    """What one kernel needs per thread / per block.

    Attributes:
        name: the kernel's name (for tables).
        regs_per_thread: registers per thread (``RawKernel.num_regs``, or ptxas ``-v``).
        static_smem_bytes: static ``__shared__`` bytes per block (``shared_size_bytes``).
        max_dynamic_smem_bytes: the opt-in limit set with ``cudaFuncAttributeMaxDynamicSharedMemorySize``
            (``RawKernel.max_dynamic_shared_size_bytes``), or ``None`` when left at the default.
    """

    name: str
    regs_per_thread: int
    static_smem_bytes: int = 0
    max_dynamic_smem_bytes: Optional[int] = None

    def __post_init__(self):
        if not isinstance(self.regs_per_thread, int) or self.regs_per_thread < 0:
            raise ValueError(f"regs_per_thread must be an int >= 0, got {self.regs_per_thread!r}")
        if not isinstance(self.static_smem_bytes, int) or self.static_smem_bytes < 0:
            raise ValueError(f"static_smem_bytes must be an int >= 0, got {self.static_smem_bytes!r}")

    @classmethod
    def of(cls, raw_kernel, name: Optional[str] = None) -> "KernelResources":
        """Read a compiled ``cupy.RawKernel``'s registers and static shared memory."""
        return cls(name=name or getattr(raw_kernel, "name", "kernel"), regs_per_thread=int(raw_kernel.num_regs),
                   static_smem_bytes=int(raw_kernel.shared_size_bytes))


@dataclasses.dataclass(frozen=True)
class Occupancy:
    """Blocks of one kernel resident on one SM at ``block_size`` threads per block.

    Attributes:
        block_size: threads per block.
        blocks_per_sm: resident blocks per SM (0: the block cannot launch at all).
        warps_per_sm, threads_per_sm: resident warps / threads per SM.
        occupancy: resident warps / the SM's maximum warps (0..1).
        limiters: the resources whose cap equals ``blocks_per_sm`` (ties list several);
            ``("block size",)`` when the block exceeds the per-block thread cap.
        limits: blocks per SM each resource alone would allow (``"threads"``, ``"blocks"``,
            ``"registers"``, ``"shared memory"``).
        regs_per_thread, smem_per_block_bytes: what one block was charged (smem allocated,
            including the driver's reservation).
        source: ``"calculator"`` or ``"CUDA occupancy API"``.
    """

    block_size: int
    blocks_per_sm: int
    warps_per_sm: int
    threads_per_sm: int
    occupancy: float
    limiters: Tuple[str, ...]
    limits: Dict[str, int]
    regs_per_thread: int
    smem_per_block_bytes: int
    source: str = "calculator"

    @property
    def limiter(self) -> str:
        """The limiting resource(s) in words: ``"registers"``, ``"threads + blocks"``."""
        return " + ".join(self.limiters)

    def row(self) -> Dict:
        """A flat dict for tables and records."""
        return {"block_size": self.block_size, "blocks_per_sm": self.blocks_per_sm,
                "warps_per_sm": self.warps_per_sm, "occupancy": round(self.occupancy, 4),
                "limiter": self.limiter, "regs_per_thread": self.regs_per_thread,
                "smem_per_block_bytes": self.smem_per_block_bytes, **{f"limit_{k}": v for k, v in self.limits.items()}}


def _int_arg(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int,)) and not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def calculate(info: device.DeviceInfo, block_size: int, kernel: Union[KernelResources, int],
              dynamic_smem_bytes: int = 0, *, reserved_smem_bytes: Optional[int] = None) -> Occupancy:
    """Blocks per SM for ``kernel`` at ``block_size`` threads on the GPU described by ``info``.

    Args:
        info: the device (``device.current()`` or a spec sheet).
        block_size: threads per block (>= 1; above the per-block cap gives 0 blocks).
        kernel: :class:`KernelResources`, or just the registers per thread (no shared memory).
        dynamic_smem_bytes: dynamic shared memory per block, bytes.
        reserved_smem_bytes: the driver's per-block reservation; default
            :func:`reserved_smem_per_block` (1 KiB on sm_80+).

    Returns:
        :class:`Occupancy`, ``source="calculator"``.

    Raises:
        TypeError / ValueError: naming the bad argument.
    """
    block_size = _int_arg("block_size", block_size, 1)
    dynamic_smem_bytes = _int_arg("dynamic_smem_bytes", dynamic_smem_bytes, 0)
    if not isinstance(kernel, KernelResources):
        kernel = KernelResources("kernel", _int_arg("kernel (registers per thread)", kernel, 0))
    cc = tuple(info.compute_capability)
    warp = info.warp_size
    max_warps_sm = info.max_threads_per_sm // warp
    warps_per_block = -(-block_size // warp)
    reserved = reserved_smem_per_block(info) if reserved_smem_bytes is None else int(reserved_smem_bytes)

    # shared memory charged per block
    unit = smem_alloc_unit(cc)
    smem_block = kernel.static_smem_bytes + reserved + dynamic_smem_bytes
    smem_block = -(-smem_block // unit) * unit

    if block_size > info.max_threads_per_block:
        limits = {THREADS: 0, BLOCKS: info.max_blocks_per_sm, REGISTERS: 0, SHARED_MEMORY: 0}
        return Occupancy(block_size, 0, 0, 0, 0.0, (BLOCK_SIZE,), limits, kernel.regs_per_thread,
                         smem_block)

    # threads (warp slots)
    by_threads = max_warps_sm // warps_per_block
    # blocks
    by_blocks = info.max_blocks_per_sm
    # registers: allocated per warp in units of REG_ALLOC_UNIT, per sub-partition
    regs_warp = -(-kernel.regs_per_thread * warp // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    regs_block = regs_warp * warps_per_block
    regs_assumed = regs_warp * (-(-warps_per_block // SUB_PARTITIONS) * SUB_PARTITIONS)
    if (info.regs_per_block < regs_assumed or info.regs_per_block < regs_block
            or kernel.regs_per_thread > MAX_REGS_PER_THREAD):
        by_regs = 0
    elif regs_warp == 0:
        by_regs = 1 << 30
    else:
        warps_per_sub = (info.regs_per_sm // SUB_PARTITIONS) // regs_warp
        by_regs = (warps_per_sub * SUB_PARTITIONS) // warps_per_block
    # shared memory: the per-block cap, then what the SM's carveout holds
    optin = kernel.max_dynamic_smem_bytes is not None
    max_usage = kernel.static_smem_bytes + reserved + (kernel.max_dynamic_smem_bytes or 0)
    per_block_cap = info.smem_per_block_bytes
    if optin and max_usage > info.smem_per_block_bytes:
        per_block_cap = info.smem_per_block_optin_bytes
    if cc[0] >= 8:
        per_block_cap += reserved
    too_much = smem_block > per_block_cap or (optin and dynamic_smem_bytes > kernel.max_dynamic_smem_bytes)
    if too_much:
        by_smem = 0
    else:
        preferred = _align_up_carveout(info.smem_per_sm_bytes, cc) or info.smem_per_sm_bytes
        if preferred >= smem_block:
            smem_sm = preferred
        else:
            smem_sm = _align_up_carveout(smem_block, cc) or info.smem_per_sm_bytes
        by_smem = smem_sm // smem_block if smem_block > 0 else 1 << 30

    limits = {THREADS: by_threads, BLOCKS: by_blocks, REGISTERS: by_regs, SHARED_MEMORY: by_smem}
    blocks = min(limits.values())
    limiters = tuple(r for r in RESOURCES if limits[r] == blocks)
    warps = blocks * warps_per_block
    return Occupancy(block_size=block_size, blocks_per_sm=blocks, warps_per_sm=warps,
                     threads_per_sm=blocks * block_size, occupancy=warps / max_warps_sm,
                     limiters=limiters, limits=limits, regs_per_thread=kernel.regs_per_thread,
                     smem_per_block_bytes=smem_block)



def full_occupancy_registers(info: device.DeviceInfo) -> int:
    """The most registers per thread a kernel may use and still keep every warp slot of an SM of
    ``info`` resident (notebook 02's budget, exercise ``streaming_multiprocessor.regs``).

    Not ``regs_per_sm / max_threads_per_sm``: registers are allocated per warp in units of
    :data:`REG_ALLOC_UNIT` (8 per thread), within each of the :data:`SUB_PARTITIONS`
    sub-partitions, so the budget is rounded down to a multiple of 8 (an L4: 65,536 / 1,536 =
    42.67, allocated as 40).  The value :func:`calculate` agrees with: at it, 128-thread blocks
    reach full occupancy; one allocation unit more, they do not.
    """
    warps_per_sub = info.max_threads_per_sm // info.warp_size // SUB_PARTITIONS
    per_warp = (info.regs_per_sm // SUB_PARTITIONS) // max(warps_per_sub, 1)
    per_warp -= per_warp % REG_ALLOC_UNIT
    return min(MAX_REGS_PER_THREAD, per_warp // info.warp_size)


#: Block sizes of the lesson's sweep: 32, 64, ..., 1024.
SWEEP_BLOCK_SIZES: Tuple[int, ...] = tuple(range(32, 1025, 32))


def table(info: device.DeviceInfo, kernel: Union[KernelResources, int],
          block_sizes: Iterable[int] = SWEEP_BLOCK_SIZES, dynamic_smem_bytes: int = 0) -> List[Occupancy]:
    """:func:`calculate` for every block size (default 32..1024 step 32)."""
    return [calculate(info, b, kernel, dynamic_smem_bytes) for b in block_sizes]


# -- the CUDA driver's answer ------------------------------------------------------------------

def _driver():
    cupy = backend.require_cupy("the CUDA occupancy API")
    try:
        return cupy.cuda.driver
    except AttributeError:  # older layouts
        from cupy_backends.cuda.api import driver
        return driver


def live_blocks_per_sm(raw_kernel, block_size: int, dynamic_smem_bytes: int = 0) -> int:
    """``cuOccupancyMaxActiveBlocksPerMultiprocessor`` for a compiled ``cupy.RawKernel``.

    Raises:
        GPUUnavailable: in CPU mode.
        ValueError: ``block_size`` < 1 or ``dynamic_smem_bytes`` < 0.
    """
    backend.require_gpu("the CUDA occupancy API")
    block_size = _int_arg("block_size", block_size, 1)
    dynamic_smem_bytes = _int_arg("dynamic_smem_bytes", dynamic_smem_bytes, 0)
    return int(_driver().occupancyMaxActiveBlocksPerMultiprocessor(raw_kernel.kernel.ptr, block_size,
                                                                   dynamic_smem_bytes))


def live_table(raw_kernel, block_sizes: Iterable[int] = SWEEP_BLOCK_SIZES, dynamic_smem_bytes: int = 0,
               name: Optional[str] = None) -> List[Occupancy]:
    """The CUDA API's blocks per SM for each block size, with the calculator's limiters beside it.

    Each :class:`Occupancy` has ``source="CUDA occupancy API"``; its ``blocks_per_sm`` is the
    driver's; ``limits``/``limiters`` come from :func:`calculate` (the API does not say which
    resource binds).  When the two disagree, ``limiters`` is ``("calculator disagrees",)``.
    """
    info = device.current()
    res = KernelResources.of(raw_kernel, name)
    if getattr(raw_kernel, "max_dynamic_shared_size_bytes", None) and \
            raw_kernel.max_dynamic_shared_size_bytes > info.smem_per_block_bytes - res.static_smem_bytes:
        res = dataclasses.replace(res, max_dynamic_smem_bytes=int(raw_kernel.max_dynamic_shared_size_bytes))
    rows = []
    for b in block_sizes:
        calc = calculate(info, b, res, dynamic_smem_bytes)
        blocks = live_blocks_per_sm(raw_kernel, b, dynamic_smem_bytes)
        wpb = -(-b // info.warp_size)
        limiters = calc.limiters if blocks == calc.blocks_per_sm else ("calculator disagrees",)
        rows.append(dataclasses.replace(
            calc, blocks_per_sm=blocks, warps_per_sm=blocks * wpb, threads_per_sm=blocks * b,
            occupancy=blocks * wpb / (info.max_threads_per_sm // info.warp_size), limiters=limiters,
            source="CUDA occupancy API"))
    return rows


# -- validating a launch before it happens ------------------------------------------------------

def _dims(name: str, value) -> Tuple[int, int, int]:
    seq = (value,) if isinstance(value, int) else value
    if isinstance(value, (str, bytes, bool)) or not isinstance(seq, (tuple, list)) or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in seq):
        raise TypeError(f"{name} must be an int or a tuple of 1-3 ints, got {value!r}")
    dims = tuple(int(v) for v in seq)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{name} must have 1 to 3 dimensions, got {value!r}")
    if any(d < 1 for d in dims):
        raise LaunchConfigError(f"{name}={value!r}: every dimension must be >= 1")
    return dims + (1,) * (3 - len(dims))


def check_launch(block, grid=(1,), dynamic_smem_bytes: int = 0,
                 info: Optional[device.DeviceInfo] = None,
                 kernel: Optional[KernelResources] = None) -> Occupancy:
    """Validate a launch before launching it; return the kernel's occupancy at that block size.

    Checks, with the numbers in the message: threads per block <= ``max_threads_per_block``
    (1024); block dims within (1024, 1024, 64); grid dims within (2^31-1, 65535, 65535);
    and, given ``kernel``, that one block's registers and shared memory fit on one SM.

    Raises:
        LaunchConfigError: the GPU would refuse this launch (why, in words).
        TypeError / ValueError: malformed ``block`` / ``grid``.
    """
    info = info or device.current()
    bx, by, bz = _dims("block", block)
    gx, gy, gz = _dims("grid", grid)
    threads = bx * by * bz
    cap = info.max_threads_per_block
    if threads > cap:
        raise LaunchConfigError(
            f"block={tuple(block) if not isinstance(block, int) else block} asks for {threads} threads per "
            f"block, but {info.name} allows at most {cap}: all threads of a block must be resident on one SM "
            f"at once (they share its shared memory and meet at __syncthreads()). Use blocks of <= {cap} "
            f"threads and more blocks, or a grid-stride loop.")
    for axis, (d, lim) in zip("xyz", zip((bx, by, bz), (1024, 1024, 64))):
        if d > lim:
            raise LaunchConfigError(f"block.{axis}={d} exceeds the limit {lim} for that dimension")
    for axis, (d, lim) in zip("xyz", zip((gx, gy, gz), (2**31 - 1, 65535, 65535))):
        if d > lim:
            raise LaunchConfigError(f"grid.{axis}={d} exceeds the limit {lim} for that dimension")
    occ = calculate(info, threads, kernel or KernelResources("kernel", 0), dynamic_smem_bytes)
    if occ.blocks_per_sm == 0:
        k = kernel or KernelResources("kernel", 0)
        raise LaunchConfigError(
            f"one block of {threads} threads does not fit on one SM of {info.name}: it needs "
            f"{k.regs_per_thread} registers x {threads} threads (the SM has {info.regs_per_sm}, a block may use "
            f"{info.regs_per_block}) and {occ.smem_per_block_bytes} bytes of shared memory (a block may use "
            f"{info.smem_per_block_optin_bytes}); blocks per SM each resource allows: "
            + ", ".join(f"{res} {n}" for res, n in occ.limits.items()))
    return occ


def launch_error_text(exc: BaseException) -> str:
    """Explain, in words, the error CUDA raised for a block that does not fit (for notebook 05)."""
    text = f"{type(exc).__name__}: {exc}"
    if "INVALID_VALUE" in text or "invalid argument" in text.lower() or "configuration" in text.lower():
        return (f"the driver refused the launch ({text}): cuLaunchKernel checks the block against "
                "the device's limits (at most 1024 threads per block) and the kernel's resources before "
                "anything runs, and returns CUDA_ERROR_INVALID_VALUE; no thread ran.")
    if "OUT_OF_RESOURCES" in text or "too many resources" in text.lower():
        return (f"the driver refused the launch ({text}): one block needs more registers or shared memory "
                "than one SM can give it; no thread ran.")
    return f"the launch failed: {text}"


# -- the lesson's three kernels ------------------------------------------------------------

OCC_FILE = "occupancy.cu"
OCC_KERNELS = ("occ_light", "occ_heavy", "occ_smem")
#: The sizes kernels/occupancy.cu is compiled with (its #ifndef defaults are the same).
OCC_HEAVY_LIVE, OCC_HEAVY_ROUNDS, OCC_SMEM_TILE = 64, 4, 4096
OCC_OPTIONS = (f"-DOCC_HEAVY_LIVE={OCC_HEAVY_LIVE}", f"-DOCC_HEAVY_ROUNDS={OCC_HEAVY_ROUNDS}",
               f"-DOCC_SMEM_TILE={OCC_SMEM_TILE}")


def occupancy_kernels() -> Dict[str, object]:
    """The three kernels of ``kernels/occupancy.cu``, compiled for this GPU: name -> RawKernel."""
    return {name: kernels.function(OCC_FILE, name, OCC_OPTIONS) for name in OCC_KERNELS}


def occ_reference(name: str, x: np.ndarray, block: int, a: float = 2.0, b: float = 1.0) -> np.ndarray:
    """float64 reference of ``occ_light`` / ``occ_heavy`` / ``occ_smem`` on host array ``x`` (CPU).

    ``block`` matters for ``occ_smem`` (each thread adds the value of its mirror thread in the block).

    Raises:
        ValueError: unknown kernel name.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if name == "occ_light":
        return a * x + b
    if name == "occ_heavy":
        idx = (np.arange(n)[None, :] + np.arange(OCC_HEAVY_LIVE)[:, None]) % n
        r = x[idx]
        for _ in range(OCC_HEAVY_ROUNDS):
            for k in range(OCC_HEAVY_LIVE):
                r[k] = 0.5 * r[k] + 0.25 * r[(k + 1) % OCC_HEAVY_LIVE]
        return r.sum(axis=0)
    if name == "occ_smem":
        i = np.arange(n)
        start = (i // block) * block
        mirror = start + (block - 1 - (i - start))      # block <= 1024 < tile: no wrap
        other = np.where(mirror < n, x[np.minimum(mirror, n - 1)], 0.0)
        return x + other
    raise ValueError(f"name must be one of {OCC_KERNELS}, got {name!r}")


#: (rtol, atol) of each occupancy kernel's float32 result against the float64 reference.
OCC_TOLERANCE = {"occ_light": (2 ** -22, 0.0), "occ_heavy": (1e-4, 1e-6), "occ_smem": (2 ** -23, 0.0)}


def check_occ_kernel(name: str, n: int, block: int, dyn_floats: int = 0, seed: int = 0) -> float:
    """Run one occupancy kernel on ``n`` fresh random floats with ``block`` threads (output NaN-poisoned)
    and compare with :func:`occ_reference`.  ``dyn_floats`` (``occ_smem`` only) floats of dynamic
    shared memory.  Returns the max relative error.

    Raises:
        GPUUnavailable: CPU mode.  RuntimeError: a mismatch (index, both values, count).
    """
    n = check_int("n", n, 1)
    block = check_int("block", block, 1)
    dyn_floats = check_int("dyn_floats", dyn_floats, 0)
    if name not in OCC_KERNELS:
        raise ValueError(f"name must be one of {OCC_KERNELS}, got {name!r}")
    cp = backend.require_cupy("an occupancy kernel")
    k = kernels.function(OCC_FILE, name, OCC_OPTIONS)
    xh = np.random.default_rng(seed).uniform(0.5, 1.5, n).astype(np.float32)
    x = cp.asarray(xh)
    y = cp.full(n, cp.nan, dtype=cp.float32)
    grid = (-(-n // block),)
    if name == "occ_light":
        k(grid, (block,), (x, y, np.float32(2.0), np.float32(1.0), np.int32(n)))
    elif name == "occ_heavy":
        k(grid, (block,), (x, y, np.int32(n)))
    elif name == "occ_smem":
        k(grid, (block,), (x, y, np.int32(n), np.int32(dyn_floats)), shared_mem=4 * dyn_floats)
    else:
        raise ValueError(f"name must be one of {OCC_KERNELS}, got {name!r}")
    got = y.get().astype(np.float64)
    ref = occ_reference(name, xh, block)
    rtol, atol = OCC_TOLERANCE[name]
    err = np.abs(got - ref)
    bad = ~(err <= atol + rtol * np.abs(ref))       # NaN (unwritten) counts as bad
    if bad.any():
        first = np.flatnonzero(bad)[:5]
        shown = ", ".join(f"[{i}] got {got[i]!r} ref {ref[i]!r}" for i in first)
        raise RuntimeError(f"{name}(n={n}, block={block}, dyn_floats={dyn_floats}): {int(bad.sum())} of {n} "
                           f"outside rtol={rtol:g}, atol={atol:g}: {shown}")
    return float(np.max(err / np.maximum(np.abs(ref), 1e-30)))
