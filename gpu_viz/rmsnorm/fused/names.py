"""The fused kernels' names and launch constants: the bottom layer of the fused ops.

Everything here is data about ``kernels/rmsnorm_fused.cu`` -- its launch shapes (passed to it as
-D options, so Python and CUDA cannot drift), its variants, casts and flags, and the extern "C"
names its macros instantiate -- and no GPU, torch or CuPy is needed to read it.
"""
from __future__ import annotations

import functools
import itertools
import re
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..dtypes import DTYPES, KERNEL_OPS, RMSNORM, RMSNORM_ADD, RMSNORM_GATE, dtype_name

FILE = "rmsnorm_fused.cu"

# ---------------------------------------------------------------------------------------
# launch configuration (named constants; the kernel file's DEF_* macros take them as -D values)

#: One warp per row up to this row length (32 lanes x the largest EPT).
WARP_ROW_MAX_N = 1024
#: Rows (warps) per block in the ``warp`` variant: 128 threads.
WARP_ROWS_PER_BLOCK = 4
#: Elements per thread kept in registers (template parameter EPT).
EPT_CHOICES: Tuple[int, ...] = (8, 16, 32)
#: The scalar path's ``block`` variant only exists at EPT 8 (EPT 16/32 would spill there).
SCALAR_BLOCK_EPT: Tuple[int, ...] = (8,)
#: ``block`` variant, rows shorter than MULTI_VECTOR_ROW_BYTES (and the scalar path): the
#: smallest EPT whose block is at most this many threads wins -- on the 16-byte path one vector
#: per thread, block = N / 8 (fp16/bf16): the shortest latency for short rows.
BLOCK_TARGET_THREADS = 1024
#: 16-byte path, rows of at least this many bytes (fp16 N >= 4096, fp32 N >= 2048): the smallest
#: EPT giving each thread at least MULTI_VECTOR_BYTES_PER_THREAD (two 16-byte loads in flight)
#: within MULTI_VECTOR_TARGET_THREADS threads: fp16 N=4096 -> 256 x EPT 16, 8192 -> 512 x
#: EPT 16, 16384 -> 512 x EPT 32.  The bytes counted are every input's (x, and the gate's for
#: rmsnorm_gate): the gate at fp16 N=4096 gets 512 x EPT 8 (one vector of x and one of gate per
#: thread).  Problems whose x, gate and y fit in L2 (:func:`gpu_viz.rmsnorm.fused.config.fits_l2`) get
#: one vector per thread instead, where that block has at most BLOCK_TARGET_THREADS (fp16/bf16
#: N <= 8192: where it was measured; fp32 and N=16384 keep the rule above).  The measurements
#: behind each choice: benchmarks/NOTES.md.
MULTI_VECTOR_ROW_BYTES = 8192
MULTI_VECTOR_BYTES_PER_THREAD = 32
MULTI_VECTOR_TARGET_THREADS = 512
#: 16-byte path: one warp per row only while the row fits in one EPT-8 chunk per lane
#: (N <= 256); longer rows (e.g. 768) get a ``block`` of N / 8 threads (96 = 3 warps) rather
#: than a warp padded to EPT 32 (many more registers, lower occupancy).
WARP_ROW_MAX_N_VECTOR = 32 * 8
#: ... within the kernel's ``__launch_bounds__`` (BLOCK_MAX_THREADS(EPT) in the .cu file, from here).
BLOCK_MAX_THREADS: Dict[int, int] = {8: 1024, 16: 1024, 32: 512}
#: Rows longer than the register-resident limit go to ``wide``: 1024 threads, two passes.
WIDE_THREADS = 1024
#: The kernel file's launch-shape macros, from the constants above (-D; its defaults match).
LAUNCH_DEFINES: Tuple[str, ...] = (
    f"-DWARP_BLOCK_THREADS={32 * WARP_ROWS_PER_BLOCK}", f"-DWIDE_THREADS={WIDE_THREADS}",
    *(f"-DBLOCK_MAX_THREADS_E{e}={t}" for e, t in sorted(BLOCK_MAX_THREADS.items())))
#: gridDim.x limit.
MAX_GRID_X = 2**31 - 1
#: Row length limit (the kernels index a row with int).
MAX_N = 2**31 - 1

#: The kernel file's variants: one warp per row, one block per row (the row in registers), one
#: block per row re-reading it (any N).
WARP, BLOCK, WIDE = "warp", "block", "wide"
VARIANTS: Tuple[str, ...] = (WARP, BLOCK, WIDE)
#: Cast orders (``cast=`` of the public ops): FP32 rounds once, ``T(a * w * r)``; LLAMA rounds
#: the normalised value to x's dtype before the weight, ``T(T(a * r) * w)``, as HF's
#: LlamaRMSNorm (``self.weight * hidden_states.to(input_dtype)``).
CAST_FP32, CAST_LLAMA = "fp32", "llama"
CASTS: Tuple[str, ...] = (CAST_FP32, CAST_LLAMA)
#: The kernels' flags argument (FLAG_* in the .cu file).
FLAG_FITS_L2, FLAG_LLAMA = 1, 4
#: Name suffix of the extended-output build (``-DRMSNORM_OUT_EXT=1``, a module of its own): the
#: kernels a call with a ``weight_offset`` or the llama cast launches.  The plain names hold only
#: the plain output ``T(a * w * r)``, so the common call runs no code for the other two forms
#: (kernels/rmsnorm_fused.cu, OUT_PLAIN).  It follows ``_w32``: ``..._e8_w32_x``.
OUT_EXT_SUFFIX = "_x"
#: kernels/rmsnorm_launcher.cpp's numbers for the ops and the casts.
OP_ID: Dict[str, int] = {RMSNORM: 0, RMSNORM_GATE: 1, RMSNORM_ADD: 2}
CAST_ID: Dict[str, int] = {CAST_FP32: 0, CAST_LLAMA: 1}


def check_cast(cast) -> str:
    """``cast`` if it is one of :data:`CASTS`, else ValueError naming them."""
    if cast not in CASTS:
        raise ValueError(f"cast must be one of {CASTS} ('llama': HF LlamaRMSNorm's order, the normalised "
                         f"value rounded to x's dtype before the weight), got {cast!r}")
    return cast


# ---------------------------------------------------------------------------------------
# kernel names and builds

def kernel_name(op: str, variant: str, dtype, vec: int, ept: Optional[int] = None, *,
                aligned: bool = True, weight_dtype=None, out_ext: bool = False) -> str:
    """The kernel's extern "C" name, e.g. ``rmsnorm_gate_block_f16_v8_e16``; ``aligned=False``
    names the element-by-element twin (``_u8``) of a 16-byte kernel, ``weight_dtype`` float32
    with fp16/bf16 x the fp32-weight build (``_w32``), ``out_ext`` the extended-output build
    (``_x``: see :data:`OUT_EXT_SUFFIX` and :func:`out_ext`)."""
    dt = dtype_name(dtype)
    suffix = DTYPES[dt][0]
    name = f"{op}_{variant}_{suffix}_{'v' if aligned or vec == 1 else 'u'}{vec}"
    name = name if variant == WIDE else f"{name}_e{ept}"
    return name + ("_w32" if w32(dt, weight_dtype) else "") + (OUT_EXT_SUFFIX if out_ext else "")


def w32(dt: str, weight_dtype) -> bool:
    """Whether x of dtype ``dt`` with ``weight_dtype`` takes the fp32-weight build (``_w32``)."""
    return weight_dtype is not None and dt != "float32" and dtype_name(weight_dtype) == "float32"


def out_ext(offset: float, llama: bool) -> bool:
    """Whether a call needs the extended-output kernels (``_x``): the llama cast, or a
    weight_offset that is not 0 as the kernel's float32 argument (where it rounds to 0 the
    kernel would add nothing: the plain output is the same bits)."""
    return bool(llama) or float(np.float32(offset)) != 0.0


def build_of(kernel: str) -> Tuple[bool, bool]:
    """``(w32, out_ext)``: the module a kernel name belongs to (its suffixes)."""
    ext = kernel.endswith(OUT_EXT_SUFFIX)
    return (kernel[:-len(OUT_EXT_SUFFIX)] if ext else kernel).endswith("_w32"), ext


def kernel_names() -> List[str]:
    """Every kernel the file defines (as its DEF_SCALAR / DEF_VECTOR macros instantiate them), in
    every build: plain, fp32 weight (``_w32``), extended output (``_x``) and both."""
    return list(_kernel_name_list())


@functools.lru_cache(maxsize=None)
def kernel_name_set() -> "frozenset[str]":
    """:func:`kernel_names` as a set (cached: the forced-config check asks it)."""
    return frozenset(_kernel_name_list())


@functools.lru_cache(maxsize=None)
def _kernel_name_list() -> Tuple[str, ...]:
    names = []
    for dt, (_, _, vec16, _) in DTYPES.items():
        for wdt, ext in itertools.product((None,) if dt == "float32" else (None, "float32"), (False, True)):
            for op in KERNEL_OPS:
                for vec, aligned in ((1, True), (vec16, True), (vec16, False)):
                    kw = {"aligned": aligned, "weight_dtype": wdt, "out_ext": ext}
                    names += [kernel_name(op, WARP, dt, vec, e, **kw) for e in EPT_CHOICES]
                    blocks = SCALAR_BLOCK_EPT if vec == 1 else EPT_CHOICES
                    names += [kernel_name(op, BLOCK, dt, vec, e, **kw) for e in blocks]
                    names.append(kernel_name(op, WIDE, dt, vec, **kw))
    return tuple(names)


_NAME = re.compile(rf"^({'|'.join(sorted(KERNEL_OPS, key=len, reverse=True))})_({'|'.join(VARIANTS)})"
                   rf"_({'|'.join(v[0] for v in DTYPES.values())})_([vu])(\d+)(?:_e(\d+))?(_w32)?({OUT_EXT_SUFFIX})?$")
_SUFFIX_TO_DTYPE = {v[0]: k for k, v in DTYPES.items()}


def describe_kernel(name: str) -> Dict:
    """``{"op", "variant", "dtype", "vec", "ept", "aligned", "weight_dtype", "out_ext"}`` parsed
    from a kernel name (``weight_dtype`` None: x's; ``out_ext`` True: the extended-output build,
    ``_x``).

    Raises:
        ValueError: not a name of this file's kernels.
    """
    m = _NAME.match(name)
    if not m:
        raise ValueError(f"{name!r} is not a kernel of {FILE}")
    op, variant, suffix, v, vec, ept, w, ext = m.groups()
    return {"op": op, "variant": variant, "dtype": _SUFFIX_TO_DTYPE[suffix], "vec": int(vec),
            "ept": int(ept) if ept else None, "aligned": v == "v", "weight_dtype": "float32" if w else None,
            "out_ext": ext is not None}


@functools.lru_cache(maxsize=None)  # on every call's path
def compile_options(dtype, w32: bool = False, out_ext: bool = False) -> Tuple[str, ...]:
    """The -D options kernels/rmsnorm_fused.cu is compiled with for ``dtype`` (one module per
    dtype; the launch shapes are this module's constants, so Python and CUDA cannot drift);
    ``w32``: the fp16/bf16 kernels with an fp32 weight; ``out_ext``: the extended-output kernels
    (``_x``, :data:`OUT_EXT_SUFFIX`).  Each of those is a module of its own, built on first use."""
    opts = (f"-DRMSNORM_DTYPES={DTYPES[dtype_name(dtype)][3]}",) + LAUNCH_DEFINES
    return opts + (("-DRMSNORM_WEIGHT_F32=1",) if w32 else ()) + (("-DRMSNORM_OUT_EXT=1",) if out_ext else ())
