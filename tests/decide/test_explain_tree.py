"""One explain tree from dollars to step time (issue 34 item 4).

A cost item is a term whose children are the performance terms: ``compare --explain`` goes from
``total_usd`` through the compute item to GPU-hours, tokens/s, the step time and the engine's
step-time (kernel) terms, and every level adds up to the one above.
"""

from __future__ import annotations

import json
import math

import pytest

from aitco.cli.app import main
from aitco.decide.compare import compare
from aitco.decide.scenario import Scenario

TRAIN = {
    "name": "tree",
    "workload": {"kind": "training", "model": "llama-3-8b", "tokens": 2e9, "seq_len": 4096},
    "options": [{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand"}],
}
SERVE = {
    "name": "tree-service",
    "workload": {"kind": "inference", "model": "llama-3-8b", "concurrency": 16},
    "options": [{"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "owned"}],
}


def _find(term, name):
    for _, t in term.walk():
        if t.name == name:
            return t
    raise KeyError(name)


def test_training_tree_goes_from_dollars_to_kernels(catalog):
    o = compare(Scenario.from_dict(TRAIN), catalog).options[0]
    root = o.explain_tree()
    assert root.value == pytest.approx(math.fsum(c.value for c in root.children))
    item = o.item("rental_on_demand")
    (gh,) = item.terms
    assert gh.name == "productive_gpu_hours"
    assert item.usd == pytest.approx(gh.value * o.values["price_usd_per_gpu_h"], rel=1e-12)
    assert gh.value == pytest.approx(8 * o.values["productive_h"], rel=1e-12)
    tps = _find(gh, "tokens_per_s")
    assert tps.value == pytest.approx(o.values["tokens_per_s"], rel=1e-12)
    assert _find(gh, "productive_h").value == pytest.approx(2e9 / tps.value / 3600, rel=1e-9)
    step = _find(gh, "step_time_s")
    assert step.children, "the step time has its kernel terms"
    assert step.value == pytest.approx(math.fsum(t.value for t in step.children), rel=1e-9)


def test_service_tree_reaches_the_latency_terms(catalog):
    o = compare(Scenario.from_dict(SERVE), catalog).options[0]
    compute = [i for i in o.items if i.category == "compute" and i.terms]
    assert compute, "the compute items of a service carry the performance terms"
    for key in ("ttft_s", "tpot_s"):
        t = _find(compute[0].terms[0], key)
        assert t.value == pytest.approx(o.values[key], rel=1e-12)
        assert t.value == pytest.approx(math.fsum(c.value for c in t.children), rel=1e-9)


def test_compare_explain_json_carries_the_tree(tmp_path, capsys):
    scn = tmp_path / "s.json"
    scn.write_text(json.dumps(TRAIN))
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(scn), "--json", "--explain"])
    out, err = capsys.readouterr()
    assert exc.value.code in (0, None), err
    item = next(i for i in json.loads(out)["options"][0]["items"] if "terms" in i)
    chain = []
    node = item["terms"][0]
    while node.get("children"):
        chain.append(node["name"])
        node = node["children"][0]
    assert chain == ["productive_gpu_hours", "productive_h", "tokens_per_s", "step_time_s"]
    with pytest.raises(SystemExit):
        main(["compare", str(scn), "--explain"])
    text = capsys.readouterr().out
    assert "step_time_s" in text
    assert "total_usd" in text
