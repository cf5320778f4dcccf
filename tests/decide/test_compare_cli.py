"""The public CLI contract of ``aitco compare|tco|preset|validate tco`` (test-library factors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aitco.cli.app import main

DATA = Path(__file__).parent / "data" / "tco_test_catalog.yaml"
EXAMPLES = Path(__file__).parents[2] / "examples"


SMALL = """
name: small
workload: {kind: training, model: gpt2-1.02b, tokens: 2.04e10, seq_len: 2048, global_batch: 256}
options:
  - {hardware: a100-sxm4-80gb, gpus: 64, pricing: owned}
  - {hardware: h100-sxm5-80gb, gpus: 32, pricing: owned}
  - {hardware: h100-sxm5-80gb, gpus: 32, pricing: on_demand, provider: aws}
"""


@pytest.fixture
def small(tmp_path) -> Path:
    p = tmp_path / "small.yaml"
    p.write_text(SMALL)
    return p


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main([*args, "--catalog", str(DATA)])
    out, err = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else 0
    return code, out, err


def test_compare_default_json(capsys):
    code, out, _ = run(["compare", "--json"], capsys)
    assert code == 0
    js = json.loads(out)
    training = [o for o in js["options"] if o["kind"] == "training"]
    inference = [o for o in js["options"] if o["kind"] == "inference"]
    assert len(training) == 9
    assert len(inference) >= 3
    for o in training:
        assert o["hardware"] in o["name"]
        assert o["pricing"] in o["name"]
        assert o["wall_clock_days"] > 0
        assert abs(sum(i["usd"] for i in o["items"]) - o["total_usd"]) < 1e-6 * o["total_usd"]
        assert all({"name", "usd", "category"} <= set(i) for i in o["items"])
    kinds = {c["kind"]: c for c in js["comparisons"]}
    assert kinds["training"]["cheapest"] in {o["name"] for o in training}
    assert kinds["training"]["fastest"] in {o["name"] for o in training}


def test_compare_table_and_explain(capsys):
    code, out, _ = run(["compare", "--explain"], capsys)
    assert code == 0
    assert "cheapest" in out
    assert "fastest" in out
    assert "Young/Daly" in out or "checkpoint" in out
    assert "Factors used" in out


def test_tco_multistage_json(capsys):
    code, out, _ = run(["tco", str(EXAMPLES / "multistage-tco.yaml"), "--json"], capsys)
    assert code == 0
    plan = json.loads(out)["options"][0]
    assert plan["kind"] == "plan"
    assert len(plan["stages"]) == 3
    assert plan["total_usd"] == pytest.approx(sum(s["total_usd"] for s in plan["stages"]))
    # one-off data costs are charged once, not once per stage
    assert sum(1 for i in plan["items"] if i["name"].endswith(":data_labeling")) == 1


def test_compare_scenario_file_and_preset(capsys):
    code, out, _ = run(
        ["compare", str(EXAMPLES / "default.yaml"), "--json", "--preset", "industry-2024"], capsys
    )
    assert code == 0
    js = json.loads(out)
    assert js["comparisons"][0]["preset"] == "industry-2024"


def test_preset_list_show_diff(capsys, small):
    code, out, _ = run(["preset", "list", "--json"], capsys)
    assert code == 0
    ids = {p["id"] for p in json.loads(out)["presets"]}
    assert {"industry-2024", "aitco-default"} <= ids
    code, out, _ = run(["preset", "show", "industry-2024", "--json"], capsys)
    assert code == 0
    show = json.loads(out)
    assert {r["factor"] for r in show["overrides"]} >= {
        "power-conversion.loss",
        "fragmentation.idle-fraction",
    }
    assert "URL not found" in show["source"] or "not found" in show["source"]
    code, out, _ = run(
        [
            "preset",
            "diff",
            "aitco-default",
            "industry-2024",
            "--scenario",
            str(EXAMPLES / "default.yaml"),
            "--json",
        ],
        capsys,
    )
    assert code == 0
    d = json.loads(out)
    owned = [o for o in d["options"] if "owned" in o["name"]]
    assert owned
    assert any(abs(o["delta_usd"]) > 0 for o in owned)
    # presets are records, not parts of key names
    for o in d["options"]:
        assert [p["preset"] for p in o["presets"]] == ["aitco-default", "industry-2024"]
        a, b = (p["total_usd"] for p in o["presets"])
        assert o["delta_usd"] == pytest.approx(b - a)
    assert all(len(f["presets"]) == 2 for f in d["factors"])


@pytest.mark.parametrize(
    ("yaml_text", "field"),
    [
        (
            "workload: {kind: training, model: gpt2-124m, tokens: 1e9}\n"
            "options: [{hardware: h100-sxm5-80gb, gpus: 8, usd_per_gpu_hour: -2}]\n",
            "usd_per_gpu_hour",
        ),
        (
            "workload: {kind: training, model: gpt2-124m, tokens: 1e9}\n"
            "options: [{hardware: l40s, gpus: 8, pricing: owned}]\n"
            "assumptions: {fragmentation.idle-fraction: 1.7}\n",
            "fragmentation.idle-fraction",
        ),
        (
            "workload: {kind: training, model: gpt2-124m, tokens: 1e9}\n"
            "options: [{hardware: l40s, gpus: 8, pricing: owned}]\n"
            "assumptions: {pue.air: 0.8, pue.liquid: 0.8}\n",
            "pue",
        ),
        (
            "workload: {kind: training, model: gpt2-124m, tokens: 1e9}\n"
            "options: [{hardware: h100-sxm5-80gb, gpus: 8, pricing: spot, provider: aws}]\n"
            "ops: {checkpointing: none}\n",
            "checkpoint",
        ),
    ],
)
def test_bad_input_exit_2_names_field(tmp_path, capsys, yaml_text, field):
    f = tmp_path / "bad.yaml"
    f.write_text(yaml_text)
    code, _, err = run(["tco", str(f)], capsys)
    assert code == 2
    assert "Traceback" not in err
    assert field in err


@pytest.mark.usefixtures("live_catalog_data")  # validation measures the shipped catalog
def test_validate_tco_json(capsys):
    code, out, _ = run(["validate", "tco", "--json"], capsys)
    assert code == 0
    res = json.loads(out)
    s = res["summary"]
    assert s["n_predicted"] >= 10
    # budget: half the rows fill in an unstated cluster size or batch; median APE within 50 %
    assert s["median_ape"] < 0.5
    assert all(0 < r["goodput"] <= 1 for r in res["rows"])


def test_calibration_profile_changes_throughput(tmp_path, capsys, small):
    from aitco.calibrate.profile import CalibrationProfile, save_profile
    from aitco.perf.efficiency import DEFAULT_EFFICIENCY

    slow = {k: v / 2 for k, v in DEFAULT_EFFICIENCY.gemm.items()}
    prof = CalibrationProfile(efficiency=DEFAULT_EFFICIENCY.model_copy(update={"gemm": slow}))
    path = save_profile(prof, tmp_path / "slow.yaml")
    scn = small
    _, base, _ = run(["tco", str(scn), "--json"], capsys)
    code, cal, _ = run(["tco", str(scn), "--json", "--calibration", str(path)], capsys)
    assert code == 0
    days = {o["name"]: o["wall_clock_days"] for o in json.loads(base)["options"]}
    for o in json.loads(cal)["options"]:
        if o["hardware"] == "h100-sxm5-80gb":
            assert o["wall_clock_days"] > days[o["name"]]


def test_offload_in_a_scenario_is_named_by_its_scenario_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An engine error about ``--offload`` in a scenario names ``workload.plan.offload``."""
    f = tmp_path / "s.yaml"
    f.write_text(
        "workload: {kind: training, model: llama-2-13b, tokens: 1.0e+9, seq_len: 4096,\n"
        "           global_batch: 8, plan: {offload: optimizer}}\n"
        "options: [{name: l40s, hardware: l40s, gpus: 1, pricing: on_demand}]\n"
    )
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(f)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "workload.plan.offload" in err
    assert "host_memory_gb" in err
