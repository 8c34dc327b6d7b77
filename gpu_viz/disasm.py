"""The compiler's output for a kernel of ``kernels/``: PTX (the virtual ISA) and SASS (the SM's
machine code), as the course compiles it (NVRTC on a GPU, the local nvcc otherwise).

* :func:`ptx` -- the ``.entry`` of one kernel, from NVRTC (GPU mode) or nvcc.
* :func:`sass` -- its SASS, disassembled by ``cuobjdump -sass`` (instruction lines only).
* :func:`sass_instructions` -- the mnemonics of :func:`sass` output.

Each returns ``(text, label)``: the label says where the text came from, or why there is none.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Tuple

from . import backend, kernels
from .kernels import find_tool


def _entry(ptx_text: str, kernel: str) -> str:
    """The ``.entry kernel`` function of a PTX module (the whole module if not found)."""
    start = ptx_text.find(f".entry {kernel}(")
    if start < 0:
        return ptx_text
    start = ptx_text.rfind("\n", 0, start) + 1
    depth, i = 0, ptx_text.find("{", start)
    for j in range(i, len(ptx_text)):
        depth += {"{": 1, "}": -1}.get(ptx_text[j], 0)
        if depth == 0:
            return ptx_text[start:j + 1]
    return ptx_text[start:]


def _target_arch() -> Tuple[str, str]:
    b = backend.detect()
    if b.is_gpu:
        return b.sm, f"for this GPU ({b.device_name}, {b.sm})"
    # CPU mode: the GPU the committed records were made on, so the code shown and the numbers
    # shown beside it describe one GPU (the deck's L4 when no record is committed)
    from .measure import records

    rec, label = records.recorded_hardware()
    if rec and rec.get("device"):
        info = records.device_of(rec)
        return info.sm, f"for {info.name} ({info.sm}) without a GPU here; {label}"
    return "sm_89", f"for {records.DECK_L4} (sm_89), compiled here without a GPU"


def ptx(file: str, kernel: str) -> Tuple[Optional[str], str]:
    """PTX of ``kernel``: NVRTC (as the course compiles it) on a GPU, else the local nvcc.

    Returns (text, label); text is None when neither compiler is available, the label says why.
    """
    arch, where = _target_arch()
    compute = arch.replace("sm_", "compute_")
    src = kernels.read_source(file)
    if backend.has_gpu():
        try:
            from cupy_backends.cuda.libs import nvrtc
            prog = nvrtc.createProgram(src, file, [], [])
            try:
                nvrtc.compileProgram(prog, [f"-arch={compute}", *kernels.BASE_OPTIONS,
                                            f"-I{kernels.KERNEL_DIR}"])
                text = nvrtc.getPTX(prog)
            finally:
                nvrtc.destroyProgram(prog)
            text = text.decode() if isinstance(text, bytes) else text
            return _entry(text.rstrip("\x00"), kernel), f"PTX from NVRTC {where}"
        except Exception as exc:  # fall through to nvcc
            nvrtc_error = f"NVRTC failed: {type(exc).__name__}"
    else:
        nvrtc_error = ""
    nvcc = find_tool("nvcc")
    if nvcc is None:
        return None, _with_why("PTX not shown: no GPU (NVRTC) and no nvcc on this machine", nvrtc_error)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "k.ptx"
        proc = subprocess.run([nvcc, f"-arch={compute}", "-ptx", "-std=c++17", f"-I{kernels.KERNEL_DIR}",
                               "-o", str(out), str(kernels.kernel_path(file))], capture_output=True, text=True,
                               encoding="utf-8", errors="replace")
        if proc.returncode != 0:
            return None, _with_why(f"PTX not shown: nvcc failed: {_first_line(proc.stderr)}", nvrtc_error)
        return _entry(out.read_text(encoding="utf-8"), kernel), _with_why(f"PTX from nvcc {where}", nvrtc_error)


def _nvrtc_cubin(file: str, arch: str) -> bytes:
    """A cubin of ``kernels/<file>`` for ``arch`` from NVRTC (GPU mode: NVRTC is known to load)."""
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(kernels.read_source(file), file, [], [])
    try:
        nvrtc.compileProgram(prog, [f"-arch={arch}", *kernels.BASE_OPTIONS, f"-I{kernels.KERNEL_DIR}"])
        return bytes(nvrtc.getCUBIN(prog))
    finally:
        nvrtc.destroyProgram(prog)


def sass(file: str, kernel: str) -> Tuple[Optional[str], str]:
    """SASS (the machine code the SM runs) of ``kernel``, disassembled by cuobjdump -sass.

    The cubin comes from NVRTC on a GPU (as the course compiles it), else from the local nvcc.
    Returns (text, label); text is None when no cubin or no cuobjdump can be had, the label says why.
    Only instruction lines are kept (address, instruction), the padding after EXIT is dropped.
    """
    arch, where = _target_arch()
    if find_tool("cuobjdump") is None:
        return None, NO_CUOBJDUMP

    def disassemble(cubin):
        return _cuobjdump(cubin, kernel)

    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        origin, why, proc = None, "", None
        if backend.has_gpu():
            try:
                cubin.write_bytes(_nvrtc_cubin(file, arch))
                proc = disassemble(cubin)
                if proc.returncode == 0:
                    origin = "NVRTC"
                else:  # e.g. a cuobjdump older than the NVRTC that wrote the cubin
                    why = "NVRTC's cubin: unreadable by this cuobjdump"
            except Exception as exc:
                why = f"NVRTC's cubin: {type(exc).__name__}"
        if origin is None:
            nvcc = find_tool("nvcc")
            if nvcc is None:
                return None, _with_why("SASS not shown: no GPU (NVRTC) and no nvcc to build a cubin", why)
            proc = subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-std=c++17", f"-I{kernels.KERNEL_DIR}",
                                   "-o", str(cubin), str(kernels.kernel_path(file))], capture_output=True, text=True,
                                   encoding="utf-8", errors="replace")
            if proc.returncode != 0:
                return None, _with_why(f"SASS not shown: nvcc failed: {_first_line(proc.stderr)}", why)
            origin = "nvcc"
            proc = disassemble(cubin)
    if proc.returncode != 0:
        return None, _with_why(f"SASS not shown: cuobjdump failed: {_first_line(proc.stderr)}", why)
    rows = _instruction_rows(proc.stdout)
    if not rows:
        return None, f"SASS not shown: cuobjdump printed no instructions for {kernel}"
    label = f"SASS {where}: an {origin} cubin, disassembled by cuobjdump"
    return "\n".join(rows), _with_why(label, why)


#: :func:`sass`'s label where no cuobjdump is found.
NO_CUOBJDUMP = ("SASS not shown: cuobjdump not found on this machine "
                "(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")


def _cuobjdump(cubin, kernel: str) -> subprocess.CompletedProcess:
    """``cuobjdump -sass -fun kernel cubin``, its nvdisasm found beside it (pip wheels) or on PATH."""
    cuobjdump = find_tool("cuobjdump")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(os.path.dirname(t) for t in (cuobjdump, find_tool("nvdisasm")) if t) \
        + os.pathsep + env.get("PATH", "")
    return subprocess.run([cuobjdump, "-sass", "-fun", kernel, str(cubin)], capture_output=True, text=True,
                          encoding="utf-8", errors="replace", env=env)


def _instruction_rows(listing: str) -> list:
    """``/*addr*/  instruction`` of each instruction line of cuobjdump's listing, up to the first
    unpredicated EXIT (the padding after it dropped)."""
    rows = []
    for line in listing.splitlines():
        s = line.strip()
        if s.startswith("/*") and "*/" in s:
            addr, rest = s[2:s.index("*/")], s[s.index("*/") + 2:]
            instr = rest.split("/*")[0].strip().rstrip(";").strip()
            if not instr:
                continue
            rows.append(f"/*{addr}*/  {instr}")
            if instr == "EXIT":
                break
    return rows


def sass_of_cubin(cubin, kernel: str) -> Tuple[Optional[str], str]:
    """SASS of ``kernel`` in an existing ``cubin`` (e.g. one :func:`gpu_viz.kernels.nvcc_compile`
    kept), as :func:`sass` returns it: (text, label), text None when cuobjdump is missing or fails."""
    if find_tool("cuobjdump") is None:
        return None, NO_CUOBJDUMP
    proc = _cuobjdump(cubin, kernel)
    if proc.returncode != 0:
        return None, f"SASS not shown: cuobjdump failed: {_first_line(proc.stderr)}"
    rows = _instruction_rows(proc.stdout)
    return ("\n".join(rows), "SASS of the given cubin") if rows else (
        None, f"SASS not shown: cuobjdump printed no instructions for {kernel}")


#: The longest label :func:`sass` returns: it is printed above the listing on a slide, so a tool's
#: raw message (a temp path, a stack of errors) stays out of it.
LABEL_MAX_CHARS = 160


def _first_line(text: str, limit: int = 80) -> str:
    """The first non-empty line of a tool's stderr, cut to ``limit`` characters."""
    line = next((s.strip() for s in (text or "").splitlines() if s.strip()), "no message")
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _with_why(label: str, why: str) -> str:
    """``label``, plus the short reason NVRTC's cubin was not used when there is one."""
    out = f"{label}; {why}" if why else label
    return out if len(out) <= LABEL_MAX_CHARS else out[:LABEL_MAX_CHARS - 1] + "…"


def sass_instructions(text: str) -> list:
    """The instruction mnemonics of :func:`sass` output, e.g. ['MOV', 'S2R', ..., 'EXIT']."""
    out = []
    for line in (text or "").splitlines():
        instr = line.split("*/", 1)[-1].strip()
        if instr.startswith("@"):
            instr = instr.split(None, 1)[1]
        out.append(instr.split()[0].split(".")[0])
    return out


