"""The sweep's packed-key unique gives numpy's 2-D unique, column for column."""

import numpy as np
import pytest

from aitco.decide.evaluators.tables import _unique_columns


@pytest.mark.parametrize("shape", [(5, 1), (5, 1000), (3, 20_000)])
def test_packed_unique_equals_numpy_unique(shape):
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 6, size=shape).astype(np.int64)
    keys[-1] *= 4096  # one wide row (a GPU count)
    want_u, want_inv = np.unique(keys, axis=1, return_inverse=True)
    got_u, got_inv = _unique_columns(keys)
    np.testing.assert_array_equal(got_u, want_u)
    np.testing.assert_array_equal(got_inv, want_inv.reshape(-1))


def test_overflowing_keys_fall_back_to_numpy():
    keys = np.array([[2**40, 1, 0], [2**40, 0, 0]], dtype=np.int64)
    got_u, got_inv = _unique_columns(keys)
    want_u, want_inv = np.unique(keys, axis=1, return_inverse=True)
    np.testing.assert_array_equal(got_u, want_u)
    np.testing.assert_array_equal(got_inv, want_inv.reshape(-1))
