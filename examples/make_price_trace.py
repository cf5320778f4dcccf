"""Write examples/price_trace_h100_spot.csv: a SYNTHETIC, illustrative 7-day spot price trace.

Levels are anchored on the spot snapshots in shared/reference/cloud-prices.csv (AWS p5.48xlarge
spot us-east-1 20.99 $/h and us-east-2 14.38 $/h for 8 H100; a community-cloud H100 spot at
0.81 $/GPU-h in the catalog); the daily cycle, the noise, the outage and the preemptions are made
up to exercise the policy. Not a measurement. Run: python examples/make_price_trace.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("price_trace_h100_spot.csv")
OFFERS = {  # offer: (instance price level [USD/h], GPUs per instance, capacity [GPUs])
    "aws-p5-spot-us-east-1": (20.99, 8, 64),
    "aws-p5-spot-us-east-2": (14.38, 8, 32),
    "community-h100-spot": (0.81 * 1.8, 1, 12),
}


def main() -> None:
    """Write the trace (deterministic: fixed seed)."""
    rng = np.random.default_rng(2026)
    hours = 7 * 24
    lines = [
        "# SYNTHETIC illustrative trace (see examples/make_price_trace.py); not measured prices",
        "timestamp,offer,usd_per_hour,gpus,capacity_gpus,interrupted",
    ]
    for h in range(hours):
        ts = f"2026-03-02T{h % 24:02d}:00:00Z".replace("2026-03-02", f"2026-03-{2 + h // 24:02d}")
        for k, (offer, (level, n, cap)) in enumerate(OFFERS.items()):
            daily = 1.0 + 0.25 * np.sin(2 * np.pi * (h + 6 * k) / 24)
            price = level * daily * float(np.exp(rng.normal(0, 0.08)))
            interrupted = int(rng.random() < 0.01)
            if offer == "aws-p5-spot-us-east-2" and 60 <= h < 72:
                lines.append(f"{ts},{offer},,{n},{cap},0")  # no capacity for 12 hours
                continue
            lines.append(f"{ts},{offer},{price:.4f},{n},{cap},{interrupted}")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
