"""PTX and SASS of the course's kernels (gpu_viz.disasm): what the compiler emits for the plain build."""
import re

import pytest

from gpu_viz import disasm, kernels

VA = ("vector_add.cu", "vector_add")


@pytest.mark.skipif(kernels.find_tool("nvcc") is None, reason="nvcc not on PATH")
def test_ptx_has_one_add_and_two_loads():
    text, label = disasm.ptx(*VA)
    assert text is not None, label
    assert text.count("ld.global") == 2 and len(re.findall(r"add(\.rn)?\.f32", text)) == 1
    assert text.count("st.global") == 1


def test_sass_parsing_or_reason():
    text, label = disasm.sass(*VA)
    if text is None:
        assert "SASS not shown" in label
    else:
        ops = disasm.sass_instructions(text)
        assert ops.count("FADD") == 1 and ops.count("LDG") == 2 and ops.count("STG") == 1


def test_labels_stay_one_short_line_whatever_the_tools_print(monkeypatch):
    """The label is printed above the listing on a slide: a tool's raw stderr (temp paths, many lines)
    never reaches it, on every fallback path."""
    noisy = "error: " + "x" * 400 + " /tmp/tmpabc/k.cubin\nsecond line\nthird line"
    monkeypatch.setattr(disasm.backend, "has_gpu", lambda: True)
    monkeypatch.setattr(disasm, "_nvrtc_cubin", lambda *a: (_ for _ in ()).throw(RuntimeError(noisy)))

    class Proc:
        returncode, stdout, stderr = 1, "", noisy

    monkeypatch.setattr(disasm.subprocess, "run", lambda *a, **k: Proc())
    monkeypatch.setattr(disasm, "find_tool", lambda name: f"/usr/bin/{name}")
    labels = [disasm.sass(*VA)[1]]
    monkeypatch.setattr(disasm, "find_tool", lambda name: None if name == "nvcc" else f"/usr/bin/{name}")
    labels.append(disasm.sass(*VA)[1])
    for label in labels:
        assert len(label) <= disasm.LABEL_MAX_CHARS and "\n" not in label and "/tmp/" not in label, label
        assert "SASS not shown" in label, label


@pytest.mark.gpu
@pytest.mark.skipif(kernels.find_tool("cuobjdump") is None, reason="cuobjdump not installed")
def test_sass_of_nvrtc_cubin_on_gpu():
    text, label = disasm.sass(*VA)
    # NVRTC's own cubin, or -- where the installed cuobjdump is older than NVRTC -- nvcc's, saying why
    assert text is not None, label
    assert "NVRTC cubin" in label or ("nvcc cubin" in label and "unreadable by this cuobjdump" in label), label
    assert len(label) <= disasm.LABEL_MAX_CHARS and "\n" not in label, label
    ops = disasm.sass_instructions(text)
    assert ops.count("FADD") == 1 and ops.count("STG") == 1


@pytest.mark.gpu
def test_ptx_from_nvrtc_on_gpu():
    text, label = disasm.ptx(*VA)
    assert text is not None and re.search(r"add(\.rn)?\.f32", text), label
