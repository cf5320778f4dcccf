"""Rich tables of the ``aitco validate ...`` commands (the validation layer returns plain dicts)."""

from __future__ import annotations

from typing import Any

from aitco.cli.render import console, table


def render_tco_validation(res: dict[str, Any]) -> None:
    """Print the error table of ``aitco validate tco`` (rich)."""
    rows = [
        [
            r["id"],
            r["model"],
            r["hardware"],
            r["gpus"],
            r["gpu_hours_observed"],
            r["gpu_hours_predicted"],
            f"{100.0 * r['ape']:.0f}%",
            f"{r['goodput']:.3f}",
            f"{r['mfu']:.2f}",
            "; ".join(r["notes"]),
        ]
        for r in res["rows"]
    ]
    console.print(
        table(
            "Full-run GPU-hours: published vs predicted (throughput x goodput)",
            [
                "id",
                "model",
                "hardware",
                "gpus",
                "published",
                "predicted",
                "APE",
                "goodput",
                "MFU",
                "notes",
            ],
            rows,
        )
    )
    erows = [
        [
            r["id"],
            r["model"],
            r["power_w_per_gpu_card"],
            r["meter_w_per_gpu_aitco"],
            r["energy_mwh_card"],
            r["energy_mwh_aitco_power_model"],
            f"{r['energy_ratio_aitco_to_card']:.2f}",
            r.get("tco2e_card"),
            r.get("tco2e_aitco_from_card_energy"),
        ]
        for r in res["rows"]
        if "energy_mwh_card" in r
    ]
    if erows:
        console.print(
            table(
                "Energy on the model cards' basis (their GPU-hours): card vs aitco power model",
                [
                    "id",
                    "model",
                    "card W/GPU",
                    "aitco W/GPU",
                    "card MWh",
                    "aitco MWh",
                    "ratio",
                    "card tCO2e",
                    "aitco tCO2e",
                ],
                erows,
            )
        )
    for s in res["skipped"]:
        console.print(f"skipped {s['id']} {s['model']}: {s['reason']}", highlight=False)
    console.print(res["summary"], highlight=False)
