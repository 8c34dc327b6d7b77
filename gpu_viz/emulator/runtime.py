"""The emulator as a device: programs compiled from CUDA C, device arrays, launches, and a
CuPy-shaped facade so the GPU producers (``gpu_viz.record.*``) run unchanged on the CPU.

    from gpu_viz import emulator as em
    prog = em.compile(SOURCE, name="vector_add.cu")
    dev = em.Device()
    A, B = dev.asarray(a, name="A"), dev.asarray(b, name="B")
    C = dev.full(n, np.nan, np.float32, name="C")
    run = prog.launch("vector_add", grid=2, block=64, args=(A, B, C, np.int32(n)), device=dev)
    run.hazards, C.get()

    with em.emulated():            # backend.require_cupy() and kernels.load/function/bind_record
        tr = record.vector_add.trace(A, B, 64)   # now run here, from the kernel's PTX
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import types
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import isa, memops
from . import memory as mem
from . import nvrtc, opcodes, ptx
from .block import CONTROL
from .machine import Launch, Run

#: How every emulated figure and trace is labelled.
LABEL = "emulated on the CPU from the kernel's PTX"


def label(arch: str) -> str:
    try:
        major, minor = nvrtc.version()
        v = f", NVRTC {major}.{minor}"
    except nvrtc.NVRTCUnavailable:
        v = ""
    return f"{LABEL} ({arch}{v}); nothing was measured"


# -- device memory ----------------------------------------------------------------------------------

class DeviceArray:
    """An array in the emulated device's global memory (a numpy array with an address).

    Attributes:
        address: its first byte's device address.  name: what hazards call it ("C").
        shape, dtype, size, ndim, nbytes: as numpy's.
    """

    def __init__(self, device: "Device", host: np.ndarray, address: int, name: str, region: mem.Region):
        self.device = device
        self._a = host
        self.address = address
        self.name = name
        self.region = region

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    nbytes = property(lambda self: self._a.nbytes)

    @property
    def data(self):
        """``.data.ptr``: the device address, as CuPy spells it."""
        return types.SimpleNamespace(ptr=self.address)

    def get(self) -> np.ndarray:
        """A host copy."""
        return self._a.copy()

    def view_host(self) -> np.ndarray:
        """The device bytes themselves (no copy): for tests and players."""
        return self._a

    def __len__(self):
        return len(self._a)

    def __getitem__(self, key):
        if not isinstance(key, slice) or self._a.ndim != 1:
            raise TypeError("device arrays support 1-D slices only (x[a:b])")
        start, stop, step = key.indices(len(self._a))
        if step != 1:
            raise TypeError("device array slices must be contiguous")
        sub = self._a[start:stop]
        return DeviceArray(self.device, sub, self.address + start * self._a.itemsize, f"{self.name}[{start}:]",
                           self.region)

    def __setitem__(self, key, value):
        self._a[key] = np.asarray(value.get() if isinstance(value, DeviceArray) else value)
        if not self.region.initialized:
            # a host write defines those bytes, as a cudaMemcpy does for initcheck: mark them so a
            # kernel reading them is not told they are uninitialised
            shadow = self.region.get_shadow()
            if shadow is not None:
                elems = np.ravel(np.arange(self._a.size).reshape(self._a.shape)[key])
                first = self.address - self.region.base
                item = self._a.itemsize
                shadow.init[(first + elems[:, None] * item + np.arange(item)).reshape(-1)] = True

    def __repr__(self):
        return f"DeviceArray({self.name!r}, shape={self.shape}, dtype={self.dtype}, address=0x{self.address:x})"

    def reshape(self, *shape):
        return DeviceArray(self.device, self._a.reshape(*shape), self.address, self.name, self.region)

    def astype(self, dtype):
        return self.device.asarray(self._a.astype(dtype), name=self.name)


class Device:
    """The emulated GPU's global memory: allocations 256-byte aligned with 64 KiB red zones."""

    def __init__(self):
        self.space = mem.Space("global")
        #: {program serial: {name: Region}}: each module's __device__ variables on this device.
        self.module_globals: Dict[int, Dict[str, mem.Region]] = {}

    def _place(self, host: np.ndarray, name: Optional[str], initialized: bool, readonly: bool = False) -> DeviceArray:
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)
        base = self.space.next_base(mem.ALLOC_ALIGN, mem.ALLOC_GAP, mem.GLOBAL_BASE)
        name = name or f"buffer{len(self.space.regions)}"
        flat = host.reshape(-1).view(np.uint8)
        region = self.space.add(mem.Region(name=name, base=base, size=host.nbytes, data=flat,
                                           itemsize=max(1, host.dtype.itemsize), initialized=initialized,
                                           readonly=readonly))
        return DeviceArray(self, host, base, name, region)

    def asarray(self, a, dtype=None, name: Optional[str] = None) -> DeviceArray:
        """Copy host data to the device."""
        if isinstance(a, DeviceArray):
            return a
        host = np.array(a, dtype=dtype, copy=True)
        if host.ndim == 0:
            host = host.reshape(1)
        return self._place(host, name, True)

    def empty(self, shape, dtype=np.float32, name: Optional[str] = None) -> DeviceArray:
        """Uninitialised memory: a kernel reading it before writing it is an initcheck hazard."""
        return self._place(np.zeros(shape, dtype), name, False)

    def zeros(self, shape, dtype=np.float32, name: Optional[str] = None) -> DeviceArray:
        return self._place(np.zeros(shape, dtype), name, True)

    def full(self, shape, value, dtype=np.float32, name: Optional[str] = None) -> DeviceArray:
        return self._place(np.full(shape, value, dtype), name, True)

    def variable(self, var: ptx.Var) -> mem.Region:
        """A module's ``.global`` / ``.const`` variable, with its initial bytes."""
        size = max(var.size, 1)
        host = np.zeros(-(-size // 8) * 8, np.uint8)
        if var.init:
            host[:len(var.init)] = np.frombuffer(var.init, np.uint8)
        base = self.space.next_base(max(var.align, mem.ALLOC_ALIGN), mem.ALLOC_GAP, mem.GLOBAL_BASE)
        region = mem.Region(name=var.name, base=base, size=var.size, data=host, itemsize=1, initialized=True,
                            readonly=var.space == "const")
        return self.space.add(region)


# -- programs ---------------------------------------------------------------------------------------

_SERIAL = itertools.count()

class Program:
    """A compiled module: its PTX parsed, executors compiled per function on first launch.

    Attributes:
        module: the :class:`~gpu_viz.emulator.ptx.Module`.  ptx: the PTX text.
        source_name: the file name the source was compiled as (lines in hazards refer to it).
        arch: the target ("sm_75").  log: NVRTC's log (warnings).
    """

    def __init__(self, ptx_text: str, source_name: str, arch: str, log: str = "", source: Optional[str] = None):
        self.ptx = ptx_text
        self.module = ptx.parse(ptx_text)
        self.source_name = source_name
        self.source = source
        self.arch = arch
        self.log = log
        self._exec: Dict[str, list] = {}
        self.serial = next(_SERIAL)
        self._user_files = {k for k, p in self.module.files.items() if Path(p).name == Path(source_name).name}

    @property
    def kernels(self) -> List[str]:
        return self.module.entries

    def user_line(self, ins: Optional[ptx.Instr]) -> Optional[int]:
        return self.user_line_and_origin(ins)[0]

    def user_line_and_origin(self, ins: Optional[ptx.Instr]) -> Tuple[Optional[int], Optional[str]]:
        """The line of the source file the instruction comes from (the call site in it, when the
        code was inlined from a header), and "header.cuh:line" for the innermost location when that
        is in another file."""
        if ins is None or ins.loc is None:
            return None, None
        chain = ins.loc.chain()
        inner = chain[0]
        inner_txt = None
        if inner.file not in self._user_files:
            inner_txt = f"{Path(self.module.files.get(inner.file, '?')).name}:{inner.line}"
        for loc in chain:
            if loc.file in self._user_files:
                return loc.line, inner_txt
        return None, inner_txt

    def executors(self, fname: str, launch=None) -> list:
        """One executor per instruction of function ``fname`` (control flow: None, the block runs it).

        Raises:
            isa.Unsupported: an instruction the emulator does not execute, named with its source line.
        """
        if fname in self._exec:
            return self._exec[fname]
        fn = self.module.functions[fname]
        out = []
        for ins in fn.code:
            try:
                out.append(_compile(ins, fn))
            except isa.Unsupported as exc:
                raise self.located(exc) from None
        self._exec[fname] = out
        return out

    def located(self, exc: isa.Unsupported) -> isa.Unsupported:
        """``exc`` naming the source line of its instruction ("kernel.cu line 12"), if it does not yet."""
        if exc.where:
            return exc
        line = self.user_line(exc.instr)
        return isa.Unsupported(exc.instr, exc.why, f"{self.source_name} line {line}" if line else "")

    def globals_on(self, device: Device) -> Dict[str, mem.Region]:
        """This module's ``.global`` / ``.const`` variables, allocated once per device (kept on the
        device, so a new device never sees an old one's)."""
        regs = device.module_globals.get(self.serial)
        if regs is None:
            regs = {v.name: device.variable(v) for v in self.module.variables.values()
                    if v.space in ("global", "const") and not v.extern}
            device.module_globals[self.serial] = regs
        return regs

    def launch(self, kernel: str, grid, block, args: Sequence, device: Optional[Device] = None, **options) -> Run:
        """Run ``kernel`` once (see :class:`~gpu_viz.emulator.machine.Launch` for the options).

        Raises:
            machine.LaunchError: a launch the GPU would refuse.  isa.Unsupported: an instruction the
            emulator does not execute.
        """
        device = device or _default_device()
        return Launch(self, kernel, grid, block, args, device, **options).run()

    def set_global(self, name: str, data: bytes, device: Device) -> None:
        """Write the bytes of ``__device__`` variable ``name`` (e.g. a traced build's ``rec``)."""
        regs = self.globals_on(device)
        if name not in regs:
            raise KeyError(f"no __device__ variable {name!r} in {self.source_name}; it has {sorted(regs)}")
        r = regs[name]
        if len(data) != r.size:
            raise ValueError(f"__device__ {name} is {r.size} bytes in the module, given {len(data)}")
        r.data[:len(data)] = np.frombuffer(data, np.uint8)


def _compile(ins: ptx.Instr, fn: ptx.Function):
    if ins.base in CONTROL and not (ins.base == "bar" and ins.has(".warp")):
        return None
    if ins.base == "bar" and ins.has(".warp"):
        return memops.c_warpsync(ins, fn)
    c = memops.COMPILERS.get(ins.base) or opcodes.COMPILERS.get(ins.base)
    if c is None:
        raise isa.Unsupported(ins, "unknown instruction")
    return c(ins, fn)


@functools.lru_cache(maxsize=256)
def _compile_cached(source: str, name: str, options: Tuple[str, ...], arch: str) -> Program:
    text, log = nvrtc.compile_ptx(source, name, options, arch)
    return Program(text, name, arch, log, source)


def compile(source: str, name: str = "kernel.cu", options: Sequence[str] = (), arch: str = nvrtc.DEFAULT_ARCH,
            headers: bool = True) -> Program:
    """Compile CUDA C with NVRTC for ``arch`` and parse its PTX (cached by source and options).

    ``headers``: put ``kernels/`` on the include path (the course's ``reduce.cuh`` ...), as the GPU
    path does.

    Raises:
        TypeError: ``source`` is not a string.  nvrtc.NVRTCUnavailable: no NVRTC.
        gpu_viz.kernels.KernelCompileError: NVRTC's log.  ptx.PTXError: PTX this parser cannot read.
    """
    from ..kernels import BASE_OPTIONS, KERNEL_DIR, _headers_digest

    if not isinstance(source, str):
        raise TypeError(f"source must be a string of CUDA C, got {type(source).__name__}")
    opts = tuple(BASE_OPTIONS) + ((f"-I{KERNEL_DIR}", f"-DGPU_VIZ_HEADERS={_headers_digest()}") if headers else ()) \
        + tuple(options)
    if nvrtc.switched_off():   # before the cache: a program compiled earlier must not outlive the switch
        nvrtc.version()         # raises NVRTCUnavailable, naming the switch
    return _compile_cached(source, name, opts, arch)


def compile_file(file: str, options: Sequence[str] = (), traced: bool = False, arch: str = nvrtc.DEFAULT_ARCH) -> Program:
    """``kernels/<file>`` compiled as :func:`compile` does (``traced``: the traced build)."""
    from ..kernels import TRACED_OPTIONS, read_source

    opts = (tuple(TRACED_OPTIONS) if traced else ()) + tuple(options)
    return compile(read_source(file), name=file, options=opts, arch=arch)


_DEFAULT: Optional[Device] = None


def _default_device() -> Device:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Device()
    return _DEFAULT


# -- the CuPy-shaped facade ------------------------------------------------------------------------------

@dataclasses.dataclass
class Session:
    """One emulated "GPU" for the producers: a device, the architecture, launch options, and the
    runs it made (their hazards are the producers' callers' to read)."""

    device: Device
    arch: str
    options: Dict
    runs: List[Run] = dataclasses.field(default_factory=list)
    bound: Dict[int, bytes] = dataclasses.field(default_factory=dict)

    def label(self) -> str:
        return label(self.arch)

    # What backend.require_cupy and gpu_viz.kernels hand to the producers inside emulated(): the
    # session is reached through backend.EMULATED, so neither module imports the emulator.
    def facade(self) -> types.ModuleType:
        return facade(self)

    def load(self, name: str, options: Sequence[str] = (), traced: bool = False) -> "Program":
        return load(self, name, options, traced)

    def function(self, name: str, kernel: str, options: Sequence[str] = (), traced: bool = False):
        return function(self, name, kernel, options, traced)

    def bind_record(self, program: "Program", fields, symbol: str = "rec") -> None:
        bind_record(self, program, fields, symbol)


class _EmulatedKernel:
    """What ``kernels.function`` returns under emulation: call it as CuPy's RawKernel."""

    def __init__(self, session: Session, program: Program, name: str):
        self.session, self.program, self.name = session, program, name
        self.num_regs = None
        self.local_size_bytes = 0
        self.shared_size_bytes = sum(v.size for v in program.module.functions[name].shared)
        self.const_size_bytes = 0
        self.max_threads_per_block = program.module.functions[name].max_threads or 1024

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None):
        options = dict(self.session.options)
        if options.get("policy") == "random":
            # the k-th launch of a session interleaves its warps with seed + k: launched again, a racy
            # kernel meets another interleaving, as on silicon (the session stays replayable by its seed)
            options["seed"] = int(options.get("seed", 0)) + len(self.session.runs)
        run = self.program.launch(self.name, grid, block, args, device=self.session.device, shared_mem=shared_mem,
                                  **options)
        self.session.runs.append(run)
        return run


def facade(session: Session) -> types.ModuleType:
    """A module with the parts of CuPy the producers use, on the emulated device."""
    dev = session.device
    cp = types.ModuleType("cupy (emulated)")
    cp.ndarray = DeviceArray
    cp.asarray = lambda a, dtype=None: dev.asarray(a, dtype)
    cp.asnumpy = lambda a: a.get() if isinstance(a, DeviceArray) else np.asarray(a)
    cp.full = lambda shape, value, dtype=np.float32: dev.full(shape, value, dtype)
    cp.zeros = lambda shape, dtype=np.float32: dev.zeros(shape, dtype)
    cp.empty = lambda shape, dtype=np.float32: dev.empty(shape, dtype)
    cp.full_like = lambda a, value: dev.full(a.shape, value, a.dtype)
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "bool_"):
        setattr(cp, name, getattr(np, name))
    stream = types.SimpleNamespace(synchronize=lambda: None, ptr=0)
    cp.cuda = types.SimpleNamespace(get_current_stream=lambda: stream, Device=lambda *a: types.SimpleNamespace(
        attributes={"MultiProcessorCount": session.options.get("sm_count", 58)}))
    return cp


@contextlib.contextmanager
def emulated(arch: str = nvrtc.DEFAULT_ARCH, device: Optional[Device] = None, **launch_options):
    """Within the block, the GPU paths of the package run on the emulator: ``backend.require_cupy``
    returns :func:`facade`, ``gpu_viz.kernels.load/function/bind_record`` compile with NVRTC for
    ``arch`` and launch here, and ``backend.live_label()`` says "emulated ...".  Yields the
    :class:`Session` (its ``runs`` hold every launch's hazards).

    ``launch_options`` go to every launch (:class:`~gpu_viz.emulator.machine.Launch`); with
    ``policy="random"`` the k-th launch of the session (k = 0, 1, ...) uses ``seed + k``, so a
    producer that launches a racy kernel 100 times sees 100 interleavings, the same ones each time
    the session is opened with the same seed."""
    from .. import backend

    session = Session(device or Device(), arch, dict(launch_options))
    token = backend.EMULATED.set(session)
    try:
        yield session
    finally:
        backend.EMULATED.reset(token)


def current() -> Optional[Session]:
    from .. import backend

    return backend.EMULATED.get()


def load(session: Session, name: str, options: Sequence[str] = (), traced: bool = False) -> Program:
    return compile_file(name, options, traced, session.arch)


def function(session: Session, name: str, kernel: str, options: Sequence[str] = (), traced: bool = False):
    prog = load(session, name, options, traced)
    if kernel not in prog.module.functions:
        raise KeyError(f"no kernel {kernel!r} in {name}; kernels: {prog.kernels}")
    return _EmulatedKernel(session, prog, kernel)


def bind_record(session: Session, program: Program, fields, symbol: str = "rec") -> None:
    words = np.array([int(v.address) if isinstance(v, DeviceArray) else int(v) for _, v in fields], np.uint64)
    program.set_global(symbol, words.tobytes(), session.device)


def source_digest(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()[:12]
