"""Write-the-kernel exercises: the learner's CUDA C is run, and the verdict comes from the run.

Data path: the learner's source --(NVRTC)--> PTX --> for each launch shape of the task
(:class:`Case`), fresh inputs and NaN-poisoned outputs --> a run: on a GPU the silicon (in a child
process, so a kernel that never ends cannot freeze the notebook) plus the emulator's hazard pass
on the same source; in CPU mode the emulator alone --> :class:`Observation` per case --> the
task's explanations (the first that recognises the outcomes names the mistake) --> a
:class:`~gpu_viz.exercises.core.Verdict`.

Rules the graders keep (issue tests hold them to it):

* a kernel whose values are right at every shape and whose run is free of hazards passes: no
  pattern in its source can fail it (a source-reading note may be added, never a failure);
* a failure names what the run showed -- which element, which launch, which line -- and, where one
  of the task's classic mistakes explains every failing launch, that mistake; never a guess
  dressed as a diagnosis, never the answer itself;
* any answer -- not a string, empty, not CUDA, a wrong kernel name or signature, a compile error,
  a hang -- gets a verdict, never a traceback.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import backend, kernels
from .core import Verdict

#: Elements of poison after each output array: on a GPU a write past the end lands there (the
#: emulator also reports it, by element).
PAD = 1024
#: Seconds a learner's kernel may run on the GPU before its child process is stopped.
GPU_TIMEOUT_S = 30.0
#: Warp-instructions (and seconds) a learner's kernel may take per launch in the emulator, unless
#: the task says (``KernelTask.budget``); grading stops at the first launch that runs away.
EMU_BUDGET = 1_000_000
EMU_SECONDS = 8.0
#: Set (seconds > 0), both time limits above take its value: a class's grading machine sets it
#: (gpu_viz.classkit's nbgrader_config.py) for kernels nbgrader runs.
KERNEL_TIMEOUT_ENV = "GPU_VIZ_KERNEL_TIMEOUT_S"


def time_limits() -> Tuple[float, float]:
    """(seconds the GPU child process may run, seconds one emulated launch may run):
    :data:`GPU_TIMEOUT_S` and :data:`EMU_SECONDS`, or both :data:`KERNEL_TIMEOUT_ENV`'s value.

    Raises:
        ValueError: :data:`KERNEL_TIMEOUT_ENV` is set to anything but a finite number of seconds > 0.
    """
    raw = os.environ.get(KERNEL_TIMEOUT_ENV, "").strip()
    if not raw:
        return GPU_TIMEOUT_S, EMU_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError(f"{KERNEL_TIMEOUT_ENV} must be a number of seconds > 0, got {raw!r}")
    return value, value
#: The name a learner's source compiles as (the lines in messages are its lines).
SOURCE_NAME = "your_kernel.cu"


@dataclasses.dataclass(frozen=True)
class Param:
    """A kernel parameter: ``role`` "in" (a device array the kernel reads), "out" (poisoned with
    NaN (floats) or a sentinel (ints), checked), "inout" (given values, checked), or "scalar"."""

    name: str
    role: str
    dtype: str


@dataclasses.dataclass(frozen=True)
class Case:
    """One launch: grid and block (1-3 ints each), sizes (``{"n": 100}``), dynamic shared memory."""

    grid: Tuple[int, ...]
    block: Tuple[int, ...]
    sizes: Dict[str, int]
    shared_mem: int = 0

    def label(self) -> str:
        parts = [f"{k}={v:,}" for k, v in self.sizes.items()]
        g = self.grid[0] if len(self.grid) == 1 else self.grid
        b = self.block[0] if len(self.block) == 1 else self.block
        return "(" + ", ".join(parts + [f"grid={g}", f"block={b}"]) + ")"


@dataclasses.dataclass
class Observation:
    """What one launch did.

    Attributes:
        case: the launch.  inputs: the host arrays and scalars passed (by parameter name).
        outputs: each "out"/"inout" array as it came back, PAD elements of poison after its length.
        want: the reference outputs (float64 or exact), the array's length.
        ok: the values are right (within the task's tolerance) and nothing was written past an end.
        hazards: the emulator's error hazards of this launch (on a GPU: its hazard pass, if run).
        notes: hazards of severity "note".
        completed: the run finished (no hang, no budget exceeded, no trap).
    """

    case: Case
    inputs: Dict[str, object]
    outputs: Dict[str, np.ndarray]
    want: Dict[str, np.ndarray]
    ok: bool = True
    hazards: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    completed: bool = True
    bad: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def length(self, name: str) -> int:
        return self.want[name].shape[0]

    def written(self, name: str) -> np.ndarray:
        """Which elements (length + PAD) of output ``name`` were written: an "out" array's no longer
        hold the poison; an "inout" array's differ from what was given (0 in the padding)."""
        a = self.outputs[name]
        if name in self.inputs and not np.isscalar(self.inputs[name]):
            given = np.zeros_like(a)
            given[:self.length(name)] = self.inputs[name]
            return a != given
        return ~np.isnan(a) if a.dtype.kind == "f" else a != _int_poison(a.dtype)

    def past_end(self, name: str) -> np.ndarray:
        """Indices >= the length that were written."""
        w = self.written(name)
        n = self.length(name)
        return np.flatnonzero(w[n:]) + n


def _int_poison(dtype) -> int:
    return np.iinfo(dtype).max if np.dtype(dtype).kind == "u" else -(2 ** (8 * np.dtype(dtype).itemsize - 1))


Explanation = Callable[[List[Observation]], Optional[str]]


@dataclasses.dataclass
class KernelTask:
    """A write-the-kernel exercise.

    Attributes:
        id: the exercise id.  kernel: the ``extern "C" __global__`` name the learner writes.
        params: the kernel's parameters in order.
        cases: the launches (each run on fresh inputs).
        make_inputs: ``make_inputs(case, rng) -> {name: array or scalar}`` for the "in" / "inout" /
            "scalar" parameters.
        reference: ``reference(case, inputs) -> {name: expected array}`` for "out" / "inout" arrays.
        tolerance: ``tolerance(case, inputs, name) -> atol`` (0: exact).
        explanations: ordered: the first that returns a message names the mistake.
        success: the message of a pass.
        narrow_index_fails: a 32-bit loop index widened for addressing fails the task (else a note).
        narrow_index_note: whether that note is given at all (False where the task's loops are short
            counters that cannot overflow, and the note's grid-stride warning would mislead).
        hazard_cases: the cases run in the emulator's hazard pass on a GPU (indices; None: all).
        budget: ``budget(case) -> warp-instructions`` the emulator allows a launch (a few times what
            a right kernel needs: a runaway is stopped soon); default :data:`EMU_BUDGET`.
        runaway_explanations: ``f(observation) -> message`` for a launch that did not finish.
        targets: checked once every launch is right and hazard-free: ``f(observations) -> message``
            for a run that misses a target counted from the run itself (sectors per request, bank
            conflicts: ``observation.run`` is the emulator's run of that launch), the message
            saying how far off it is; the first that returns one fails the answer.
        launch_options: ``f(case) -> dict`` of emulator launch options for that case (e.g.
            ``{"policy": "random", "seed": 3}``: seeded warp interleavings, so a race shows).
        recorded_cases: indices of the cases the emulator runs with its event log, so a target can
            tell which thread wrote which element (:func:`writes_by_thread`); keep them small.
    """

    id: str
    kernel: str
    params: Tuple[Param, ...]
    cases: Tuple[Case, ...]
    make_inputs: Callable
    reference: Callable
    tolerance: Callable
    explanations: Tuple[Explanation, ...] = ()
    success: str = ""
    narrow_index_fails: bool = False
    narrow_index_note: bool = True
    hazard_cases: Optional[Tuple[int, ...]] = None
    budget: Optional[Callable[[Case], int]] = None
    runaway_explanations: Tuple[Callable[[Observation], Optional[str]], ...] = ()
    targets: Tuple[Explanation, ...] = ()
    launch_options: Optional[Callable[[Case], Dict]] = None
    recorded_cases: Tuple[int, ...] = ()

    # -- the verdict ---------------------------------------------------------------------------------

    def grade(self, code, seed: Optional[int] = None) -> Verdict:
        """Run the learner's ``code`` at every case and return the verdict (never raises for a bad
        answer).  NumPy's floating-point warnings are off while it grades: a kernel's garbage (NaN,
        bit patterns of the wrong type) is the verdict's to describe, not a warning in the notebook."""
        with np.errstate(all="ignore"):
            return self._grade(code, seed)

    def _grade(self, code, seed: Optional[int]) -> Verdict:
        bad = self._reject(code)
        if bad is not None:
            return bad
        rng = np.random.default_rng(seed)
        try:
            program = self._compile(code)
        except kernels.KernelCompileError as exc:
            return Verdict(self.id, False, _compile_message(exc))
        except Exception as exc:  # noqa: BLE001  (NVRTC missing and no GPU: not graded here)
            from ..emulator import NVRTCUnavailable
            if isinstance(exc, NVRTCUnavailable) and not backend.has_gpu():
                # Verdict.text() already says "not graded": the message says why and what to install
                return Verdict(self.id, None, "your kernel was not run: without a GPU it runs in the emulator, "
                               "which needs NVRTC (pip install 'gpu-viz[emulator]', then restart the kernel; "
                               "Colab has it), or use a GPU runtime.",
                               not_graded_because="NVRTC is not installed")
            if isinstance(exc, NVRTCUnavailable):
                program = None
            else:
                return Verdict(self.id, False, f"could not read your kernel: {exc}")
        if program is not None:
            sig = self._signature_problem(program)
            if sig:
                return Verdict(self.id, False, sig)
        cases = [(c, self.make_inputs(c, rng)) for c in self.cases]
        try:
            if backend.has_gpu():
                obs, where = self._run_gpu(code, program, cases)
            else:
                obs, where = self._run_emulated(program, cases), None
        except _GradingError as exc:
            return Verdict(self.id, False, str(exc))
        return self._verdict(obs, program, where)

    def _reject(self, code) -> Optional[Verdict]:
        if code is None:
            return Verdict(self.id, None, "no answer yet: write your kernel in the string `code`.")
        if not isinstance(code, str):
            return Verdict(self.id, False, f"the answer must be a string of CUDA C (the kernel's source), got "
                           f"{type(code).__name__}")
        if not code.strip():
            return Verdict(self.id, False, "the kernel source is empty")
        if "\0" in code:
            # NVRTC reads the source as a C string: everything after a NUL byte would silently vanish
            at = code.index("\0")
            line = code.count("\n", 0, at) + 1
            col = at - (code.rfind("\n", 0, at) + 1) + 1
            return Verdict(self.id, False, f"your source holds a NUL byte (\\0) at line {line}, column {col}: the "
                           "compiler would stop reading there. Delete it (a paste from a PDF or a binary file?).")
        if "__global__" not in code:
            return Verdict(self.id, False, f"no kernel in your source: it must define `extern \"C\" __global__ void "
                           f"{self.kernel}({', '.join(p.name for p in self.params)})`")
        return None

    def _compile(self, code: str):
        from .. import emulator

        return emulator.compile(code, name=SOURCE_NAME, arch=_arch())

    def _signature_problem(self, program) -> Optional[str]:
        want = f"extern \"C\" __global__ void {self.kernel}({', '.join(_ctype(p) for p in self.params)})"
        fn = program.module.functions.get(self.kernel)
        if fn is None or not fn.entry:
            others = program.kernels
            if any(demangled_base(k) == self.kernel for k in others):
                mangled = next(k for k in others if demangled_base(k) == self.kernel)
                return (f"your kernel `{self.kernel}` is not declared extern \"C\": C++ renames it to `{mangled}` "
                        f"(its parameter types added), so the checker cannot find it by name. Declare it "
                        f"extern \"C\" (as the starter does): `{want}`")
            found = f" (your source defines {', '.join(others)})" if others else ""
            extern = "" if others else (" -- is it `extern \"C\"`? Without it the name is mangled" if "extern" not in
                                        (program.source or "") else "")
            return f"no kernel named `{self.kernel}`{found}{extern}: the task's kernel is `{want}`"
        sizes = [p.size for p in fn.params]
        expect = [8 if p.role != "scalar" else np.dtype(p.dtype).itemsize for p in self.params]
        if sizes != expect:
            return (f"`{self.kernel}` takes {len(sizes)} parameter(s) of {sizes} bytes; the task's kernel is `{want}` "
                    f"({len(expect)} parameters): keep the signature, the checker passes those arguments")
        return None

    # -- running ------------------------------------------------------------------------------------

    def _buffers(self, case: Case, inputs: Dict) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
        """(host arrays to pass, reference outputs): outputs poisoned and PAD long past their end."""
        want = self.reference(case, inputs)
        host = {}
        for p in self.params:
            if p.role in ("out", "inout"):
                n = want[p.name].shape[0]
                dt = np.dtype(p.dtype)
                poison = np.nan if dt.kind == "f" else _int_poison(dt)
                a = np.full(n + PAD, poison, dt)
                if p.role == "inout":      # given values, and zeros past the end (a count there counts)
                    a[:] = 0
                    a[:n] = np.asarray(inputs[p.name], dt)
                host[p.name] = a
        return host, want

    def _run_emulated(self, program, cases, record: bool = False) -> List[Observation]:
        from .. import emulator

        out = []
        for case, inputs in cases:
            dev = emulator.Device()
            host, want = self._buffers(case, inputs)
            args, outs = [], {}
            for p in self.params:
                if p.role == "scalar":
                    args.append(np.dtype(p.dtype).type(inputs[p.name]))
                elif p.role == "in":
                    a = np.asarray(inputs[p.name], p.dtype)
                    args.append(dev.asarray(a if a.size else np.zeros(1, p.dtype), name=p.name))
                else:
                    # an "out" array holds poison nothing wrote: reading it before writing is an
                    # uninitialised read (an atomicAdd into an output never zeroed)
                    d = dev.asarray(host[p.name], name=p.name)
                    if p.role == "out":
                        d.region.initialized = False
                    outs[p.name] = d
                    args.append(d)
            budget = self.budget(case) if self.budget is not None else EMU_BUDGET
            options = self.launch_options(case) if self.launch_options is not None else {}
            rec = record or any(case == self.cases[k] for k in self.recorded_cases if k < len(self.cases))
            try:
                run = program.launch(self.kernel, case.grid, case.block, args, device=dev, shared_mem=case.shared_mem,
                                     budget=budget, time_limit=time_limits()[1], record=rec, **options)
            except emulator.LaunchError as exc:
                raise _GradingError(f"launching your kernel at {case.label()} failed: {exc}") from None
            except emulator.Unsupported as exc:
                raise _GradingError(f"{exc} -- the emulator cannot run this kernel; on a GPU runtime it runs on the "
                                    "silicon") from None
            o = Observation(case, inputs, {k: v.get() for k, v in outs.items()}, want,
                            hazards=[h for h in run.hazards if h.severity == "error"],
                            notes=[h for h in run.hazards if h.severity != "error"], completed=run.completed)
            o.run = run
            # each array's place in the emulated memory: which element an address is, for the event log
            o.regions = {p.name: a.region for p, a in zip(self.params, args) if p.role != "scalar"}
            out.append(self._judge(o))
            if not run.completed:
                break               # a kernel that runs away (or traps) once is not run again
        return out

    def _run_gpu(self, code: str, program, cases):
        """The silicon decides the values (a child process, stopped after GPU_TIMEOUT_S); the
        emulator's hazard pass on the same source adds what silicon hides."""
        jobs = []
        for case, inputs in cases:
            host, want = self._buffers(case, inputs)
            jobs.append((case, inputs, host, want))
        results = run_in_child(code, self.kernel, self.params, [(c, i, h) for c, i, h, _ in jobs])
        obs = []
        for (case, inputs, host, want), outs in zip(jobs, results):
            obs.append(Observation(case, inputs, outs, want))
        if program is not None:
            idx = self.hazard_cases if self.hazard_cases is not None else range(len(cases))
            emu = self._run_emulated(program, [cases[k] for k in idx])
            for k, e in zip(idx, emu):
                obs[k].hazards = e.hazards
                obs[k].notes = e.notes
                obs[k].run = e.run          # the emulator's counts of the launch, for the targets
                obs[k].regions = e.regions  # and where its arrays lay, for its event log
        return [self._judge(o) for o in obs], backend.live_label()

    def _judge(self, o: Observation) -> Observation:
        ok = o.completed and not o.hazards
        for p in self.params:
            if p.role not in ("out", "inout"):
                continue
            got = o.outputs[p.name]
            want = o.want[p.name]
            n = want.shape[0]
            atol = self.tolerance(o.case, o.inputs, p.name)
            g = got[:n]
            if g.dtype.kind == "f":
                bad = ~(np.abs(g.astype(np.float64) - want) <= atol) | np.isnan(g)
            else:
                bad = g.astype(np.int64) != want.astype(np.int64)
            o.bad[p.name] = np.flatnonzero(bad)
            if bad.any() or o.past_end(p.name).size:
                ok = False
        o.ok = ok
        return o

    # -- the verdict ---------------------------------------------------------------------------------

    def _verdict(self, obs: List[Observation], program, where: Optional[str]) -> Verdict:
        provenance = where + " + the emulator's hazard pass" if where else _emu_label()
        details = [f"launches: {', '.join(o.case.label() for o in obs[:8])}{' ...' if len(obs) > 8 else ''}; "
                   f"{provenance}"]
        narrow = []
        if program is not None and (self.narrow_index_fails or self.narrow_index_note):
            from ..emulator import analysis

            narrow = analysis.narrow_induction(program, self.kernel)
        if program is not None and not all(o.ok for o in obs):
            # a parameter of another type (double* for float*) makes every later symptom misleading
            m = self._element_type_problem(program)
            if m:
                return _attach(Verdict(self.id, False, m, details), self, program, obs, _first_bad(obs))
        stuck = next((o for o in obs if not o.completed), None)
        if stuck is not None:
            # a launch that hung, ran away or trapped: its outputs mean nothing; say what happened
            for explain in self.runaway_explanations:
                m = explain(stuck)
                if m:
                    return _attach(Verdict(self.id, False, m, details), self, program, obs, obs.index(stuck))
            return _attach(Verdict(self.id, False, generic_message(self, [stuck]), details), self, program, obs,
                           obs.index(stuck))
        if all(o.ok for o in obs):
            if narrow and self.narrow_index_fails:
                v = Verdict(self.id, False, narrow_message(narrow[0], narrow_signed(program, narrow[0])), details)
                return _attach(v, self, program, obs, None)
            # notes worth a learner's time (a shuffle reading an inactive lane's value is the idiom of
            # a correct partial-warp reduction: not one of them)
            notes = [h.text() for o in obs for h in o.notes if h.kind != "shuffle-source"][:2]
            if narrow:
                notes.append(narrow_message(narrow[0], narrow_signed(program, narrow[0])))
            for target in self.targets:
                m = target(obs)
                if m:
                    return _attach(Verdict(self.id, False, m, details), self, program, obs, None)
            msg = self.success or f"right at all {len(obs)} launches, hazard-free."
            return Verdict(self.id, True, msg, details + [f"note: {n}" for n in notes])
        for explain in self.explanations:
            m = explain(obs)
            if m:
                return _attach(Verdict(self.id, False, m, details), self, program, obs, _first_bad(obs))
        m = generic_message(self, obs)
        return _attach(Verdict(self.id, False, m, details), self, program, obs, _first_bad(obs))

    def _element_type_problem(self, program) -> Optional[str]:
        """A float array of the task that the kernel reads or writes as floats of another size (a
        ``double*`` parameter where the task passes ``float*``), seen in the emulator's event log of
        the task's smallest launch; None when every float access matches its array's type."""
        arrays = {p.name: p for p in self.params if p.role != "scalar" and np.dtype(p.dtype).kind == "f"}
        if not arrays:
            return None
        case, inputs = min(self.cases_with_inputs(seed=0),
                           key=lambda ci: int(np.prod(ci[0].grid)) * int(np.prod(ci[0].block)))
        try:
            o = self._run_emulated(program, [(case, inputs)], record=True)[0]
        except _GradingError:
            return None
        fns = program.module.functions
        for ev in o.run.events or ():
            if "nbytes" not in ev or "addrs" not in ev:
                continue
            ins = fns[ev["func"]].code[ev["pc"]]
            size = next((_FLOAT_MODS[m] for m in ins.mods if m in _FLOAT_MODS), None)
            if size is None:
                continue
            addrs = np.asarray(ev["addrs"], np.uint64)
            for name, p in arrays.items():
                region = o.regions.get(name)
                want = np.dtype(p.dtype).itemsize
                if region is None or size == want:
                    continue
                if ((addrs >= np.uint64(region.base)) & (addrs < np.uint64(region.end))).any():
                    verb = "writes" if ev.get("write") else "reads"
                    prep = "to" if ev.get("write") else "from"
                    line = f" (line {ev['line']})" if ev.get("line") else ""
                    got = _C_FLOAT[size]
                    return (f"your kernel {verb} {size}-byte elements ({got}) {prep} {name}, a "
                            f"{_C_FLOAT[want]} array{line}: is a parameter declared {got}? The task passes "
                            f"`{_ctype(p)}`: the kernel is `extern \"C\" __global__ void {self.kernel}"
                            f"({', '.join(_ctype(q) for q in self.params)})`")
        return None

    def cases_with_inputs(self, seed=None):
        rng = np.random.default_rng(seed)
        return [(c, self.make_inputs(c, rng)) for c in self.cases]


class _GradingError(Exception):
    pass


#: Bytes of the float types of a PTX memory instruction (``ld.global.f64``, ``st.global.v4.f32``).
_FLOAT_MODS = {".f16": 2, ".bf16": 2, ".f16x2": 4, ".f32": 4, ".f64": 8}
_C_FLOAT = {2: "__half", 4: "float", 8: "double"}


def demangled_base(symbol: str) -> Optional[str]:
    """The function name inside an Itanium C++ mangled ``symbol`` ("_Z10vector_addPKfS0_Pfi" ->
    "vector_add"; a nested "_ZN2ns3fooEv" -> "foo"); None when ``symbol`` is not mangled."""
    m = re.match(r"_ZL?(N?)", symbol)
    if not m:
        return None
    pos, name = m.end(), None
    while True:
        n = re.match(r"(\d+)", symbol[pos:])
        if not n:
            return name
        k = int(n.group(1))
        pos += n.end()
        name = symbol[pos:pos + k]
        pos += k
        if not m.group(1):       # not nested: one name, then the parameter types
            return name


def writes_by_thread(o: "Observation", name: str) -> Optional[Dict[Tuple[int, int], np.ndarray]]:
    """Which elements of array ``name`` each thread wrote in launch ``o``: {(block, thread): the
    distinct element indices}, from the emulator's event log (the task's ``recorded_cases``);
    None when the launch was not recorded (or its log was cut short)."""
    run = getattr(o, "run", None)
    region = getattr(o, "regions", {}).get(name)
    if run is None or region is None or run.events is None or len(run.events) >= 200_000:
        return None
    per: Dict[Tuple[int, int], set] = {}
    for ev in run.events:
        if not ev.get("write") or "addrs" not in ev:
            continue
        addrs = np.asarray(ev["addrs"], np.int64)
        threads = np.asarray(ev.get("mem_threads", ev.get("threads", [])), np.int64)
        inside = (addrs >= region.base) & (addrs < region.end)
        for t, a in zip(threads[inside].tolist(), addrs[inside].tolist()):
            per.setdefault((int(ev["block"]), t), set()).add((a - region.base) // region.itemsize)
    return {k: np.array(sorted(v)) for k, v in per.items()}


def kernel_cells(eid: str, start: str, solution: str) -> Tuple[str, str]:
    """(the learner's cell, the reference solution's cell) of a kernel exercise, from its
    ``kernels/exercises/<name>.cu`` files: the source in a string, graded, the verdict shown."""
    from .core import exercise_source

    def cell(name, last):
        return (f"from gpu_viz import exercises as ex\ncode = r'''\n{exercise_source(name)}'''\n"
                f"v = ex.check({eid!r}, code)\n{last}")
    return cell(start, "v"), cell(solution, "v.require()")


def _first_bad(obs: List[Observation]) -> Optional[int]:
    return next((k for k, o in enumerate(obs) if not o.ok), None)


def _attach(v: Verdict, task: KernelTask, program, obs, k) -> Verdict:
    """Let the verdict replay the failing launch (``verdict.show()``) in the emulator."""
    if program is not None:
        case = obs[k].case if k is not None else obs[0].case
        inputs = obs[k].inputs if k is not None else obs[0].inputs
        v.replay = (task, program, case, inputs)
    return v


def _arch() -> str:
    if backend.has_gpu():
        return backend.detect().sm or "sm_75"
    from ..emulator import DEFAULT_ARCH

    return DEFAULT_ARCH


def _emu_label() -> str:
    from .. import emulator

    return emulator.label(_arch())


def _ctype(p: Param) -> str:
    base = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long", "uint32": "unsigned",
            "uint64": "unsigned long long", "float16": "__half"}[np.dtype(p.dtype).name]
    if p.role == "scalar":
        return f"{base} {p.name}"
    return f"{'const ' if p.role == 'in' else ''}{base}* {p.name}"


#: An error line of NVRTC's log: "your_kernel.cu(3): error: ...", "...(1): catastrophic error: ...",
#: "At end of source: error: ..." (an error number "error #20-D:" may follow the word).
_ERROR_LINE = re.compile(r"^(?:(?P<file>[^\s()]+)\((?P<line>\d+)\)|(?P<end>At end of source)):\s*"
                         r"(?:catastrophic )?error(?: #[\w-]+)?:\s*(?P<msg>.*)$")


def _compile_message(exc) -> str:
    """NVRTC's first error as "line N: what" (the learner's line numbers), with how many more; a hint
    where the error is one a notebook learner meets for a known reason (a host header)."""
    log = exc.log or ""
    errors = [m for m in (_ERROR_LINE.match(ln.strip()) for ln in log.splitlines()) if m]
    if not errors:
        first = next((ln.strip() for ln in log.splitlines() if "error" in ln), log.strip()[:200])
        return f"it does not compile -- NVRTC says: {first}"
    m = errors[0]
    if m.group("end"):
        where = "at the end of your source"
    elif Path(m.group("file")).name == SOURCE_NAME:
        where = f"line {m.group('line')}"
    else:
        where = f"{Path(m.group('file')).name}, line {m.group('line')}"
    msg = m.group("msg").strip()
    more = f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    hint = ""
    if msg.startswith("cannot open source file"):
        hint = (". NVRTC compiles device code on its own, without the host's C++ headers: drop the #include "
                "(printf and the math functions need none)")
    return f"it does not compile -- NVRTC says: {where}: {msg}{more}{hint}"


def narrow_signed(program, n) -> Optional[bool]:
    """Whether the 32-bit loop index ``n`` (:func:`gpu_viz.emulator.analysis.narrow_induction`) is
    signed, from the PTX that widens it (``mul.wide.s32`` / ``cvt.s64.s32``: int; ``.u32``:
    unsigned); None when that instruction does not say."""
    for fn in program.module.functions.values():
        if n.widened_pc >= len(fn.code):
            continue
        ins = fn.code[n.widened_pc]
        if ("reg", n.register) not in ins.args[1:]:
            continue
        if ".s32" in ins.mods:
            return True
        if ".u32" in ins.mods:
            return False
    return None


def narrow_message(n, signed: Optional[bool] = None) -> str:
    """Why a 32-bit loop index fails: a signed one overflows to negative indices, an unsigned one
    wraps to small ones (``signed`` None: both are said)."""
    fix = "Declare the index `long long` (or `size_t`), as the notebook's grid-stride kernel does."
    if signed:
        return (f"the loop index is a 32-bit int (line {n.line}): `i += stride` overflows past 2^31 - 1 when n is near "
                "2^31, before the test `i < n` can stop it, and the loop runs on with a negative index. " + fix)
    if signed is False:
        return (f"the loop index is a 32-bit unsigned int (line {n.line}): `i += stride` wraps past 2^32 - 1 back to "
                "a small index, where `i < n` holds again and the loop revisits elements it has done (once i + "
                "stride passes 4,294,967,295: a grid of more than 2^31 threads, or a 64-bit n). " + fix)
    return (f"the loop index is a 32-bit integer (line {n.line}): `i += stride` overflows 32 bits near the end of a "
            "large array, before the test `i < n` can stop it -- an int runs on with a negative index, an unsigned "
            "wraps to a small one and revisits elements. " + fix)


# -- generic explanations -------------------------------------------------------------------------------

def hazard_message(o: Observation) -> Optional[str]:
    """The first error hazard of a launch, in the emulator's words, with the launch named."""
    if not o.hazards:
        return None
    h = o.hazards[0]
    return f"at {o.case.label()}: {h.text()}"


def generic_message(task: KernelTask, obs: List[Observation]) -> str:
    """What went wrong, described (no mistake named): hang, hazards, writes past the end, then the
    first wrong element."""
    for o in obs:
        if not o.completed:
            h = next((h for h in o.hazards if h.kind in ("runaway", "trap", "barrier-divergence")), None)
            if h is not None:
                return f"at {o.case.label()}: {h.text()}"
            return f"at {o.case.label()} the kernel did not finish"
    for o in obs:
        m = hazard_message(o)
        if m:
            return m
    for o in obs:
        for p in task.params:
            if p.role not in ("out", "inout"):
                continue
            past = o.past_end(p.name)
            if past.size:
                return (f"at {o.case.label()}, {p.name}[{past[0]}] was written, past its end ({p.name} has "
                        f"{o.length(p.name):,} elements): a thread with an index >= the length stores anyway")
    for o in obs:
        for p in task.params:
            bad = o.bad.get(p.name)
            if bad is not None and bad.size:
                k = int(bad[0])
                got = o.outputs[p.name][k]
                want = o.want[p.name][k]
                nwrong = int(bad.size)
                if o.written(p.name)[:o.length(p.name)][bad].any():
                    return (f"at {o.case.label()}, {p.name}[{k}] = {_fmt(got)}, want {_fmt(want)} "
                            f"({nwrong:,} of {o.length(p.name):,} elements wrong)")
                return (f"at {o.case.label()}, {nwrong:,} of {o.length(p.name):,} elements of {p.name} were never "
                        f"written (first {p.name}[{k}])")
    return "wrong, but no launch shows why (please report this)"


def _fmt(v) -> str:
    v = np.asarray(v).item()
    if isinstance(v, float):
        return "NaN (never written)" if v != v else f"{v:.7g}"
    return f"{v}"


# -- the GPU child process ------------------------------------------------------------------------------

def run_in_child(code: str, kernel: str, params: Sequence[Param], jobs, timeout: float = None,
                 emulate: bool = False) -> List[Dict[str, np.ndarray]]:
    """Run ``kernel`` of ``code`` once per job ``(case, inputs, host_outputs)`` in a child process
    (``python -m gpu_viz.exercises.gpu_child``): on the GPU through CuPy, or in the emulator
    (``emulate``, for the tests of this path).  Returns each job's output arrays.

    Raises:
        _GradingError: the child did not finish within ``timeout`` seconds (it is stopped, the
        notebook goes on), or failed (its message).
    """
    timeout = time_limits()[0] if timeout is None else timeout
    with tempfile.TemporaryDirectory(prefix="gpu-viz-kernel-") as tmp:
        arrays = {}
        meta = {"code": code, "kernel": kernel, "emulate": emulate, "arch": _arch() if emulate else None,
                "params": [dataclasses.asdict(p) for p in params], "jobs": []}
        for j, (case, inputs, host) in enumerate(jobs):
            entry = {"grid": list(case.grid), "block": list(case.block), "shared_mem": case.shared_mem, "args": []}
            for p in params:
                key = f"j{j}_{p.name}"
                if p.role == "scalar":
                    entry["args"].append(["scalar", p.dtype, float(inputs[p.name]) if np.dtype(p.dtype).kind == "f"
                                          else int(inputs[p.name])])
                elif p.role == "in":
                    arrays[key] = np.asarray(inputs[p.name], p.dtype)
                    entry["args"].append(["array", key])
                else:
                    arrays[key] = host[p.name]
                    entry["args"].append(["array", key])
            meta["jobs"].append(entry)
        # pickle (protocol 5) between two halves of one program: arrays exactly, and no .npy header
        # to parse (numpy's parser of an unreadable header calls Python's tokenizer, whose error
        # then names neither the file nor the array)
        with open(os.path.join(tmp, "in.pkl"), "wb") as f:
            pickle.dump(arrays, f, protocol=5)
        with open(os.path.join(tmp, "job.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f)
        cmd = [sys.executable, "-m", "gpu_viz.exercises.gpu_child", tmp]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace",
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise _GradingError(
                f"your kernel did not finish within {timeout:g} s, so it was stopped (it ran in a separate "
                "process: the notebook is fine). A loop that never ends? Check that the loop variable advances "
                "and that every thread reaches every __syncthreads().") from None
        if proc.returncode != 0:
            err = (proc.stderr or proc.stdout).strip().splitlines()
            raise _GradingError(f"your kernel failed on the GPU: {err[-1] if err else 'no message'}")
        with open(os.path.join(tmp, "out.pkl"), "rb") as f:
            z = pickle.load(f)
            return [{p.name: z[f"j{j}_{p.name}"] for p in params if p.role in ("out", "inout")}
                    for j in range(len(jobs))]


def record(out=None):
    """Grade every kernel exercise's reference solution on this GPU (the silicon decides, the
    emulator's hazard pass beside it); save ``<gpu>-<date>-exercises.json``."""
    from ..measure import records
    from .core import KERNEL, exercises

    backend.require_gpu("the exercises record")
    rows = []
    for ex in exercises():
        if ex.kind != KERNEL:
            continue
        code = ex.solution.split("r'''", 1)[1].rsplit("'''", 1)[0]
        v = ex.check(code)
        rows.append({"op": "exercise", "impl": ex.id, "timing": "none", "ok": v.ok, "message": v.message})
        print(v.text())
    return records.save_record(records.new_record(rows), tag="exercises", directory=out)
