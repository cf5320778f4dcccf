from __future__ import annotations

import json

import pytest

from aitco.cli.app import main
from aitco.decide.fit_score import fit_score
from aitco.errors import InputError


def dims(r):
    return {k: v["score"] for k, v in r["dimensions"].items()}


def test_precision_support(catalog):
    r = fit_score(catalog, "llama-3-8b", "v100-sxm2-32gb", precision="bf16")
    assert dims(r)["precision_support"] == 0.0
    assert "fp16" in r["dimensions"]["precision_support"]["reason"]
    assert r["overall"] == 0.0


def test_memory_fit_monotone_in_gpus(catalog):
    scores = [
        dims(fit_score(catalog, "llama-3.1-70b", "h100-sxm5-80gb", gpus=g))["memory_fit"]
        for g in (1, 2, 4)
    ]
    assert scores[0] == 0.0
    assert scores == sorted(scores)
    assert scores[-1] == 1.0
    big = fit_score(catalog, "llama-3.1-405b", "l4", gpus=8)
    assert "does not fit" in big["dimensions"]["memory_fit"]["reason"]


def test_kv_bandwidth_sensitivity(catalog):
    short = fit_score(
        catalog, "llama-3.1-70b", "h100-sxm5-80gb", input_tokens=256, output_tokens=256
    )
    long = fit_score(
        catalog, "llama-3.1-70b", "h100-sxm5-80gb", input_tokens=32000, output_tokens=512
    )
    assert dims(long)["kv_bandwidth"] < dims(short)["kv_bandwidth"]
    h100 = fit_score(catalog, "llama-3.1-70b", "h100-sxm5-80gb", input_tokens=8000)
    h200 = fit_score(catalog, "llama-3.1-70b", "h200-sxm-141gb", input_tokens=8000)
    assert dims(h200)["kv_bandwidth"] > dims(h100)["kv_bandwidth"]  # same peak, more HBM bandwidth


def test_topology_pcie_vs_nvswitch(catalog):
    nv = fit_score(catalog, "llama-3.1-70b", "hgx-h100-8")
    pcie = fit_score(catalog, "llama-3.1-70b", "pcie-h100-8")
    assert dims(pcie)["topology"] < dims(nv)["topology"]
    small = fit_score(catalog, "llama-3-8b", "hgx-h100-8")
    assert dims(small)["topology"] == 1.0


def test_moe_interconnect(catalog):
    dense = fit_score(catalog, "llama-3-8b", "hgx-h100-8")
    moe = fit_score(catalog, "mixtral-8x7b", "hgx-h100-8")
    assert dims(dense)["moe_interconnect"] == 1.0
    assert 0 < dims(moe)["moe_interconnect"] < 1
    pcie = fit_score(catalog, "mixtral-8x7b", "pcie-h100-8")
    assert dims(pcie)["moe_interconnect"] < dims(moe)["moe_interconnect"]


def test_bad_inputs(catalog):
    with pytest.raises(InputError):
        fit_score(catalog, "llama-3-8b", "h100-sxm5-80gb", kind="serving")
    with pytest.raises(InputError, match="did you mean"):
        fit_score(catalog, "llama-3-8b", "h100")


def test_cli_json(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit-score", "--model", "llama-3-8b", "--hardware", "l4", "--json"])
    out, _ = capsys.readouterr()
    assert exc.value.code == 0
    d = json.loads(out)
    assert set(d["dimensions"]) == {
        "memory_fit",
        "kv_bandwidth",
        "moe_interconnect",
        "topology",
        "precision_support",
    }
    assert all(v["reason"] for v in d["dimensions"].values())


@pytest.mark.parametrize(
    ("kind", "model", "hw"),
    [("inference", "llama-3.1-405b", "h100-sxm5-80gb"), ("inference", "llama-3-8b", "l4"),
     ("training", "llama-3-8b", "l4")],
)  # fmt: skip
def test_fit_verdict_is_compare_verdict(kind, model, hw, catalog):
    """Issue 32 item 3: fit-score's feasibility is the engine's, as compare reaches it for an
    option of the same hardware and devices (and "does not fit in memory" in both)."""
    from aitco.decide.compare import compare
    from aitco.decide.scenario import Scenario

    fit = fit_score(catalog, model, hw, kind=kind, gpus=8, batch=8 if kind == "inference" else 1)
    wl = (
        {"kind": "inference", "model": model, "input_tokens": 2048, "output_tokens": 512,
         "concurrency": 8}
        if kind == "inference"
        else {"kind": "training", "model": model, "tokens": 1e9, "seq_len": 4096}
    )  # fmt: skip
    scn = Scenario.from_dict(
        {"workload": wl, "options": [{"hardware": hw, "gpus": 8, "usd_per_gpu_hour": 1.0}]}
    )
    b = compare(scn, catalog).options[0]
    fits_in_compare = b.values.get("fits", True)
    assert fit["feasible"] is fits_in_compare
    if not fit["feasible"]:
        assert fit["overall"] == 0.0
        assert fit["infeasible_reasons"] == b.values["infeasible_reasons"]
