"""The deck's finale in a transformer step: one Llama-style decoder layer plus the final norm,
timed with each RMSNorm (``gpu-viz record decoder``).

The layer (random weights, plain PyTorch): ``h = x + o(attn(q, k, v of norm1(x)))``,
``out = h + down(silu(gate(norm2(h))) * up(norm2(h)))``, then ``final_norm(out)``: three RMSNorm
calls per step, the deck's "three RMSNorm calls per transformer step".  Attention is
``F.scaled_dot_product_attention`` with grouped KV heads (causal at prefill; at decode one new
token per sequence against a KV cache).  Norm variants (:data:`VARIANTS`):

* ``eager``   -- HF Llama's LlamaRMSNorm in eager PyTorch (fp32 math, cast back, times weight);
* ``native``  -- ``torch.nn.functional.rms_norm``;
* ``fused``   -- :func:`gpu_viz.ops.rmsnorm` (the course's kernel);
* ``compile`` -- the whole step with eager norms under ``torch.compile`` (checked not to fall back).

Method (DESIGN.md section 5): every variant is first checked against a float64 run of the same
layer on fresh random data; then CUDA events around each step (as called from Python: the
launches are part of a step), warm-up, median and p10/p90 of ``reps``; the three norm calls
alone timed the same way at the same shapes, so each row carries the norms' share of its step
(Amdahl: a step can get at most ``1 / (1 - share)`` faster from the norms).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Dict, List, Optional

VARIANTS = ("eager", "native", "fused", "compile")
#: The deck's claim for replacing the three RMSNorm calls of a step.
DECK_CLAIM = 7.2
EPS = 1e-6


@dataclasses.dataclass(frozen=True)
class Config:
    """A decoder layer's shape (Llama-3-8B's widths by default).

    hidden: model width; heads / kv_heads: query and key-value heads (grouped-query attention);
    intermediate: the SwiGLU MLP's width."""

    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8
    intermediate: int = 14336

    def __post_init__(self):
        for name in ("hidden", "heads", "kv_heads", "intermediate"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"hidden ({self.hidden}) must divide by heads ({self.heads}) and heads by "
                             f"kv_heads ({self.kv_heads})")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


#: (phase, batch, new tokens per sequence, KV-cache length before the step)
SHAPES = (("prefill", 1, 2048, 0), ("decode", 32, 1, 2048))


def eager_rmsnorm(x, w, eps: float = EPS):
    """HF Llama's LlamaRMSNorm: fp32 math, the result cast back to x's dtype, times the weight."""
    import torch

    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def norm_fn(variant: str):
    """The RMSNorm ``f(x, w, eps)`` of ``variant`` (``compile`` uses the eager one, compiled with the step)."""
    import torch

    if variant in ("eager", "compile"):
        return eager_rmsnorm
    if variant == "native":
        return lambda x, w, eps=EPS: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)
    if variant == "fused":
        from .. import ops

        return lambda x, w, eps=EPS: ops.rmsnorm(x, w, eps)
    raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")


def make_weights(cfg: Config, dtype, device, seed: int) -> Dict:
    """Random weights, each matrix scaled by 1/sqrt(fan-in) (activations stay O(1)); norm weights
    near 1.  A dict of tensors of ``dtype`` on ``device``."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)

    def mat(o, i):
        return (torch.randn(o, i, generator=g) / math.sqrt(i)).to(device=device, dtype=dtype)

    def vec(n):
        return (1 + 0.1 * torch.randn(n, generator=g)).to(device=device, dtype=dtype)

    H, KV = cfg.hidden, cfg.kv_heads * cfg.head_dim
    return {"q": mat(H, H), "k": mat(KV, H), "v": mat(KV, H), "o": mat(H, H), "gate": mat(cfg.intermediate, H),
            "up": mat(cfg.intermediate, H), "down": mat(H, cfg.intermediate),
            "norm1": vec(H), "norm2": vec(H), "final": vec(H)}


def make_inputs(cfg: Config, batch: int, tokens: int, kv_len: int, dtype, device, seed: int) -> Dict:
    """x [batch, tokens, hidden]; at decode (kv_len > 0) a KV cache [batch, kv_heads, kv_len + tokens,
    head_dim] whose first kv_len positions hold random past keys and values."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    out = {"x": torch.randn(batch, tokens, cfg.hidden, generator=g).to(device=device, dtype=dtype)}
    if kv_len:
        shape = (batch, cfg.kv_heads, kv_len + tokens, cfg.head_dim)
        out["k_cache"] = torch.randn(*shape, generator=g).to(device=device, dtype=dtype)
        out["v_cache"] = torch.randn(*shape, generator=g).to(device=device, dtype=dtype)
    return out


def step(cfg: Config, W: Dict, inp: Dict, norm, kv_len: int = 0):
    """One decoder step: the layer and the final norm, with RMSNorm ``norm(x, w, eps)``.

    Args:
        cfg, W: the shape and weights (:func:`make_weights`).
        inp: :func:`make_inputs` (x [B, T, hidden]; at decode the caches, written in place at
            positions kv_len .. kv_len + T).
        norm: an RMSNorm of :func:`norm_fn`.
        kv_len: cached positions before this step (0 = prefill: causal attention over x).

    Returns:
        [B, T, hidden] in x's dtype.
    """
    import torch.nn.functional as F

    x = inp["x"]
    B, T, H = x.shape
    hd, nh, nkv = cfg.head_dim, cfg.heads, cfg.kv_heads
    a = norm(x, W["norm1"])
    q = (a @ W["q"].T).view(B, T, nh, hd).transpose(1, 2)
    k = (a @ W["k"].T).view(B, T, nkv, hd).transpose(1, 2)
    v = (a @ W["v"].T).view(B, T, nkv, hd).transpose(1, 2)
    if kv_len:
        inp["k_cache"][:, :, kv_len:kv_len + T] = k
        inp["v_cache"][:, :, kv_len:kv_len + T] = v
        k, v = inp["k_cache"], inp["v_cache"]
    rep = nh // nkv
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    att = F.scaled_dot_product_attention(q, k, v, is_causal=(kv_len == 0 and T > 1))
    h = x + att.transpose(1, 2).reshape(B, T, H) @ W["o"].T
    m = norm(h, W["norm2"])
    h = h + (F.silu(m @ W["gate"].T) * (m @ W["up"].T)) @ W["down"].T
    return norm(h, W["final"])


def reference(cfg: Config, W: Dict, inp: Dict, kv_len: int = 0):
    """The same step in float64 (weights, inputs and eager norm in float64): the check's truth."""
    import torch

    W64 = {k: v.double() for k, v in W.items()}
    inp64 = {k: v.double().clone() for k, v in inp.items()}

    def norm64(x, w, eps=EPS):
        return w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    return step(cfg, W64, inp64, norm64, kv_len)


#: (atol, rtol) of a step's output against float64, per dtype: the step's matmuls round in the
#: dtype (fp16 / bf16 products over 4096 and 14336 terms, fp32 accumulation), the norms' output
#: is O(1).
LAYER_TOLERANCES = {"float32": (2e-3, 2e-3), "float16": (6e-2, 3e-2), "bfloat16": (2.5e-1, 1e-1)}


def check_variant(cfg: Config, W: Dict, inp: Dict, fn, kv_len: int, dtype_name: str, what: str, want=None):
    """Run ``fn`` (a step callable of inp) once and compare with :func:`reference` (or ``want``, its
    result computed once for several variants); raises MismatchError naming ``what`` on a
    mismatch.  Returns the :class:`gpu_viz.check.Report`."""
    from ..check import assert_close

    atol, rtol = LAYER_TOLERANCES[dtype_name]
    if want is None:
        want = reference(cfg, W, inp, kv_len)
    got = fn({k: v.clone() for k, v in inp.items()})
    return assert_close(f"decoder step ({what})", got, want, atol=atol, rtol=rtol)


def _time(fn, reps: int, warmup: int):
    from ..measure.timing import time_calls

    return time_calls(lambda i: fn(), reps=reps, warmup=warmup, framework="torch")


def measure(cfg: Config = Config(), dtype: str = "float16", shapes=SHAPES, variants=VARIANTS,
            reps: int = 30, warmup: int = 5, seed: Optional[int] = None) -> List[Dict]:
    """Check, then time, every variant at every shape on this GPU.  One row per (shape, variant),
    DESIGN.md section 5 format with ``op = "decoder_step"``; a variant that fails its check or
    whose compile falls back gets a row with ``"error"`` and no time.

    Raises:
        GPUUnavailable: CPU mode.  ValueError: an unknown dtype or variant.
    """
    import torch

    from .. import backend
    from ..rmsnorm.dtypes import torch_dtype

    backend.require_gpu("the decoder step")
    if dtype not in LAYER_TOLERANCES:
        raise ValueError(f"dtype must be one of {tuple(LAYER_TOLERANCES)}, got {dtype!r}")
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {v!r}")
    from ..check import new_seed

    seed = new_seed() if seed is None else int(seed)
    dt = torch_dtype(dtype)
    W = make_weights(cfg, dt, "cuda", seed)
    rows = []
    for phase, B, T, S in shapes:
        inp = make_inputs(cfg, B, T, S, dt, "cuda", seed)
        xs = [torch.randn(B, T, cfg.hidden, device="cuda", dtype=dt) for _ in range(3)]
        want = reference(cfg, W, inp, S)   # float64, once per shape, for every variant
        for variant in variants:
            norm = norm_fn(variant)
            row = {"op": "decoder_step", "impl": variant, "phase": phase, "batch": B, "tokens": T, "kv_len": S,
                   "M": B * T, "N": cfg.hidden, "dtype": dtype, "timing": "call", "layers": 1, "norm_calls": 3,
                   "intermediate": cfg.intermediate, "heads": cfg.heads, "kv_heads": cfg.kv_heads, "seed": seed}
            try:
                def run(i, norm=norm):
                    return step(cfg, W, i, norm, S)
                if variant == "compile":
                    from ..rmsnorm.providers import compile_checked

                    compiled = compile_checked(lambda i: run(i), (inp,))
                    fn = compiled
                else:
                    fn = run
                rep = check_variant(cfg, W, inp, fn, S, dtype, f"{phase}, {variant}", want=want)
                row["check"] = rep.message()
                with torch.no_grad():
                    t = _time(lambda: fn(inp), reps, warmup)
                    row.update(median_us=round(t.median_us, 2), p10_us=round(t.p10_us, 2),
                               p90_us=round(t.p90_us, 2), reps=reps)
                    if variant == "compile":
                        # the compiled graph fuses the norms into their neighbours: no norm time of its own
                        row.update(norms_median_us=None, norm_share=None,
                                   norms_note="the norms are fused into the compiled step")
                    else:
                        tn = _time(lambda: [norm(x, W["norm1"]) for x in xs], reps, warmup)
                        row.update(norms_median_us=round(tn.median_us, 2), norms_p10_us=round(tn.p10_us, 2),
                                   norms_p90_us=round(tn.p90_us, 2),
                                   norm_share=round(min(1.0, tn.median_us / t.median_us), 4))
            except Exception as exc:  # noqa: BLE001  (one variant failing must not hide the others)
                row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            print({k: row.get(k) for k in ("phase", "impl", "median_us", "norms_median_us", "norm_share", "error")})
            rows.append(row)
        want = None   # free the float64 result before the next shape's
        torch.cuda.empty_cache()
    return rows


def _timed(rows, phase, impl) -> Optional[Dict]:
    return next((r for r in rows if r.get("phase") == phase and r.get("impl") == impl and "median_us" in r), None)


def conclusion(rows: List[Dict], deck_claim: float = DECK_CLAIM, dtype: Optional[str] = None) -> List[str]:
    """Three lines read from the rows (of ``dtype``; default: the first row's): the step's speed-up
    with the fused norm at each phase, with the norms' share of the eager step (the Amdahl bound),
    and the norms' own speed-up beside the deck's claim.  Lines say what is missing when a row is."""
    if rows:
        dtype = dtype or rows[0].get("dtype")
        rows = [r for r in rows if r.get("dtype") == dtype]
    lines = []
    for phase in ("prefill", "decode"):
        e, f = _timed(rows, phase, "eager"), _timed(rows, phase, "fused")
        if not (e and f):
            lines.append(f"{phase}: no eager and fused rows to compare")
            continue
        share = e["norm_share"]
        bound = 1 / (1 - share) if share < 1 else float("inf")
        lines.append(f"{phase} ({dtype}, batch {e['batch']} x {e['tokens']} tokens, KV {e['kv_len']}): the fused norm makes "
                     f"the step {e['median_us'] / f['median_us']:.2f}x faster ({e['median_us']:,.0f} -> "
                     f"{f['median_us']:,.0f} µs); the norms were {100 * share:.1f}% of the eager step, so no norm "
                     f"could give more than {bound:.2f}x")
    parts = []
    for phase in ("prefill", "decode"):
        e, f = _timed(rows, phase, "eager"), _timed(rows, phase, "fused")
        if e and f:
            parts.append(f"{phase} {e['norms_median_us'] / f['norms_median_us']:.1f}x")
    c = [r for r in rows if r.get("impl") == "compile" and "median_us" in r]
    comp = "; torch.compile of the whole step: " + ", ".join(
        f"{r['phase']} {_timed(rows, r['phase'], 'eager')['median_us'] / r['median_us']:.2f}x"
        for r in c if _timed(rows, r["phase"], "eager")) if c else ""
    lines.append(f"the three norms alone, fused vs eager: {', '.join(parts) or 'not measured'} (the deck claims "
                 f"{deck_claim:g}x for the norms; the step gains only what their share allows){comp}")
    return lines


def check_record(rec: Dict) -> List[str]:
    """Every way ``rec`` breaks the decoder record's schema; [] when it is sound."""
    problems = [f"missing {k!r}" for k in ("date", "gpu", "sm", "rows", "conclusion", "deck_claim_speedup")
                if k not in rec]
    keys = ("op", "impl", "phase", "batch", "tokens", "kv_len", "M", "N", "dtype", "timing")
    for i, r in enumerate(rec.get("rows", [])):
        problems += [f"row {i}: missing {k!r}" for k in keys if k not in r]
        if r.get("op") != "decoder_step":
            problems.append(f"row {i}: op must be 'decoder_step', got {r.get('op')!r}")
        if "error" not in r:
            for k in ("median_us", "p10_us", "p90_us", "norms_median_us", "norm_share", "check"):
                if k not in r:
                    problems.append(f"row {i}: a timed row needs {k!r}")
            if "median_us" in r and not r.get("p10_us", 0) <= r["median_us"] <= r.get("p90_us", 0):
                problems.append(f"row {i}: median outside [p10, p90]")
            if r.get("impl") != "compile" and not 0 < (r.get("norm_share") or -1) <= 1:
                problems.append(f"row {i}: norm_share must be in (0, 1]")
    if isinstance(rec.get("conclusion"), list) and len(rec["conclusion"]) != 3:
        problems.append("conclusion must be three lines")
    return problems


#: The dtypes the record measures; the conclusion reads the first.
RECORD_DTYPES = ("float16", "bfloat16")


def record(out=None, dtypes=RECORD_DTYPES):
    """Measure on this GPU (each of ``dtypes``) and save ``<gpu>-<date>-decoder.json`` into ``out``;
    returns the path."""
    import torch

    from ..measure import records

    rows = []
    for dt in dtypes:
        torch._dynamo.reset()
        rows += measure(dtype=dt)
    lines = conclusion(rows, dtype=dtypes[0])
    for ln in lines:
        print(ln)
    from ..rmsnorm import launcher

    # how the fused norms were called: per-call times through Python's ctypes and through the C++
    # launcher differ by microseconds a call, which this record's three norms per step add up
    rec = records.new_record(rows, deck_claim_speedup=DECK_CLAIM, conclusion=lines, conclusion_dtype=dtypes[0],
                             config=dataclasses.asdict(Config()), shapes=[list(s) for s in SHAPES],
                             launcher=launcher.status())
    return records.save_record(rec, tag="decoder", directory=out)


def recorded(directory=None) -> Optional[Dict]:
    """The newest committed decoder record, or None (CPU mode shows it, labelled)."""
    from ..measure import records

    return records.newest("*-decoder.json", directory)
