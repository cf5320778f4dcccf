"""Every scenario example validates, round-trips, and names only ids that exist in the catalog."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aitco.decide.scenario import HardwareOption, Scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Top-level keys of the example files that are scenarios (others are ROI/sweep/buy-vs-rent specs).
SCENARIO_KEYS = {"workload", "stages"}


def _scenario_files() -> list[Path]:
    out = []
    for p in sorted(EXAMPLES.glob("*.yaml")):
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and SCENARIO_KEYS & set(doc):
            out.append(p)
    return out


FILES = _scenario_files()


def test_there_are_examples() -> None:
    names = {p.name for p in FILES}
    for mine in (
        "training-h100-vs-a100-vs-l40s.yaml",
        "inference-llama3-8b-chat.yaml",
        "finetune-lora-llama3-70b.yaml",
        "multistage-pretrain-finetune-serve.yaml",
    ):
        assert mine in names


def _check_option(catalog, opt: HardwareOption, where: str) -> None:
    acc, _system = catalog.hardware(opt.hardware)  # raises on an unknown id
    if opt.offer is not None:
        offer = catalog.offers[opt.offer]  # KeyError on an unknown offer id
        assert offer.accelerator == acc.id, f"{where}: offer {opt.offer} is not a {acc.id}"
        if opt.pricing not in ("owned", "colocation"):
            assert offer.usd_per_accel_hour(opt.pricing) is not None, (
                f"{where}: offer {opt.offer} has no {opt.pricing} price"
            )
    elif opt.provider is not None and opt.pricing not in ("owned", "colocation"):
        offers = [o for o in catalog.offers_for(acc.id) if o.provider == opt.provider]
        assert any(o.usd_per_accel_hour(opt.pricing) is not None for o in offers), (
            f"{where}: no {opt.provider} {opt.pricing} offer for {acc.id}"
        )


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_example_validates_and_ids_exist(path: Path, catalog) -> None:
    scn = Scenario.from_yaml(path)
    assert Scenario.from_dict(yaml.safe_load(scn.to_yaml())) == scn  # round trip
    if scn.preset:
        assert scn.preset in catalog.presets
    for fid in scn.assumptions:
        assert fid in catalog.factors, f"{path.name}: unknown factor {fid}"
    if scn.workload is not None:
        catalog.resolve_model(scn.workload.model)
        for i, opt in enumerate(scn.options):
            _check_option(catalog, opt, f"{path.name} options[{i}]")
    for st in scn.stages:
        catalog.resolve_model(st.workload.model)
        _check_option(catalog, st.option, f"{path.name} stage {st.name}")
