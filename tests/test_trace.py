"""Trace: bit-for-bit comparison is the contract between the CPU model and the silicon."""
import numpy as np
import pytest

from gpu_viz.trace import Step, Trace


def make(arrays, source="model"):
    return Trace(kernel="k", params={}, arrays=arrays, source=source, provenance="test", steps=[Step("s")])


def test_equal_traces_pass():
    a = make({"x": np.array([1.0, np.nan], np.float32), "i": np.arange(3)})
    b = make({"x": np.array([1.0, np.nan], np.float32), "i": np.arange(3)}, source="gpu")
    a.assert_equal(b)


def test_one_ulp_is_a_difference():
    x = np.array([1.0, 2.0], np.float32)
    y = x.copy()
    y[1] = np.nextafter(y[1], np.float32(3))
    with pytest.raises(AssertionError, match=r"x: 1 of 2 differ; first \(1,\)"):
        make({"x": x}).assert_equal(make({"x": y}))


def test_signed_zero_and_dtype_and_missing():
    with pytest.raises(AssertionError, match="1 of 1 differ"):
        make({"x": np.array([0.0], np.float32)}).assert_equal(make({"x": np.array([-0.0], np.float32)}))
    with pytest.raises(AssertionError, match="shape/dtype"):
        make({"x": np.zeros(2, np.float32)}).assert_equal(make({"x": np.zeros(2, np.float64)}))
    with pytest.raises(AssertionError, match="present only in self"):
        make({"x": np.ones(1), "y": np.ones(1)}).assert_equal(make({"x": np.ones(1)}))
    make({"x": np.ones(1), "y": np.ones(1)}).assert_equal(make({"x": np.ones(1)}), names=["x"])


def test_bad_source_and_missing_array():
    with pytest.raises(ValueError, match="Trace.source must be one of"):
        make({}, source="live")
    with pytest.raises(KeyError, match="has no array 'lanes'"):
        make({"x": np.ones(1)})["lanes"]
