"""PTX text -> a :class:`Module` of functions, instructions, variables and source locations.

Data path: NVRTC's PTX (``gpu_viz.emulator.nvrtc``) --(:func:`parse`)--> :class:`Module`
--(``gpu_viz.emulator.machine``)--> an emulated launch.

The parser reads what NVRTC writes (and what inline ``asm`` adds): module directives, variable
declarations with initialisers, ``.entry`` / ``.func`` bodies with ``.reg`` / ``.local`` /
``.shared`` / ``.param`` declarations, labels, predicated instructions, call sequences and the
``.loc`` line information ``-lineinfo`` emits.  It also computes, for every branch, the
instruction where a diverged warp reconverges: the branch's immediate post-dominator.

Raises :class:`PTXError` naming the line of PTX it could not read; an instruction it can read
but the emulator cannot execute is refused later, by name and source line.
"""
from __future__ import annotations

import dataclasses
import re
import struct
from typing import Dict, List, Optional, Tuple

#: The special registers (``%tid.x`` ...) the emulator gives values to.
SPECIAL_REGISTERS = frozenset({
    "tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid", "smid", "nsmid", "gridid",
    "clock", "clock64", "clock_hi", "globaltimer", "globaltimer_lo", "globaltimer_hi",
    "lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt",
    "dynamic_smem_size", "total_smem_size", "aggr_smem_size", "warpsize"})

#: PTX fundamental types -> (bytes, kind): kind 'u' unsigned/bits, 's' signed, 'f' float,
#: 'p' predicate.  Packed and alternate float types are handled by the instructions that use them.
TYPES = {
    "pred": (1, "p"), "b8": (1, "u"), "u8": (1, "u"), "s8": (1, "s"),
    "b16": (2, "u"), "u16": (2, "u"), "s16": (2, "s"), "f16": (2, "h"), "bf16": (2, "bh"),
    "b32": (4, "u"), "u32": (4, "u"), "s32": (4, "s"), "f32": (4, "f"), "f16x2": (4, "u"),
    "bf16x2": (4, "u"), "tf32": (4, "u"),
    "b64": (8, "u"), "u64": (8, "u"), "s64": (8, "s"), "f64": (8, "f"), "b128": (16, "u"),
}


class PTXError(ValueError):
    """PTX the parser cannot read (the line is named)."""


@dataclasses.dataclass(frozen=True)
class Loc:
    """A source location from ``.loc``: file number, line, column, and where it was inlined."""

    file: int
    line: int
    col: int = 0
    inlined_at: Optional["Loc"] = None

    def chain(self) -> List["Loc"]:
        """This location, then each call site it was inlined at, innermost first."""
        out, loc = [], self
        while loc is not None:
            out.append(loc)
            loc = loc.inlined_at
        return out


@dataclasses.dataclass
class Var:
    """A variable declared in a state space (``.global``, ``.shared``, ``.local``, ``.const``,
    ``.param``): ``size`` bytes (0 for an ``extern`` array of unknown size), alignment, initial
    bytes (or None)."""

    name: str
    space: str
    type: str
    size: int
    align: int
    init: Optional[bytes] = None
    extern: bool = False


@dataclasses.dataclass
class Instr:
    """One PTX instruction.

    Attributes:
        op: the full opcode (``"add.rn.f32"``).  base: its first part (``"add"``).
        mods: the rest, each with its dot (``(".rn", ".f32")``).
        args: the operands, parsed (see :func:`parse_operand`).
        guard: ``(predicate register, negated)`` for ``@%p`` / ``@!%p``, else None.
        loc: the source location in force (``.loc``), or None.
        text: the instruction as written (for messages).
        index: its position in the function's code.
    """

    op: str
    base: str
    mods: Tuple[str, ...]
    args: List[tuple]
    guard: Optional[Tuple[str, bool]]
    loc: Optional[Loc]
    text: str
    index: int = 0

    def has(self, mod: str) -> bool:
        return mod in self.mods


@dataclasses.dataclass
class Function:
    """An ``.entry`` (kernel) or ``.func`` (device function) with its body.

    ``reconverge[i]`` is, for a branch at code index ``i``, the code index where the lanes that
    split there meet again (its immediate post-dominator), or :data:`EXIT` when they only meet
    at the function's end.
    """

    name: str
    entry: bool
    params: List[Var]
    retvals: List[Var]
    regs: Dict[str, str] = dataclasses.field(default_factory=dict)
    locals: List[Var] = dataclasses.field(default_factory=list)
    shared: List[Var] = dataclasses.field(default_factory=list)
    code: List[Instr] = dataclasses.field(default_factory=list)
    labels: Dict[str, int] = dataclasses.field(default_factory=dict)
    reconverge: Dict[int, int] = dataclasses.field(default_factory=dict)
    declared_only: bool = False
    max_threads: Optional[int] = None   # .maxntid (from __launch_bounds__)


#: The reconvergence point of branches whose sides only meet when the function ends.
EXIT = -1


@dataclasses.dataclass
class Module:
    """A parsed PTX module."""

    version: str
    target: str
    address_size: int
    variables: Dict[str, Var]
    functions: Dict[str, Function]
    files: Dict[int, str]

    @property
    def entries(self) -> List[str]:
        return [f.name for f in self.functions.values() if f.entry]


# -- lexical ------------------------------------------------------------------------------------

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LINE_DIRECTIVE = re.compile(r"\.(loc|file|version|target|address_size)\b")


def _statements(text: str):
    """Yield ``(kind, statement, ptx_line)``: kind 'dir' for a line directive (.loc ...), 'open' /
    'close' for braces, 'label', or 'stmt' for a ';'-terminated statement."""
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    buf: List[str] = []
    buf_line = 0
    inner = 0            # braces opened inside the current statement (initialisers, vector operands)
    skip_section = 0
    for no, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if skip_section:
            if skip_section == -1 and line and not line.startswith("{"):
                skip_section = 0            # a .section with no block
            else:
                if skip_section == -1:
                    skip_section = 0
                skip_section += line.count("{") - line.count("}")
                continue
        if not line:
            continue
        if not buf and line.startswith(".section"):
            # debug sections (their labels are not code): skipped with their { ... } block
            skip_section = (line.count("{") - line.count("}")) or -1
            continue
        i = 0
        while i < len(line):
            ch = line[i]
            stmt_so_far = "".join(buf).strip()
            if not stmt_so_far:
                if ch.isspace():
                    i += 1
                    continue
                buf_line = no
                if _LINE_DIRECTIVE.match(line, i):
                    yield "dir", line[i:], no
                    break
                if ch in "{}":
                    yield ("open" if ch == "{" else "close"), ch, no
                    i += 1
                    continue
                if ch != ".":
                    m = re.match(r"([$\w]+)\s*:(?!:)", line[i:])
                    if m:
                        yield "label", m.group(1), no
                        i += m.end()
                        continue
            if ch == "{":
                if "=" in stmt_so_far or _in_operands("".join(buf).lstrip()):
                    inner += 1          # part of the statement: an initialiser or a vector operand
                    buf.append(ch)
                    i += 1
                    continue
                yield "stmt", stmt_so_far, buf_line   # ".entry k(...) {": the head, then a block
                buf = []
                yield "open", ch, no
                i += 1
                continue
            if ch == "}":
                if inner:
                    inner -= 1
                    buf.append(ch)
                    i += 1
                    continue
                if stmt_so_far:
                    yield "stmt", stmt_so_far, buf_line
                buf = []
                yield "close", ch, no
                i += 1
                continue
            if ch == ";" and not inner:
                if stmt_so_far:
                    yield "stmt", stmt_so_far, buf_line
                buf = []
                i += 1
                continue
            buf.append(ch)
            i += 1
        if buf:
            buf.append(" ")
    stmt = "".join(buf).strip()
    if stmt:
        yield "stmt", stmt, buf_line


def _in_operands(s: str) -> bool:
    """Whether the statement read so far (left-stripped) is an instruction already past its opcode
    (so '{' opens a vector operand, not a block)."""
    return bool(s.strip()) and not s.startswith(".") and (" " in s or "\t" in s)


# -- operands -----------------------------------------------------------------------------------

_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)[uU]?$")
_FLOAT_HEX = re.compile(r"^0([fFdD])([0-9a-fA-F]+)$")
_IDENT = re.compile(r"^[$%A-Za-z_][$\w.]*$")


def parse_operand(tok: str) -> tuple:
    """One operand as a tuple:

    ``('reg', name)``, ``('sreg', name, component)``, ``('imm', int)``, ``('fimm', bits, 'f32'|'f64')``,
    ``('float', value)`` (a decimal float literal), ``('vec', [ops])``, ``('addr', base, offset)``
    with base an operand (``reg`` / ``sym`` / ``imm``), ``('sym', name)``, ``('not', op)``,
    ``('pair', op, op)`` (``%r|%p``), ``('sink',)`` (``_``).
    """
    t = tok.strip()
    if not t:
        raise PTXError("empty operand")
    if t == "_":
        return ("sink",)
    if t.startswith("!"):
        return ("not", parse_operand(t[1:]))
    if t.startswith("{") and t.endswith("}"):
        return ("vec", [parse_operand(x) for x in _split_commas(t[1:-1])])
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        m = re.match(r"^(.*?)\s*\+\s*(-?\s*[0-9a-fA-Fx]+)$", inner)
        if m and not _INT.match(inner):
            base, off = m.group(1), int(m.group(2).replace(" ", ""), 0)
        else:
            base, off = inner, 0
        b = parse_operand(base)
        if b[0] == "imm":
            return ("addr", ("imm", 0), b[1] + off)
        return ("addr", b, off)
    if "|" in t:
        a, b = t.split("|", 1)
        return ("pair", parse_operand(a), parse_operand(b))
    m = _FLOAT_HEX.match(t)
    if m:
        return ("fimm", int(m.group(2), 16), "f32" if m.group(1) in "fF" else "f64")
    if _INT.match(t):
        s = t.rstrip("uU")
        neg = s.startswith("-")
        s = s.lstrip("+-")
        v = int(s, 16) if s.lower().startswith("0x") else (int(s, 8) if len(s) > 1 and s.startswith("0") else int(s))
        return ("imm", -v if neg else v)
    if re.match(r"^[-+]?\d*\.\d*([eE][-+]?\d+)?$|^[-+]?\d+[eE][-+]?\d+$", t):
        return ("float", float(t))
    if t.startswith("%"):
        name = t[1:]
        base, _, comp = name.partition(".")
        if base in SPECIAL_REGISTERS:
            return ("sreg", base, comp)
        return ("reg", t)
    if _IDENT.match(t):
        return ("sym", t)
    raise PTXError(f"cannot read operand {tok!r}")


def _split_commas(s: str) -> List[str]:
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [x.strip() for x in out]


# -- declarations -------------------------------------------------------------------------------

_DECL = re.compile(r"^(?P<pre>(?:\.(?:extern|visible|weak|common)\s+)*)\.(?P<space>global|shared|local|const|param)"
                   r"(?P<attrs>(?:\s+\.(?:align\s+\d+|ptr\s*\.\w+(?:\s*\.align\s+\d+)?|v[248]|attribute\([^)]*\)))*)"
                   r"\s+\.(?P<type>\w+)\s+(?P<rest>.+)$", re.S)


def _parse_var(stmt: str, space_default: Optional[str] = None) -> Var:
    m = _DECL.match(stmt.strip())
    if not m:
        raise PTXError(f"cannot read declaration {stmt!r}")
    attrs = m.group("attrs")
    align_m = re.search(r"\.align\s+(\d+)", attrs)
    vec_m = re.search(r"\.v([248])\b", attrs)
    typ = m.group("type")
    if typ not in TYPES:
        raise PTXError(f"declaration of unknown type .{typ}: {stmt!r}")
    elem = TYPES[typ][0]
    if vec_m:
        elem *= int(vec_m.group(1))
    rest = m.group("rest").strip()
    init = None
    if "=" in rest:
        rest, init_s = rest.split("=", 1)
        rest = rest.strip()
        init = init_s.strip()
    nm = re.match(r"^([$\w.]+)\s*((?:\[\s*\d*\s*\])*)$", rest)
    if not nm:
        raise PTXError(f"cannot read variable name in {stmt!r}")
    name, dims = nm.group(1), nm.group(2)
    count, extern = 1, False
    for d in re.findall(r"\[\s*(\d*)\s*\]", dims):
        if d == "":
            extern, count = True, 0
        else:
            count *= int(d)
    size = elem * count
    data = _initialiser(init, typ, elem, size, stmt) if init is not None else None
    return Var(name=name, space=m.group("space") or space_default, type=typ, size=size,
               align=int(align_m.group(1)) if align_m else max(1, min(elem, 16)), init=data,
               extern=extern or ".extern" in m.group("pre"))


def _initialiser(text: str, typ: str, elem: int, size: int, stmt: str) -> bytes:
    vals = _split_commas(text.strip().lstrip("{").rstrip("}")) if text.strip().startswith("{") else [text]
    out = bytearray()
    nbytes, kind = TYPES[typ]
    for v in vals:
        v = v.strip()
        if not v:
            continue
        op = parse_operand(v)
        if op[0] == "imm":
            out += (op[1] & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "little")
        elif op[0] == "fimm":
            out += op[1].to_bytes(4 if op[2] == "f32" else 8, "little")
        elif op[0] == "float":
            out += struct.pack("<f" if nbytes == 4 else "<d", op[1])
        else:
            # an address of another variable (generic(sym)): kept as a relocation the loader fills
            raise PTXError(f"initialiser {v!r} in {stmt!r} is not supported (only numbers)")
    out += bytes(max(0, size - len(out)))
    return bytes(out[:size]) if size else bytes(out)


def _parse_params(text: str) -> List[Var]:
    params = []
    for p in _split_commas(text):
        p = p.strip()
        if not p:
            continue
        params.append(_parse_var(p if p.startswith(".param") else ".param " + p, "param"))
    return params


# -- the module ---------------------------------------------------------------------------------

_FUNC_HEAD = re.compile(r"^(?P<pre>(?:\.(?:visible|extern|weak)\s+)*)\.(?P<kind>entry|func)\s*"
                        r"(?:\((?P<ret>[^)]*)\)\s*)?(?P<name>[$\w.]+)\s*(?:\((?P<params>.*)\))?\s*(?P<perf>.*)$", re.S)


def parse(text: str) -> Module:
    """Parse PTX ``text`` into a :class:`Module` (reconvergence points computed).

    Raises:
        PTXError: a statement it cannot read, naming the PTX line.
    """
    p = _ModuleParser()
    handlers = {"dir": p.directive, "open": p.open_brace, "close": p.close_brace, "label": p.label,
                "stmt": p.statement}
    for kind, stmt, no in _statements(text):
        try:
            handlers[kind](stmt)
        except PTXError as exc:
            raise PTXError(f"PTX line {no}: {exc}") from None
    return p.module()


_PERF_DIRECTIVES = (".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".pragma", ".noreturn")


class _ModuleParser:
    """One :func:`parse` in progress, fed the lexer's items in order: the module's directives,
    variables and functions so far, the function whose body is open (``fn``), a function head
    still waiting for its ``{`` (``head``), the brace depth, and the ``.loc`` in force."""

    def __init__(self):
        self.version, self.target, self.address_size = "", "", 64
        self.variables: Dict[str, Var] = {}
        self.functions: Dict[str, Function] = {}
        self.files: Dict[int, str] = {}
        self.fn: Optional[Function] = None
        self.head: Optional[Function] = None
        self.depth = 0
        self.loc: Optional[Loc] = None
        self.inline_labels: Dict[Tuple[int, int, int], Loc] = {}

    def module(self) -> Module:
        return Module(version=self.version, target=self.target, address_size=self.address_size,
                      variables=self.variables, functions=self.functions, files=self.files)

    def directive(self, stmt: str) -> None:
        """A line directive: ``.version``, ``.target``, ``.address_size``, ``.file``, ``.loc``."""
        if stmt.startswith(".version"):
            self.version = stmt.split()[1]
        elif stmt.startswith(".target"):
            self.target = stmt.split(None, 1)[1].split(",")[0].strip()
        elif stmt.startswith(".address_size"):
            self.address_size = int(stmt.split()[1])
        elif stmt.startswith(".file"):
            m = re.match(r'\.file\s+(\d+)\s+"([^"]*)"', stmt)
            if m:
                self.files[int(m.group(1))] = m.group(2)
        elif stmt.startswith(".loc") and self.fn is not None:
            self.loc = _parse_loc(stmt, self.inline_labels)

    def open_brace(self, _brace: str) -> None:
        """``{``: at the top level after a function head, that function's body opens."""
        if self.depth == 0 and self.head is not None:
            self.fn, self.head, self.loc = self.head, None, None
        self.depth += 1

    def close_brace(self, _brace: str) -> None:
        """``}``: back at the top level, the open function is complete (labels checked,
        reconvergence points computed)."""
        self.depth -= 1
        if self.depth == 0 and self.fn is not None:
            _finish(self.fn)
            self.fn = None

    def label(self, name: str) -> None:
        if self.fn is None:
            raise PTXError(f"label {name} outside a function")
        self.fn.labels[name] = len(self.fn.code)

    def statement(self, stmt: str) -> None:
        if self.fn is None:
            self.module_statement(stmt)
        else:
            self.body_statement(stmt)

    def module_statement(self, stmt: str) -> None:
        """Outside a body: a function head's performance directive, a function head (``.entry`` /
        ``.func``, or an ``.extern`` declaration), or a module variable."""
        if self.head is not None and stmt.startswith(_PERF_DIRECTIVES):
            _perf_directive(self.head, stmt)
            return
        if stmt.startswith(".pragma"):
            return
        hm = _FUNC_HEAD.match(stmt)
        if hm and re.match(r"^(?:\.(?:visible|extern|weak)\s+)*\.(entry|func)\b", stmt):
            self.function_head(hm)
            return
        v = _parse_var(stmt)
        self.variables[v.name] = v

    def function_head(self, hm: "re.Match") -> None:
        """A function's head: declared only (``.extern``), or waiting for its body."""
        f = Function(name=hm.group("name"), entry=hm.group("kind") == "entry",
                     params=_parse_params(hm.group("params") or ""),
                     retvals=_parse_params(hm.group("ret") or ""))
        for d in re.findall(r"\.(?:maxntid|reqntid)\s+[\d,\s]+", hm.group("perf") or ""):
            _perf_directive(f, d)
        if ".extern" in (hm.group("pre") or ""):
            f.declared_only = True
            self.functions.setdefault(f.name, f)
        else:
            self.functions[f.name] = f
            self.head = f

    def body_statement(self, stmt: str) -> None:
        """Inside a body: register and variable declarations, directives, instructions."""
        fn = self.fn
        if stmt.startswith(".reg"):
            _declare_regs(fn, stmt)
        elif stmt.startswith((".local", ".shared", ".param", ".const", ".global")):
            self.body_variable(_parse_var(stmt))
        elif stmt.startswith(".pragma") or stmt.startswith((".maxntid", ".reqntid", ".maxnreg")):
            return
        elif stmt.startswith("."):
            raise PTXError(f"unsupported directive {stmt.split()[0]}")
        else:
            ins = _parse_instr(stmt, self.loc)
            ins.index = len(fn.code)
            fn.code.append(ins)

    def body_variable(self, v: Var) -> None:
        """A variable declared in a body: local and shared ones belong to the function; call-sequence
        parameters get their per-thread param space when first stored; others are the module's."""
        if v.space == "local":
            self.fn.locals.append(v)
        elif v.space == "shared":
            self.fn.shared.append(v)
        elif v.space != "param":
            self.variables[v.name] = v


def _perf_directive(f: Function, stmt: str) -> None:
    m = re.match(r"\.(maxntid|reqntid)\s+([\d,\s]+)", stmt)
    if m:
        n = 1
        for x in m.group(2).split(","):
            if x.strip():
                n *= int(x)
        f.max_threads = n


def _declare_regs(fn: Function, stmt: str) -> None:
    m = re.match(r"\.reg\s+(?:\.v[248]\s+)?\.(\w+)\s+(.+)$", stmt)
    if not m:
        raise PTXError(f"cannot read {stmt!r}")
    typ = m.group(1)
    if typ not in TYPES:
        raise PTXError(f"register type .{typ} is not supported")
    for part in _split_commas(m.group(2)):
        rm = re.match(r"^(%?[$\w]+)<(\d+)>$", part.strip())
        if rm:
            for k in range(int(rm.group(2))):
                fn.regs[f"{rm.group(1)}{k}"] = typ
        else:
            fn.regs[part.strip()] = typ


_LOC = re.compile(r"\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:\s*,\s*function_name\s+([$\w.]+)\s*,\s*inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")


def _parse_loc(stmt: str, labels) -> Optional[Loc]:
    m = _LOC.match(stmt)
    if not m:
        return None
    inl = None
    if m.group(5):
        inl = Loc(int(m.group(5)), int(m.group(6)), int(m.group(7)))
        # chains: the inlined_at location may itself be inside an inlined function; the most recent
        # .loc with that file/line provides its own inlined_at (what NVVM emits just before)
        key = (inl.file, inl.line, inl.col)
        outer = labels.get(key)
        if outer is not None and outer.inlined_at is not None:
            inl = dataclasses.replace(inl, inlined_at=outer.inlined_at)
    loc = Loc(int(m.group(1)), int(m.group(2)), int(m.group(3)), inl)
    labels[(loc.file, loc.line, loc.col)] = loc
    return loc


def _parse_instr(stmt: str, loc: Optional[Loc]) -> Instr:
    s = " ".join(stmt.split())
    guard = None
    gm = re.match(r"^@(!?)(%?[$\w]+)\s+(.*)$", s)
    if gm:
        guard = (gm.group(2), gm.group(1) == "!")
        s = gm.group(3)
    parts = s.split(None, 1)
    op = parts[0]
    rest = parts[1] if len(parts) > 1 else ""
    pieces = op.split(".")
    base = pieces[0]
    mods = tuple("." + p for p in pieces[1:])
    if base == "call":
        args = _parse_call(rest)
    else:
        args = [parse_operand(a) for a in _split_commas(rest)] if rest.strip() else []
    return Instr(op=op, base=base, mods=mods, args=args, guard=guard, loc=loc, text=stmt.strip())


def _parse_call(rest: str) -> list:
    """``call (ret), func, (a, b)`` / ``call func, (a)`` / ``call func`` -> [rets, func, params]."""
    r = rest.strip()
    rets: List[str] = []
    if r.startswith("("):
        close = r.index(")")
        rets = [x.strip() for x in r[1:close].split(",") if x.strip()]
        r = r[close + 1:].lstrip().lstrip(",").strip()
    m = re.match(r"^([$\w.%]+)\s*(?:,\s*\((.*)\))?\s*(?:,.*)?$", r, re.S)
    if not m:
        raise PTXError(f"cannot read call {rest!r}")
    params = [x.strip() for x in (m.group(2) or "").split(",") if x.strip()]
    return [("rets", rets), ("sym", m.group(1)), ("params", params)]


# -- control flow -------------------------------------------------------------------------------

def _is_terminator(ins: Instr) -> bool:
    return ins.base in ("bra", "ret", "exit", "brx", "trap")


def _finish(fn: Function) -> None:
    """Resolve labels and compute each branch's reconvergence point (immediate post-dominator)."""
    for ins in fn.code:
        if ins.base == "bra":
            tgt = ins.args[0]
            if tgt[0] != "sym" or tgt[1] not in fn.labels:
                raise PTXError(f"branch to unknown label in {ins.text!r}")
    fn.reconverge = reconvergence_points(fn)


def reconvergence_points(fn: Function) -> Dict[int, int]:
    """For every conditional branch (``@p bra``, ``@p ret``, ``@p exit``), the code index of its
    immediate post-dominator's first instruction, or :data:`EXIT`.

    The steps: the function's basic blocks, their control-flow successors (a virtual exit node
    after the last block), an edge to the exit from every block that cannot reach it, the
    post-dominator sets, then each guarded branch's immediate post-dominator."""
    code = fn.code
    if not code:
        return {}
    blocks, block_of = _basic_blocks(fn)
    exit_node = len(blocks)
    succ = _successors(fn, blocks, block_of)
    _link_endless_to_exit(succ, exit_node)
    pdom = _post_dominators(succ, exit_node)
    result = {}
    for k, (s, e) in enumerate(blocks):
        last = code[e - 1]
        if last.guard is None or last.base not in ("bra", "ret", "exit"):
            continue
        ip = _immediate_post_dominator(pdom, k, exit_node)
        result[e - 1] = EXIT if ip == exit_node else blocks[ip][0]
    return result


def _basic_blocks(fn: Function) -> Tuple[List[Tuple[int, int]], Dict[int, int]]:
    """The basic blocks as ``(first, end)`` code index ranges, and each code index's block number.
    A block starts at index 0, at every branch target and label, and after every terminator."""
    code = fn.code
    n = len(code)
    leaders = {0}
    for i, ins in enumerate(code):
        if ins.base == "bra":
            leaders.add(fn.labels[ins.args[0][1]])
        if _is_terminator(ins) and i + 1 < n:
            leaders.add(i + 1)
    for lab in fn.labels.values():
        if lab < n:
            leaders.add(lab)
    starts = sorted(leaders)
    block_of = {}
    blocks = []
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else n
        blocks.append((s, e))
        for i in range(s, e):
            block_of[i] = k
    return blocks, block_of


def _successors(fn: Function, blocks: List[Tuple[int, int]], block_of: Dict[int, int]) -> List[set]:
    """Each block's successor blocks; block number ``len(blocks)`` is the function's exit.  A
    guarded branch, return or exit also falls through to the next block."""
    exit_node = len(blocks)
    succ: List[set] = [set() for _ in blocks]
    for k, (s, e) in enumerate(blocks):
        last = fn.code[e - 1]
        fall = k + 1 if k + 1 < exit_node else exit_node
        if last.base == "bra":
            succ[k].add(block_of[fn.labels[last.args[0][1]]])
            if last.guard is not None:
                succ[k].add(fall)
        elif last.base in ("ret", "exit", "trap"):
            succ[k].add(exit_node)
            if last.guard is not None:
                succ[k].add(fall)
        else:
            succ[k].add(fall)
    return succ


def _link_endless_to_exit(succ: List[set], exit_node: int) -> None:
    """Give every block that cannot reach the exit (an endless loop) an edge to it, so that every
    block has post-dominators."""
    pred: List[set] = [set() for _ in range(exit_node + 1)]
    for k in range(exit_node):
        for t in succ[k]:
            pred[t].add(k)
    reach = {exit_node}
    stack = [exit_node]
    while stack:
        x = stack.pop()
        for p in pred[x]:
            if p not in reach:
                reach.add(p)
                stack.append(p)
    for k in range(exit_node):
        if k not in reach:
            succ[k].add(exit_node)


def _post_dominators(succ: List[set], exit_node: int) -> List[int]:
    """Each node's post-dominators as a bitset (bit k: block k; bit ``exit_node``: the exit), by
    the iterative data-flow solution: pdom(k) = {k} | the intersection over k's successors."""
    full = (1 << (exit_node + 1)) - 1
    pdom = [full] * (exit_node + 1)
    pdom[exit_node] = 1 << exit_node
    changed = True
    order = list(range(exit_node - 1, -1, -1))
    while changed:
        changed = False
        for k in order:
            acc = full
            for t in succ[k]:
                acc &= pdom[t]
            new = acc | (1 << k)
            if new != pdom[k]:
                pdom[k] = new
                changed = True
    return pdom


def _immediate_post_dominator(pdom: List[int], k: int, exit_node: int) -> int:
    """Block ``k``'s immediate post-dominator: the strict post-dominator that every other strict
    post-dominator post-dominates (the exit when there is none other)."""
    strict = pdom[k] & ~(1 << k)
    cands = [c for c in range(exit_node + 1) if strict >> c & 1]
    for c in cands:
        if all((pdom[c] >> o) & 1 for o in cands):
            return c
    return exit_node
