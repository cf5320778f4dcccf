"""aitco probe: numpy measurements, fractions of the catalog peaks, and the torch path's wiring."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from aitco.calibrate import probe


def test_numpy_probe_measures_something() -> None:
    r = probe.probe_numpy(matmul_size=128, copy_bytes=2**20, repeats=2)
    assert r.backend == "numpy"
    assert r.matmul_tflops["fp32"] > 0
    assert r.memory_bandwidth_gb_s > 0
    assert r.copy_bytes == 2**20


def test_fractions_of_peak() -> None:
    r = probe.ProbeResult(
        device="x",
        backend="numpy",
        matmul_tflops={"bf16": 500.0, "fp32": 30.0},
        memory_bandwidth_gb_s=3000.0,
    )
    f = probe.with_fractions(r, {"bf16": 1000.0}, 3350.0)
    assert f.gemm_fraction == {"bf16": pytest.approx(0.5)}
    assert f.hbm_fraction == pytest.approx(3000 / 3350)


class _T(np.ndarray):
    def copy_(self, src: np.ndarray) -> _T:
        np.copyto(self, src)
        return self


def _fake_torch() -> types.ModuleType:
    """A numpy-backed stand-in with the few torch names the probe uses (wiring test only)."""
    t = types.ModuleType("torch")
    t.float32, t.bfloat16, t.float16 = np.float32, np.float32, np.float16  # type: ignore[attr-defined]
    t.cuda = types.SimpleNamespace(is_available=lambda: False, synchronize=lambda: None)  # type: ignore[attr-defined]
    t.backends = types.SimpleNamespace(
        cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False))
    )  # type: ignore[attr-defined]
    t.randn = lambda *shape, device, dtype: np.ones(shape, dtype=dtype).view(_T)  # type: ignore[attr-defined]
    t.ones = lambda n, device, dtype: np.ones(n, dtype=dtype).view(_T)  # type: ignore[attr-defined]
    t.empty_like = lambda x: np.empty_like(x).view(_T)  # type: ignore[attr-defined]
    t.matmul = np.matmul  # type: ignore[attr-defined]
    return t


def test_torch_path_wiring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch())
    assert probe.torch_available()
    r = probe.run_probe(matmul_size=64, copy_bytes=2**16, repeats=1)
    assert r.backend == "torch-cpu"
    assert r.device == "cpu"
    assert set(r.matmul_tflops) == {"fp32", "bf16"}  # tf32/fp16 are GPU-only
    assert r.memory_bandwidth_gb_s > 0
