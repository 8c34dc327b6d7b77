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


@pytest.mark.gpu
@pytest.mark.skipif(kernels.find_tool("cuobjdump") is None, reason="cuobjdump not installed")
def test_sass_of_nvrtc_cubin_on_gpu():
    text, label = disasm.sass(*VA)
    # NVRTC's own cubin, or -- where the installed cuobjdump is older than NVRTC -- nvcc's, saying why
    assert text is not None, label
    assert "NVRTC cubin" in label or ("nvcc cubin" in label and "could not read NVRTC" in label), label
    ops = disasm.sass_instructions(text)
    assert ops.count("FADD") == 1 and ops.count("STG") == 1


@pytest.mark.gpu
def test_ptx_from_nvrtc_on_gpu():
    text, label = disasm.ptx(*VA)
    assert text is not None and re.search(r"add(\.rn)?\.f32", text), label
