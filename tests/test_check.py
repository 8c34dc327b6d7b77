"""gpu_viz.check: the one comparison helper (numpy and torch alike), seeds, argument checks."""
import numpy as np
import pytest

from gpu_viz import check


def test_compare_counts_names_and_shows_the_first_mismatches():
    want = np.arange(12, dtype=np.float64).reshape(3, 4)
    got = want.copy()
    got[1, 2] += 0.5
    got[2, 3] = np.nan
    rep = check.compare("y", got, want, atol=1e-3, seed=42)
    assert not rep.ok and rep.mismatches == 2 and rep.nan == 1 and rep.n == 12
    (i0, got0, want0), (i1, got1, want1) = rep.first  # NaN != NaN: the second entry field by field
    assert (i0, got0, want0) == ((1, 2), 6.5, 6.0)
    assert i1 == (2, 3) and np.isnan(got1) and want1 == 11.0
    msg = rep.message()
    assert msg.startswith("y: 2 of 12 elements outside atol=0.001") and "(1, 2): got 6.5, want 6.0" in msg
    assert "1 NaN" in msg and "seed 42" in msg
    with pytest.raises(check.MismatchError, match="y: 2 of 12") as ei:
        check.assert_close("y", got, want, atol=1e-3, seed=42)
    assert ei.value.report.mismatches == 2


def test_nan_and_inf_semantics():
    want = np.array([1.0, np.nan, np.inf, -np.inf, 0.0])
    assert check.compare("y", want.copy(), want).ok                     # same NaN / inf pass
    assert not check.compare("y", np.array([1.0, 0.0, np.inf, -np.inf, 0.0]), want).ok  # NaN row not NaN
    rep = check.compare("y", np.array([1.0, np.nan, -np.inf, -np.inf, np.inf]), want)
    assert rep.mismatches == 2 and rep.inf == 2
    assert check.compare("y", np.array([1.0 + 1e-7]), np.array([1.0]), rtol=1e-6).ok


def test_merge_blocks_numbers_rows_from_the_offset():
    want = np.zeros((4, 3))
    got = want.copy()
    got[3, 1] = 1.0
    rep = check.Report("y", atol=0.1)
    for r0 in (0, 2):
        rep.merge(check.compare("y", got[r0:r0 + 2], want[r0:r0 + 2], atol=0.1, row_offset=r0))
    assert rep.n == 12 and rep.mismatches == 1 and rep.first == [((3, 1), 1.0, 0.0)]


def test_compare_on_torch_stays_on_its_device():
    torch = pytest.importorskip("torch")
    want = torch.linspace(-1, 1, 64, dtype=torch.float64).reshape(8, 8)
    got = want.to(torch.float16)
    assert check.compare("y", got, want, atol=1e-3, rtol=1e-3).ok
    assert check.compare("y", got, want.numpy(), atol=1e-3, rtol=1e-3).ok
    bad = got.clone()
    bad[5, 5] = float("nan")
    rep = check.compare("y", bad, want, atol=1e-3, rtol=1e-3)
    assert rep.mismatches == 1 and rep.first[0][0] == (5, 5)


def test_shape_mismatch_and_non_arrays():
    with pytest.raises(ValueError, match="shape"):
        check.compare("y", np.zeros(3), np.zeros(4))
    with pytest.raises(TypeError, match="y must be an array"):
        check.compare("y", object(), np.zeros(1))


def test_assert_equal_is_bit_for_bit():
    a = np.array([1.0, np.nan], np.float32)
    check.assert_equal("x", a, a.copy())
    with pytest.raises(AssertionError, match="1 of 2 differ"):
        check.assert_equal("x", a, np.array([np.nextafter(np.float32(1), np.float32(2)), np.nan], np.float32))
    with pytest.raises(AssertionError, match="dtype"):
        check.assert_equal("x", a, a.astype(np.float64))
    check.assert_equal("i", np.arange(3), np.arange(3))


@pytest.mark.parametrize("value,err", [(1.5, TypeError), (True, TypeError), ("3", TypeError), (-1, ValueError),
                                       (11, ValueError)])
def test_check_int_names_the_argument(value, err):
    with pytest.raises(err, match="block"):
        check.check_int("block", value, 0, 10)
    assert check.check_int("block", np.int64(7), 0, 10) == 7


@pytest.mark.parametrize("kw,name,err", [(dict(n=-5), "n", ValueError), (dict(n=2.5), "n", TypeError),
                                         (dict(n=4, seed=-1), "seed", ValueError),
                                         (dict(n=4, seed="abc"), "seed", TypeError),
                                         (dict(n=4, scale="x"), "scale", TypeError),
                                         (dict(n=4, scale=float("nan")), "scale", ValueError)])
def test_random_inputs_name_the_bad_argument(kw, name, err):
    """Bug class: an argument numpy rejects with its own words ("negative dimensions are not
    allowed", "expected non-negative integer") that never name the caller's argument."""
    with pytest.raises(err, match=rf"^{name} must"):
        check.random_f32(**kw)
    if "seed" in kw:
        with pytest.raises(err, match=r"^seed must"):
            check.rng(kw["seed"])
    assert check.random_f32(0).shape == (0,)


def test_seeds_replay():
    assert np.array_equal(check.random_f32(5, seed=3), check.random_f32(5, seed=3))
    assert isinstance(check.new_seed(), int)


@pytest.mark.parametrize("tol", ["atol", "rtol"])
@pytest.mark.parametrize("value,err", [(float("nan"), ValueError), (float("inf"), ValueError), (-1e-3, ValueError),
                                       (np.float32("nan"), ValueError), ("1e-3", TypeError), (True, TypeError),
                                       (None, TypeError)])
def test_a_tolerance_that_would_pass_anything_is_refused(tol, value, err):
    """Bug class: every comparison with a NaN tolerance is False, so compare/assert_close with
    atol=nan or rtol=nan passed every element (inf passed every finite one)."""
    got, want = np.ones(4), np.zeros(4)
    for fn in (check.compare, check.assert_close):
        with pytest.raises(err, match=tol):
            fn("y", got, want, **{tol: value})
    assert not check.compare("y", got, want, **{tol: 0.5}).ok  # a real tolerance still judges
    assert check.compare("y", got, want, **{tol: np.float64(0.5), "atol": 1.0}).ok
