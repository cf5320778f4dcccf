"""Constant-memory aggregation of per-device telemetry samples (DCGM, nvidia-smi).

Telemetry files can hold millions of samples, so parsers feed samples one at a time into a
:class:`TelemetryAggregator`, which keeps only running statistics per device: sample count,
covered time, per-field count/sum/min/max, integrated power, the energy counter (with resets),
and the time spent below an utilisation threshold (idle).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aitco.units import KILO, SECONDS_PER_HOUR, printed_unit_to_si

#: Default utilisation below which a device counts as idle. [0-1]
DEFAULT_IDLE_THRESHOLD = 0.30
#: Millijoules per joule (DCGM ``TOTEC`` is in mJ).
MJ_PER_J = KILO


@dataclass
class _FieldStats:
    n: int = 0
    total: float = 0.0
    lo: float = math.inf
    hi: float = -math.inf

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        if x < self.lo:
            self.lo = x
        if x > self.hi:
            self.hi = x

    def to_json(self) -> dict[str, Any]:
        if not self.n:
            return {"n": 0, "mean": None, "min": None, "max": None}
        return {"n": self.n, "mean": self.total / self.n, "min": self.lo, "max": self.hi}


@dataclass
class _Device:
    samples: int = 0
    time_s: float = 0.0
    fields: dict[str, _FieldStats] = field(default_factory=dict)
    power_energy_j: float = 0.0
    power_time_s: float = 0.0
    util_time_s: float = 0.0
    util_weighted: float = 0.0
    idle_time_s: float = 0.0
    counter_first_j: float | None = None
    counter_last_j: float | None = None
    counter_energy_j: float = 0.0
    counter_resets: int = 0


class TelemetryAggregator:
    """Running per-device statistics of telemetry samples.

    Parameters
    ----------
    idle_threshold : float
        Utilisation below which a sample counts as idle. [0-1]
    """

    def __init__(self, idle_threshold: float = DEFAULT_IDLE_THRESHOLD) -> None:
        self.idle_threshold = idle_threshold
        self.devices: dict[str, _Device] = {}

    def add(
        self,
        device: str,
        dt_s: float,
        values: dict[str, float],
        *,
        power_w: float | None = None,
        util: float | None = None,
        energy_counter_j: float | None = None,
    ) -> None:
        """Add one sample of ``device`` covering ``dt_s`` seconds.

        Parameters
        ----------
        device : str
            Device label (``"GPU 0"``).
        dt_s : float
            Time this sample stands for. [s]
        values : dict of str to float
            Numeric field values (missing fields left out).
        power_w : float, optional
            Board power. [W]
        util : float, optional
            Utilisation. [0-1]
        energy_counter_j : float, optional
            Reading of a cumulative energy counter. [J]
        """
        d = self.devices.get(device)
        if d is None:
            d = self.devices[device] = _Device()
        d.samples += 1
        d.time_s += dt_s
        fields = d.fields
        for k, x in values.items():
            st = fields.get(k)
            if st is None:
                st = fields[k] = _FieldStats()
            st.n += 1
            st.total += x
            if x < st.lo:
                st.lo = x
            if x > st.hi:
                st.hi = x
        if power_w is not None:
            d.power_energy_j += power_w * dt_s
            d.power_time_s += dt_s
        if util is not None:
            d.util_time_s += dt_s
            d.util_weighted += util * dt_s
            if util < self.idle_threshold:
                d.idle_time_s += dt_s
        if energy_counter_j is not None:
            if d.counter_last_j is None:
                d.counter_first_j = energy_counter_j
            elif energy_counter_j >= d.counter_last_j:
                d.counter_energy_j += energy_counter_j - d.counter_last_j
            else:  # the counter went backwards: a reset (driver reload, reboot)
                d.counter_resets += 1
                d.counter_energy_j += energy_counter_j
            d.counter_last_j = energy_counter_j

    def summary(self) -> dict[str, Any]:
        """Per-device and total statistics (units in the key names)."""
        per: dict[str, Any] = {}
        tot_time = tot_idle = tot_util_time = 0.0
        energy_j = 0.0
        energy_source = set()
        idle_devices = []
        for name, d in sorted(self.devices.items(), key=lambda kv: _natural(kv[0])):
            mean_util = d.util_weighted / d.util_time_s if d.util_time_s else None
            if d.counter_first_j is not None and d.samples > 1:
                e_j: float | None = d.counter_energy_j
                energy_source.add("counter")
            elif d.power_time_s:
                e_j = d.power_energy_j
                energy_source.add("integrated-power")
            else:
                e_j = None
            if e_j is not None:
                energy_j += e_j
            tot_time += d.time_s
            if d.util_time_s:
                tot_util_time += d.util_time_s
                tot_idle += d.idle_time_s
            if mean_util is not None and mean_util < self.idle_threshold:
                idle_devices.append(name)
            per[name] = {
                "samples": d.samples,
                "time_s": d.time_s,
                "mean_power_w": d.power_energy_j / d.power_time_s if d.power_time_s else None,
                "energy_j": e_j,
                "energy_counter_resets": d.counter_resets,
                "mean_utilization": mean_util,
                "idle_time_s": d.idle_time_s if d.util_time_s else None,
                "fields": {k: v.to_json() for k, v in d.fields.items()},
            }
        return {
            "n_devices": len(self.devices),
            "samples": sum(d.samples for d in self.devices.values()),
            "gpu_hours": tot_time / SECONDS_PER_HOUR,
            "energy_j": energy_j if energy_source else None,
            "energy_source": "+".join(sorted(energy_source)) or None,
            "mean_power_w": _mean_power(self.devices.values()),
            "idle_threshold": self.idle_threshold,
            "idle_gpu_hours": tot_idle / SECONDS_PER_HOUR if tot_util_time else None,
            "idle_fraction": tot_idle / tot_util_time if tot_util_time else None,
            "idle_devices": idle_devices,
            "devices": per,
        }


def _mean_power(devs: Any) -> float | None:
    e = sum(d.power_energy_j for d in devs)
    t = sum(d.power_time_s for d in devs)
    return e / t if t else None


def _natural(name: str) -> tuple[str, int]:
    head, _, tail = name.rpartition(" ")
    return (head, int(tail)) if tail.isdecimal() else (name, -1)


def add_si_fields(summary: dict[str, Any], units: Mapping[str, str]) -> None:
    """Give each device of ``summary`` a ``fields_si`` mapping: its field statistics in SI.

    The ``fields`` statistics keep the unit the tool printed (``utilization.gpu`` in percent,
    ``memory.used`` in MiB), as the ``units`` mapping says; ``fields_si`` holds the same
    statistics converted to SI, each key carrying its unit (``utilization.gpu_fraction``,
    ``memory.used_bytes``, ``power.draw_w``; :data:`aitco.units.PRINTED_UNITS_TO_SI`). Fields
    with no unit, or one not in that table, are left out.

    Parameters
    ----------
    summary : dict
        The output of :meth:`TelemetryAggregator.summary`; changed in place.
    units : mapping of str to str
        Unit of each field, as printed (``"%"``, ``"MiB"``, ``"W"``).
    """
    for dev in summary["devices"].values():
        out: dict[str, Any] = {}
        for name, stats in dev["fields"].items():
            conv = printed_unit_to_si(units.get(name, ""))
            if conv is None:
                continue
            suffix, factor = conv
            out[f"{name}_{suffix}"] = {
                k: v if k == "n" or v is None else v * factor for k, v in stats.items()
            }
        dev["fields_si"] = out
