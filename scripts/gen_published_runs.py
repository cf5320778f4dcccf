"""Regenerate src/aitco/decide/data/published_runs.csv from the validation rows.

The table of published runs plan search stays within (``aitco.decide.practice``); run after the
training validation data or the catalog's accelerator peaks change. A test fails when it is stale.
"""

from __future__ import annotations

from aitco.catalog.loader import load_catalog
from aitco.decide.practice import PUBLISHED_RUNS_CSV, write_published_runs
from aitco.validation.training import published_runs


def main() -> None:
    """Write the table and say how many runs it holds."""
    runs = published_runs(load_catalog(use_env=False))
    write_published_runs(runs)
    print(f"wrote {len(runs)} published runs to {PUBLISHED_RUNS_CSV}")


if __name__ == "__main__":
    main()
