"""Spot interruption by provider and instance family; egress by volume tier (issue 33 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aitco.catalog.schema import instance_family, spot_rate_ids

HEAD = """\
sources:
  t: {title: test, url: 'https://example.org/t', retrieved: 2026-11-01}
offers:
  - id: test-box
    source: t
    provider: testcloud
    instance: box8.big
    accelerator: h100-sxm5-80gb
    accelerators_per_instance: 8
    prices:
      - {term: spot, region: us, usd_per_hour: 8.0, as_of: 2026-11-01, source: t}
factors:
"""
#: id -> (category, value, unit) of the test factors
FACTORS = {
    "spot-interruption.per-hour.testcloud.box8": ("spot_interruption", "0.01", "1/instance-h"),
    "spot-interruption.per-hour.testcloud": ("spot_interruption", "0.0001", "1/instance-h"),
    "transfer.usd-per-gb.internet-egress-test": ("transfer", "0.5", "USD/GB"),
    "transfer.tier-breaks-gb.internet-egress-test": ("transfer", "[0, 1000]", "GB/month"),
    "transfer.tier-usd-per-gb.internet-egress-test": ("transfer", "[0.1, 0.05]", "USD/GB"),
}


def _overlay(skip: tuple[str, ...] = ()) -> str:
    rows = [
        f"  - {{id: {k}, source: t, category: {c}, value: {v}, unit: {u}}}"
        for k, (c, v, u) in FACTORS.items()
        if not any(x in k for x in skip)
    ]
    return HEAD + "\n".join(rows) + "\n"


SCENARIO = """\
name: t
workload: {kind: training, model: gpt2-124m, tokens: 1.0e8}
data: {egress_gb: 3000, egress_kind: internet-egress-test}
options:
  - {hardware: h100-sxm5-80gb, gpus: 8, pricing: spot, offer: test-box}
"""


def test_family_ids() -> None:
    assert instance_family("p5.48xlarge") == "p5"
    assert instance_family("Standard_ND96isr_H100_v5") == "standard-nd96isr-h100-v5"
    assert spot_rate_ids("AWS", "p4d.24xlarge") == [
        "spot-interruption.per-hour.aws.p4d",
        "spot-interruption.per-hour.aws",
        "spot-interruption.per-hour.default",
    ]
    assert spot_rate_ids(None, "x.y") == ["spot-interruption.per-hour.default"]


def _compare(tmp_path: Path, overlay: str, capsys: pytest.CaptureFixture[str]) -> dict:
    from aitco.cli.app import main

    (tmp_path / "ov.yaml").write_text(overlay, "utf-8")
    (tmp_path / "scn.yaml").write_text(SCENARIO, "utf-8")
    args = ["--catalog", str(tmp_path / "ov.yaml"), "compare", str(tmp_path / "scn.yaml")]
    with pytest.raises(SystemExit) as exc:
        main([*args, "--json", "--explain"])
    assert exc.value.code in (0, None)
    return json.loads(capsys.readouterr().out)["options"][0]


@pytest.mark.integration  # runs the CLI over the live catalog
def test_compare_takes_the_family_rate_and_the_egress_tiers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    o = _compare(tmp_path, _overlay(), capsys)
    text = json.dumps(o)
    assert "spot-interruption.per-hour.testcloud.box8" in text
    egress = next(i for i in o["items"] if i["name"] == "egress")
    assert egress["usd"] == pytest.approx(1000 * 0.1 + 2000 * 0.05)  # one billed month
    # without the family rate and the tiers: the provider rate and the flat price
    o2 = _compare(tmp_path, _overlay(skip=("box8", "tier-")), capsys)
    assert "spot-interruption.per-hour.testcloud.box8" not in json.dumps(o2)
    egress2 = next(i for i in o2["items"] if i["name"] == "egress")
    assert egress2["usd"] == pytest.approx(3000 * 0.5)
    assert o2["interruptions"] < o["interruptions"]
