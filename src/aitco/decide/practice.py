"""Published practice: the MFU and layouts of published runs, for plan search to stay within.

The table (``data/published_runs.csv``) is the validation data's throughput rows reduced to what
plan search compares against: accelerator family, precision class, model size, MFU in aitco's
convention and the published layout. It is generated from those rows by
``scripts/gen_published_runs.py`` (``aitco.validation.training.published_runs``) and a test
checks it is current. ``aitco train`` and ``aitco compare`` (and every surface built on
compare) read the same table through :func:`practice_for`, so a training workload gets the same
plan, and the same GPU-hours, in every command.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from aitco.perf.training_model import PublishedPractice

#: The shipped table of published runs.
PUBLISHED_RUNS_CSV = Path(__file__).parent / "data" / "published_runs.csv"
#: Published runs count as evidence for a model whose parameter count is within this factor of
#: theirs (a 70B model is judged by 18B-280B runs).
PRACTICE_SIZE_FACTOR = 4.0
#: Columns of :data:`PUBLISHED_RUNS_CSV`.
COLUMNS = ("row_id", "label", "family", "low_precision", "total_params", "mfu", "layout", "moe")


@dataclass(frozen=True)
class PublishedRun:
    """One throughput row reduced to what plan search compares against."""

    row_id: str
    label: str
    family: str
    low_precision: bool  # fp8 (its MFU is against the fp8 peak)
    total_params: float
    mfu: float  # aitco's MFU convention
    layout: tuple[int, int, int, int] | None  # (tp, pp, cp, ep) when published
    moe: bool = False  # a mixture-of-experts model (its layouts and MFU are not a dense model's)


def _row(run: PublishedRun) -> dict[str, str]:
    layout = "" if run.layout is None else "x".join(str(k) for k in run.layout)
    return {
        "row_id": run.row_id, "label": run.label, "family": run.family,
        "low_precision": str(int(run.low_precision)), "total_params": repr(run.total_params),
        "mfu": repr(run.mfu), "layout": layout, "moe": str(int(run.moe)),
    }  # fmt: skip


def write_published_runs(runs: list[PublishedRun], path: Path = PUBLISHED_RUNS_CSV) -> None:
    """Write ``runs`` as the shipped table (``scripts/gen_published_runs.py``)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in runs:
            w.writerow(_row(r))


def read_published_runs(path: Path = PUBLISHED_RUNS_CSV) -> tuple[PublishedRun, ...]:
    """Read the table of published runs."""
    with path.open(newline="", encoding="utf-8") as f:
        return tuple(
            PublishedRun(
                r["row_id"], r["label"], r["family"], r["low_precision"] == "1",
                float(r["total_params"]), float(r["mfu"]),
                tuple(int(x) for x in r["layout"].split("x")) if r["layout"] else None,  # type: ignore[arg-type]
                r.get("moe") == "1",
            )
            for r in csv.DictReader(f)
        )  # fmt: skip


@lru_cache(maxsize=1)
def shipped_runs() -> tuple[PublishedRun, ...]:
    """Return the shipped table (read once)."""
    return read_published_runs()


def published_practice(
    total_params: float,
    family: str,
    precision: str,
    runs: list[PublishedRun] | tuple[PublishedRun, ...],
    moe: bool = False,
) -> PublishedPractice | None:
    """Best published MFU and layouts for a model size and accelerator generation.

    Runs of the same accelerator family, precision class (fp8 or 16-bit) and kind of model
    (mixture-of-experts or dense: a dense run's layout has no expert parallelism to follow, and
    its MFU is not a MoE model's) whose model has between ``1/4`` and ``4`` times
    ``total_params`` count; ``None`` when there are none (the search then has no evidence to
    stay within, and says so by leaving the keys out).
    """
    low = precision == "fp8"
    near = [
        r for r in runs
        if r.family == family and r.low_precision == low and r.moe == moe
        and abs(math.log(r.total_params / total_params)) <= math.log(PRACTICE_SIZE_FACTOR)
    ]  # fmt: skip
    if not near:
        return None
    best = max(near, key=lambda r: r.mfu)
    layouts = tuple(sorted({r.layout for r in near if r.layout is not None}))
    return PublishedPractice(best.mfu, f"{best.row_id} {best.label}", layouts)


def practice_for(
    total_params: float, family: str, precision: str, moe: bool = False
) -> PublishedPractice | None:
    """:func:`published_practice` over the shipped table: what train and compare both use."""
    return published_practice(total_params, family, precision, shipped_runs(), moe)
