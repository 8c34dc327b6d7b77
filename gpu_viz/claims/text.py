"""Teaching text for the claims the probes correct: markdown that quotes this GPU's value on a GPU
and the committed record in CPU mode (labelled with its GPU and date), never a hard-coded number.

    from IPython.display import Markdown
    from gpu_viz.claims import text as claims
    Markdown(claims.shuffle_step())      # notebook 10, phase 2

Each function returns a markdown string; where neither a GPU nor a record has the number it says
so and how to make the record.
"""
from __future__ import annotations

import re

from .. import backend, disasm
from ..measure import memory, records
from ..model import latency as lm
from ..words import count
from . import decoder, inflight, probes


def _rows(op):
    return probes.current(op)


def shuffle_step() -> str:
    """Notebook 10 (phase 2): what a shuffle step costs, beside the deck's "~5 cycles": a table of
    the chains, one line of conclusion, the data line."""
    rows, label = _rows("latency_chain")
    if not rows:
        return f"*A shuffle step's cost is measured by `kernels/probes.cu`; {label}.*"
    c = {r["impl"]: r["cycles_per_step"] for r in rows}

    def cyc(k, bold=False):
        v = c.get(k)
        return "—" if v is None else (f"**{v:.1f}**" if bold else f"{v:.1f}")

    return ("| a chain of dependent steps, one warp | cycles per step |\n|---|---|\n"
            f"| the deck's claim for a shuffle step | ~{probes.DECK_SHUFFLE_CYCLES} |\n"
            f"| SHFL alone | {cyc('chain_shfl', True)} |\n"
            f"| SHFL.DOWN + FADD (one reduction step) | {cyc('chain_shfl_fadd', True)} |\n"
            f"| LDS chain (a shared-memory load) | {cyc('chain_lds')} |\n| FFMA chain | {cyc('chain_ffma')} |\n\n"
            "A shuffle step costs about what a shared-memory load does; it saves the barrier and the store/load pair.\n\n"
            f"Data: `clock64` over thousands of dependent steps; {label}.")


def doubling_point() -> str:
    """Notebook 09: the occupancy arithmetic (waves = blocks / (SMs x resident blocks per SM))
    against the makespans the silicon took, at 1024 and 256 threads per block: where the rule held,
    where it did not, and how full the slots were kept (the scheduling record's mean resident blocks)."""
    import math

    from ..frames.scheduling import mean_resident
    from ..measure import records

    rows, label = _rows("doubling_point")
    if not rows:
        return f"*The doubling point is measured by `gpu-viz record probes`; {label}.*"
    lines = ["| threads per block | blocks | waves by the arithmetic | block-times taken | "
             "started before the first block ended |", "|---|---|---|---|---|"]
    held = {}
    for t in sorted({r["threads"] for r in rows}, reverse=True):
        for r in sorted((r for r in rows if r["threads"] == t), key=lambda r: r["blocks"]):
            waves = math.ceil(r["blocks"] / r["slots"])
            took = r.get("makespan_blocks") or r["makespan_us"] / r["block_us_median"]
            lines.append(f"| {t} | {r['blocks']:,} | {waves} | **{took:.2f}** | {r['first_wave_blocks']:,} "
                         f"of {min(r['blocks'], r['slots']):,} slots |")
            held.setdefault(t, []).append(abs(took - waves) < 0.5)
    gpu = rows[0]
    text = ("\n".join(lines) + f"\n\n{gpu['sm_count']} SMs; resident blocks per SM from the occupancy API: "
            + ", ".join(f"{r['resident_blocks_per_sm']} at {r['threads']} threads"
                        for r in {r["threads"]: r for r in rows}.values()) + f". Data: {label}.")
    ok = sorted(t for t, v in held.items() if all(v))
    off = sorted(t for t, v in held.items() if not all(v))
    words = []
    if ok:
        words.append(f"At {' and '.join(map(str, ok))} threads per block the silicon follows the arithmetic.")
    if off:
        sched, slab = records.recorded("scheduling") if not _live() else (None, None)
        busy = [(r["threads"], r.get("mean_resident_blocks_per_sm")
                 or mean_resident(r["blocks"], r["block_us_median"], r["sm_count"], r["makespan_us"]),
                 r["resident_blocks_per_sm"]) for r in (sched or {}).get("rows", []) if r["threads"] in off]
        held_on = "; ".join(f"{b:.1f} of their {k} slots at {t} threads" for t, b, k in busy if b is not None)
        words.append(f"At {' and '.join(map(str, off))} it does not" + (
            f": the SMs held on average {held_on}, {slab}" if held_on else "")
            + ". The arithmetic counts the blocks an SM *can* hold: **a lower bound on the makespan, not a "
              "prediction**.")
    return text + "\n\n" + " ".join(words)


def _live() -> bool:
    from .. import backend

    return backend.has_gpu()


def fp16_load() -> str:
    """Notebook 10 (phase 1): a warp's fp16 load is 64 bytes, not a 128-byte transaction."""
    rows, label = _rows("fp16_load")
    if not rows:
        return (f"*The fp16 load's width is read from the SASS by `gpu-viz record probes`; {label}.* One fp16 "
                "value per lane is 32 x 2 = 64 bytes per warp-load.")
    r = rows[0]
    return (f"Each lane loads one fp16 value: the SASS says `{r['sass']}` ({r['bytes_per_lane']} bytes per lane), "
            f"so a warp's load is 32 x {r['bytes_per_lane']} = **{r['bytes_per_warp']} bytes**, two 32-byte "
            "sectors, not a full 128-byte line. Eight fp16 values per lane (a 16-byte vector load) would fill four "
            f"lines per warp-load.\n\nData: {label}.")


def warp_order() -> str:
    """Notebook 03: which scheduler slot a 64-thread block's warps get, and when they issue."""
    rows, label = _rows("warp_order")
    if not rows:
        return f"*The warps' `%warpid` and first-issue clocks are recorded by `gpu-viz record probes`; {label}.*"
    def listed(values, fmt="{}"):
        return ", ".join(fmt.format(v) for v in (values if isinstance(values, (list, tuple)) else [values]))

    table = "\n".join(f"| {r['block']} | {r['smid']} | {listed(r['warpid'])} | {listed(r['clk_offset'], '+{}')} |"
                      for r in rows[:4])
    offsets = sorted({o for r in rows for o in (r["clk_offset"] if isinstance(r["clk_offset"], list) else [])} - {0})
    when = ("they first issued within a cycle of each other" if not offsets else
            f"their first instructions issued {', '.join(map(str, offsets))} cycles apart, not in one cycle")
    return ("The animation's order (warp 0 issues, then warp 1) is a schematic. An SM has four sub-partition "
            f"schedulers, each issuing for its own warps; here {when}. `%warpid` is a slot number on the SM, "
            f"not the warp's index in its block. Two-warp blocks, {label}:\n\n"
            "| block | SM | its warps' %warpid | first issue (cycles after the block's first) |\n|---|---|---|---|\n"
            + table)


def data_residency() -> str:
    """Notebook 10 ("where data lives is the optimization"): pass 2 re-reading x from global memory
    vs x staged in registers, in L2 and beyond it, beside the copy bandwidth of the same run."""

    rows, label = _rows("data_residency")
    if not rows:
        why = label if backend.has_gpu() else records.missing("probes")
        return ("*Pass 2 re-reading x vs keeping it in registers is timed by `rownorm_reread` and "
                f"`rownorm_staged` (kernels/probes.cu): {why}.*")
    by = {(r["level"], r["impl"]): r for r in rows}
    lines = ["| rows of 4096 fp32 | x re-read (L1/L2) | x in registers | copy |", "|---|---|---|---|"]
    for level in dict.fromkeys(r["level"] for r in rows):
        a, b = by.get((level, "rownorm_reread")), by.get((level, "rownorm_staged"))
        if a and b:
            lines.append(f"| {level}: {a['M']:,} rows | {a['GBps']:,.0f} GB/s | **{b['GBps']:,.0f} GB/s** "
                         f"({a['median_us'] / b['median_us']:.2f}x) | {a['copy_GBps']:,.0f} GB/s |")
    text = ("\n".join(lines) + f"\n\nEffective GB/s: x read once, y written once, w once; kernel time "
            f"(CUDA-graph replay), float64-checked. Data: {label}")
    hits, hits_label = records.recorded("hit-rates")   # optional (ncu): where pass 2 found x
    hit = {(r["level"], r["impl"]): r for r in (hits or {}).get("rows", [])}.get(("beyond L2", "rownorm_reread"))
    # one GPU per table: only the hit rates of the GPU the rows above came from
    gpu = backend.detect().device_name if backend.has_gpu() else (probes.recorded() or {}).get("gpu")
    if hit and hits.get("gpu") == gpu:
        text += (f"\n\nBeyond L2, `rownorm_reread` hits L1 on {hit['l1_hit_pct']:.0f}% of its sectors and L2 on "
                 f"{hit['l2_hit_pct']:.0f}% (ncu, {hits_label}).")
    return text


def decoder_step() -> str:
    """Notebook 11's finale: the three conclusion lines of the decoder record (or this GPU's run)."""

    rec = decoder.recorded()
    if rec is None:
        return ("*The decoder step is measured by `gpu-viz record decoder` on a GPU; no committed record yet.*"
                if not backend.has_gpu() else "*Run `gpu-viz record decoder` to measure the decoder step here.*")
    # the lines re-read from the record's rows, in today's wording (a record keeps the wording of its day)
    try:
        lines = decoder.conclusion(rec["rows"], rec.get("deck_claim_speedup", decoder.DECK_CLAIM),
                                   rec.get("conclusion_dtype"))
    except (KeyError, TypeError, ZeroDivisionError):
        lines = rec["conclusion"]
    text = f"**A decoder step, {records.label(rec)}:**\n\n" + "\n".join(f"- {ln}" for ln in lines)
    return text + _decoder_vs_deck_10(rec)


def _decoder_vs_deck_10(rec) -> str:
    """Why the decoder record can show ``F.rms_norm``'s norms faster than ours while notebook 13's
    record shows ours faster, when it does: the decoder times each step per call from Python, and a
    record that names no C++ launcher called ours through Python's ctypes; "" otherwise."""
    from ..measure import records

    rows = [r for r in rec.get("rows", []) if r.get("dtype") == rec.get("conclusion_dtype", "float16")]
    by = {(r.get("phase"), r.get("impl")): r.get("norms_median_us") for r in rows}
    slower = [ph for ph in ("prefill", "decode")
              if by.get((ph, "fused")) and by.get((ph, "native")) and by[(ph, "fused")] > by[(ph, "native")]]
    if not slower:
        return ""
    how = str(rec.get("launcher") or "")
    if how.startswith("built"):
        why = "ours through the C++ launcher too: the call's own cost decides"
    else:
        prof, _lab = records.recorded("per-call-profile")
        ctypes_us = next((r.get("launch_only") for r in (prof or {}).get("rows", []) if r.get("launch_only")), None)
        same_day = prof and prof.get("date") == rec.get("date") and prof.get("gpu") == rec.get("gpu")
        why = ("before the C++ launcher: ours via ctypes"
               + (f", ~{ctypes_us:.0f} µs a call (per-call profile, same day)" if ctypes_us and same_day else ""))
    return (f"\n\n`F.rms_norm`'s norms beat ours here: timed per call, {why}. Notebook 13 (kernels alone, "
            "calls via the launcher): ours faster.")


def l2_bandwidth() -> str:
    """Notebook 01 (the chip drawing): L2's bandwidth from a re-read that is not launch-bound and
    bypasses L1; a record of the earlier, L1-cacheable probe is quoted as what it measured
    (mostly L1), beside the claim.  A table: each read, its GB/s, what it measured."""

    rows, label = _rows("reread_bandwidth")
    sweep, sweep_label = None, ""
    # CPU mode: the committed one-pass sweep shows why its in-L2 sizes measure the launch
    rec = None if backend.has_gpu() else records.recorded_hardware()[0]
    pts = (rec or {}).get("bandwidth_vs_size")
    if pts:
        sweep = min((q for q in pts if q["size_bytes"] >= (4 << 20)), key=lambda q: q["size_bytes"], default=None)
        sweep_label = records.label(rec) if sweep else ""
    lines = ["| read | GB/s | what it measured |", "|---|---|---|"]
    by = {r["level"]: r for r in rows}
    l2, dram = by.get("L2"), by.get("DRAM")
    note = ""
    if l2 and not probes.reread_measures_l2(l2):
        # the earlier probe: L1-cacheable loads, each SM re-reading a share that fits its L1
        from .. import device as _device

        sms = (_device.current() if backend.has_gpu() else records.lesson_device()[0]).sm_count
        lines.append(f"| {memory.size_label(l2['size_bytes'])}, {l2['passes']} times in one launch | "
                     f"**{l2['GBps']:,.0f} GB/s** | **mostly L1, not L2**: L1-cacheable loads, and each of "
                     f"{sms} SMs re-read its own ~{l2['size_bytes'] / sms / 1024:.0f} KB share, which fits L1 |")
        note = ("The probe now reads through L2 only (`__ldcg`); a GPU run of `gpu-viz record probes` "
                "measures L2.\n\n")
    elif l2:
        lines.append(f"| {memory.size_label(l2['size_bytes'])}, {l2['passes']} times in one launch | "
                     f"**{l2['GBps']:,.0f} GB/s** | L2 (L1 bypassed) |")
    if dram:
        lines.append(f"| {memory.size_label(dram['size_bytes'])} once | {dram['GBps']:,.0f} GB/s | DRAM |")
    if sweep:
        lines.append(f"| {memory.size_label(sweep['size_bytes'])} once (the sweep) | {sweep['GBps']:,.0f} GB/s | "
                     f"the launch: {sweep['median_us']:.1f} µs, most of it launch floor |")
    if len(lines) == 2:
        return (f"*L2's bandwidth is measured by `gpu-viz record probes` (re-read in one launch); {label}.*")
    also = f"; the sweep: {sweep_label}" if sweep_label and sweep_label != label else ""
    return "\n".join(lines) + "\n\n" + note + f"Data: {label if rows else sweep_label}{also}."


def latency_hiding(compute_per_load: int = 16) -> str:
    """Notebook 04: warps *per scheduler* against the model, at one GPU's latency and limit (a
    table, a line, the data line)."""

    i, where_info = records.lesson_device()
    per_sched = i.max_threads_per_sm // 32 // 4
    if backend.has_gpu():
        lat, where = round(memory.dram_latency().cycles_per_load), backend.live_label()
    else:
        rec, lab = records.recorded_hardware()
        if not rec or not rec.get("dram_latency"):
            return "*No DRAM latency: no GPU and no committed hardware record.*"
        lat, where = round(rec["dram_latency"]["cycles_per_load"]), lab
    busy = lm.utilization(per_sched, lat, compute_per_load)
    need = lm.warps_to_hide(lat, compute_per_load)
    return (f"| one of the four schedulers of an SM of {i.name} | |\n|---|---|\n"
            f"| warps it holds ({i.max_threads_per_sm // 32} per SM / 4) | **{per_sched} per scheduler** |\n"
            f"| one DRAM load | {lat} cycles |\n"
            f"| busy with {per_sched} warps, {compute_per_load} instructions per load | {busy:.0%} |\n"
            f"| warps that would hide the load fully | about {need} |\n\n"
            "Kernels reach the bandwidth anyway with several loads in flight per warp (wider or unrolled loads).\n\n"
            f"Data: {where_info}; the latency: {where}.")


def block_cap() -> str:
    """Notebook 05: 1024 is a fixed cap, not the SM's size (which is 1,024, 1,536 or 2,048 threads
    by GPU); ``smem[32]`` follows from the cap (32 warps of 32 lanes), it does not cause it."""
    from .. import device

    i, where_info = records.lesson_device()
    sizes = sorted({s.max_threads_per_sm for s in device.SPEC_SHEETS.values()})
    blocks = i.max_threads_per_sm // 1024
    here = (f"An SM of {i.name} holds {i.max_threads_per_sm:,} threads, exactly one block of 1024: here the cap "
            "and the SM's size coincide, on most GPUs they do not."
            if i.max_threads_per_sm == 1024 else
            f"An SM of {i.name} holds {i.max_threads_per_sm:,} threads: {count(blocks, 'block')} of 1024 at once"
            + (", with room to spare." if i.max_threads_per_sm % 1024 else "."))
    return ("The deck: the whole block must fit on one SM, \"and that constraint is exactly why blocks cap at "
            "1024\".\n\n"
            "* 1024 is a fixed cap since compute capability 2.0 (2010); an SM holds "
            + ", ".join(f"{n:,}" for n in sizes[:-1]) + f" or {sizes[-1]:,} threads, by GPU.\n"
            f"* {here}\n"
            "* 1024 threads are at most 32 warps of 32 lanes: one partial per warp fits `smem[32]`, a "
            "consequence of the cap, not its cause.\n\n"
            f"Data: {where_info}; SM sizes from the spec sheets of the GPUs the course names.")


def deck_littles_law(block: int = 1024) -> str:
    """Notebook 11 (the speed-up): why the deck kernel stops short of the copy bandwidth -- Little's
    law with one 2-byte load in flight per resident thread, beside the kernel's measured GB/s."""

    try:
        g = inflight.facts_at(block)
    except RuntimeError as exc:   # CPU mode without a hardware record
        return f"*Little's law needs the copy bandwidth and the DRAM latency: {exc}.*"
    have = g["resident_threads_per_sm"] * g["bytes_per_load"]
    need = g["copy_GBps"] * g["latency_ns"] / g["sm_count"]
    pred = min(g["copy_GBps"], have * g["sm_count"] / g["latency_ns"])
    gbps, where = inflight.deck_GBps(block)
    # ``where`` is "<label>, [M, N] at block B" for a record: the shape in words, the label last
    m = re.match(r"(.*), \[(\d+), (\d+)\] at block (\d+)$", where or "")
    at, where = (f" at {m.group(2)}x{m.group(3)}, block {m.group(4)}", m.group(1)) if m else ("", where)
    measured = (f"Measured{at}: **{gbps:,.0f} GB/s**, {100 * gbps / g['copy_GBps']:.0f}% of the copy, {where}. "
                if gbps is not None else f"Not measured: {where}. ")
    return ("Bandwidth = bytes in flight / latency; each thread of the deck kernel has one 2-byte fp16 load in "
            "flight.\n\n"
            "| in flight | per SM | the GPU: x SMs / latency |\n|---|---|---|\n"
            f"| the deck kernel | {g['resident_threads_per_sm']:,} threads x 2 B = **{have:,} B per SM** | "
            f"x {g['sm_count']} / {g['latency_ns']:,.0f} ns = at most **{pred:,.0f} GB/s**, "
            f"{100 * pred / g['copy_GBps']:.0f}% of the copy |\n"
            f"| what the copy's {g['copy_GBps']:,.0f} GB/s needs | {need:,.0f} B per SM | |\n\n"
            f"{measured}More threads cannot help (the SM is full); more bytes per load can: 16-byte loads, "
            "notebook 13's fused kernel.\n\nData: "
            + (f"copy and latency {g['copy_source']}" if g["copy_source"] == g["latency_source"]
               else f"copy {g['copy_source']}; latency {g['latency_source']}"))


def constant_and_l1(file: str = "rmsnorm_deck.cu", kernel: str = "rmsnorm_deck_f16") -> str:
    """Notebook 10 (phases 3 and 4): the evidence in the SASS -- kernel parameters read from the
    constant bank (``c[0x0][...]``) and loads the compiler marked read-only (``.CONSTANT``).  What
    the SASS cannot say (whether a load hit L1) is left to a profiler's hit rate."""


    text, label = disasm.sass(file, kernel)
    if not text:
        return f"*The SASS evidence needs cuobjdump: {label}.*"
    consts = sorted(set(re.findall(r"c\[0x0\]\[0x[0-9a-f]+\]", text)))
    ro = sorted(set(re.findall(r"\bLDG\.E[\w.]*CONSTANT[\w.]*", text)))
    return (f"In the SASS of `{kernel}`:\n\n"
            f"* the parameters (`d`, `eps`, the pointers) come from the constant bank: {len(consts)} slots such "
            f"as `{consts[0] if consts else 'none'}`;\n"
            + (f"* the loads of x and w are `{', '.join(ro)}`: the read-only path through L1, where phase 4's second "
               "read of x and every block's read of w can hit (a profiler's hit rate says how often)."
               if ro else "* no load is marked `.CONSTANT` in this build: whether phase 4 hits L1 is a profiler's "
                          "hit rate to say, not the SASS's.")
            + f"\n\nData: {label}.")

def three_forces() -> str:
    """The recap deck (notebook 14): the three forces the course keeps meeting, each with what the
    committed records measured -- where data lives, bytes in flight, the hardware's fixed shapes --
    as a table and its data line (every number from a record, labelled; nothing is measured here)."""
    from ..frames.scheduling import mean_resident
    from ..rmsnorm import bench_record
    from ..measure import records

    hw, hw_label = records.recorded_hardware()
    fused = bench_record.newest_record()
    sched, _ = records.recorded("scheduling")
    div, _ = records.recorded("divergence")
    labels = []
    rows = []
    if hw and hw.get("latency") and hw.get("dram_latency"):
        lv = memory.summarize_levels(hw["latency"], hw["device"]["l2_bytes"], dram=hw["dram_latency"])
        text = " -> ".join(f"{k} {lv[k]['cycles']:.0f}" for k in ("L1", "L2", "DRAM") if k in lv) + " cycles a load"
        labels.append(hw_label)
    else:
        text = "each level larger and slower (no committed hardware record)"
    if fused:
        by = {(r["impl"], r["timing"]): r for r in fused["rows"] if (r.get("op"), r.get("M"), r.get("N"), r.get("dtype"))
              == ("rmsnorm", 16384, 4096, "float16")}
        f, e = by.get(("fused", "kernel")), by.get(("eager", "kernel"))
        if f and e:
            text += (f"; RMSNorm 16384 x 4096 moved once: {f['median_us']:.0f} µs, "
                     f"{100 * f['GBps'] / fused['copy_GBps']:.0f} % of the copy, eager {e['median_us']:,.0f} µs")
            labels.append(records.label(fused))
    rows.append(("**Where data lives**: keep it close, move each byte once", text, "01, 07, 10, 13"))
    if hw and hw.get("dram_latency") and hw.get("copy_GBps"):
        need = hw["copy_GBps"] * hw["dram_latency"]["ns_per_load"] / hw["device"]["sm_count"]
        held = hw["device"]["max_threads_per_sm"] * 2
        rows.append(("**Bytes in flight**: latency is hidden by having enough requests out",
                     f"the copy needs {need:,.0f} B per SM in flight; one fp16 load per thread gives {held:,} B; "
                     "16-byte loads close the gap", "04, 11, 13"))
    shapes = []
    if div and div.get("divergence_ratio"):
        shapes.append(f"a warp runs both sides of a split branch: {div['divergence_ratio']:.2f}x")
        labels.append(records.label(div))
    if hw and hw.get("device"):
        shapes.append(f"a block is at most 1024 threads on one SM of {hw['device']['max_threads_per_sm']:,}")
    srow = next((r for r in (sched or {}).get("rows", []) if r.get("threads") == 256), None)
    if srow:
        busy = srow.get("mean_resident_blocks_per_sm") or mean_resident(
            srow["blocks"], srow["block_us_median"], srow["sm_count"], srow["makespan_us"])
        shapes.append(f"{srow['blocks']:,} blocks took {srow['makespan_us'] / srow['block_us_median']:.1f} "
                      f"block-times for the arithmetic's {srow['waves']} ({busy:.1f} of {srow['resident_blocks_per_sm']} "
                      "slots busy)")
        labels.append(records.label(sched))
    rows.append(("**The hardware's fixed shapes**: warps of 32, blocks on one SM, waves of blocks",
                 "; ".join(shapes) or "no committed records", "03, 05, 09"))
    table = "| force | what the records show | notebooks |\n|---|---|---|\n" + "\n".join(
        f"| {a} | {b} | {c} |" for a, b, c in rows)
    return table + "\n\nData: " + "; ".join(dict.fromkeys(labels)) if labels else table
