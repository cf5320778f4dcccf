"""Hand-computed checks of the alpha-beta collectives and the roofline."""

from __future__ import annotations

import numpy as np
import pytest

from aitco.catalog.schema import System
from aitco.errors import InputError
from aitco.perf import comms
from aitco.perf.roofline import kernel_time_s, ridge_point


def test_ring_allreduce_hand_computed() -> None:
    # 1 GB over 8 ranks at 100 GB/s, 5 us: 2*7/8*1e9/100e9 + 2*7*5e-6
    t = comms.allreduce_time_s(1e9, 8, 100.0, 5.0)
    assert float(t) == pytest.approx(2 * 7 / 8 * 0.01 + 14 * 5e-6)


def test_efficiency_scales_bandwidth_term_only() -> None:
    t = comms.allreduce_time_s(1e9, 4, 50.0, 10.0, efficiency=0.5)
    assert float(t) == pytest.approx(2 * 3 / 4 * 1e9 / 25e9 + 6 * 10e-6)


def test_tree_latency_is_logarithmic() -> None:
    t = comms.allreduce_time_s(0.0, 1024, 50.0, 3.0, algorithm="tree")
    assert float(t) == pytest.approx(2 * 10 * 3e-6)
    ring = comms.allreduce_time_s(0.0, 1024, 50.0, 3.0, algorithm="ring")
    assert float(ring) == pytest.approx(2 * 1023 * 3e-6)


def test_unknown_algorithm_raises() -> None:
    with pytest.raises(InputError):
        comms.allreduce_time_s(1.0, 2, 1.0, 1.0, algorithm="butterfly")


def test_rs_ag_sum_to_allreduce() -> None:
    m, n, bw, lat = 3e8, 16, 25.0, 7.0
    rs = comms.reduce_scatter_time_s(m, n, bw, lat)
    ag = comms.allgather_time_s(m, n, bw, lat)
    assert float(rs + ag) == pytest.approx(float(comms.allreduce_time_s(m, n, bw, lat)))
    assert float(rs) == pytest.approx(15 / 16 * 3e8 / 25e9 + 15 * 7e-6)


def test_alltoall_and_p2p() -> None:
    assert float(comms.alltoall_time_s(8e8, 8, 100.0, 2.0)) == pytest.approx(
        7 / 8 * 8e-3 + 7 * 2e-6
    )
    assert float(comms.p2p_time_s(1e8, 50.0, 4.0)) == pytest.approx(2e-3 + 4e-6)
    assert float(comms.p2p_time_s(0.0, 50.0, 4.0)) == 0.0


def test_single_rank_is_free_and_vectorised() -> None:
    t = comms.allreduce_time_s(np.array([1e9, 1e9, 0.0]), np.array([1, 2, 8]), 100.0, 5.0)
    assert t.shape == (3,)
    assert t[0] == 0.0
    assert t[1] == pytest.approx(1e9 / 100e9 + 2 * 5e-6)
    assert t[2] == pytest.approx(14 * 5e-6)


def test_hierarchical_allreduce_hand_computed() -> None:
    m = 8e9
    t = comms.hierarchical_allreduce_time_s(m, 8, 4, 400.0, 2.0, 50.0, 10.0)
    rs = 7 / 8 * m / 400e9 + 7 * 2e-6
    ar = 2 * 3 / 4 * (m / 8) / 50e9 + 6 * 10e-6
    assert float(t) == pytest.approx(2 * rs + ar)


def _system(**kw: object) -> System:
    base: dict[str, object] = dict(
        id="test-node",
        accelerator="h100-sxm5-80gb",
        devices_per_node=8,
        intra_node_fabric="nvswitch",
        intra_node_bandwidth_gb_s=450.0,
        intra_node_latency_us=3.0,
        scale_up_domain=8,
        scale_out_bandwidth_gb_s=50.0,
        scale_out_latency_us=8.0,
    )
    base.update(kw)
    return System.model_validate(base)


def test_group_link_picks_fabric() -> None:
    sys_ = _system()
    bw, lat, eff = comms.group_link(sys_, np.array([8, 16, 2, 2]), np.array([1, 1, 4, 8]), 0.9, 0.7)
    assert bw.tolist() == [450.0, 50.0, 450.0, 50.0]
    assert lat.tolist() == [3.0, 8.0, 3.0, 8.0]
    assert eff.tolist() == [0.9, 0.7, 0.9, 0.7]


def test_group_link_nvl72_domain() -> None:
    sys_ = _system(devices_per_node=4, scale_up_domain=72, intra_node_bandwidth_gb_s=900.0)
    bw, _, _ = comms.group_link(sys_, np.array([64, 72, 144]))
    assert bw.tolist() == [900.0, 900.0, 50.0]


def test_no_scale_out_is_infinite() -> None:
    sys_ = _system(scale_out_bandwidth_gb_s=0.0)
    bw, lat, eff = comms.group_link(sys_, 16)
    assert np.isinf(comms.allreduce_time_s(1e6, 16, bw, lat, eff))


def test_kernel_time_is_max_of_compute_and_memory() -> None:
    # 1 TFLOP at 1000 TFLOP/s x 0.5 = 2 ms; 1 GB at 1000 GB/s = 1 ms
    assert float(kernel_time_s(1e12, 1e9, 1000.0, 1000.0, 0.5, 1.0)) == pytest.approx(2e-3)
    assert float(kernel_time_s(1e9, 4e9, 1000.0, 1000.0)) == pytest.approx(4e-3)
    assert float(ridge_point(989.0, 3350.0)) == pytest.approx(989e12 / 3350e9)


def test_hierarchical_alltoall_limits_and_hand_computed() -> None:
    """Inside one node it is the flat all-to-all; with one rank per node the flat one on the NIC;
    across 2 nodes of 8 the NIC carries the 8 remote peers' share while NVLink carries 7/16."""
    up, out = (450.0, 2.0, 1.0), (50.0, 5.0, 1.0)
    m = 1.6e9
    same = comms.hierarchical_alltoall_time_s(m, 8, 8, up, out)
    assert float(same) == pytest.approx(float(comms.alltoall_time_s(m, 8, *up)))
    one = comms.hierarchical_alltoall_time_s(m, 16, 1, up, out)
    assert float(one) == pytest.approx(float(comms.alltoall_time_s(m, 16, *out)))
    two = comms.hierarchical_alltoall_time_s(m, 16, 8, up, out)
    remote = 8 / 16 * m / 50e9 + 8 * 5e-6
    assert float(two) == pytest.approx(remote)
    assert remote > 7 / 16 * m / 450e9 + 7 * 2e-6  # the NIC part is the longer one
    # a node-deduplicated dispatch sends its given remote share; NVLink forwards (g-1)/g
    dedup = comms.hierarchical_alltoall_time_s(m, 16, 8, up, out, remote_share=0.2)
    assert float(dedup) == pytest.approx(0.2 * m / 50e9 + 8 * 5e-6)
