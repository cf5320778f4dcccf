"""One smoke test of the shipped catalog: the default comparison runs on it and prices options.

Every other test outside ``tests/catalog`` and ``tests/validation`` reads the hand-picked test
library (``tests/fixtures/catalog``); this one checks that the shipped data, as a user gets it,
still drives ``aitco compare`` end to end (this folder's ``conftest.py`` unsets
``AITCO_CATALOG_DATA``).
"""

from __future__ import annotations

import json
import math

import pytest

from aitco.catalog.loader import builtin_data_dir, shipped_data_dir
from aitco.cli.app import main


def test_default_compare_on_the_shipped_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert builtin_data_dir() == shipped_data_dir()
    with pytest.raises(SystemExit) as exc:
        main(["compare", "--json"])
    out, err = capsys.readouterr()
    assert exc.value.code in (0, None), err
    options = json.loads(out)["options"]
    assert len(options) >= 4
    feasible = [o for o in options if o["feasible"]]
    assert feasible, "no option of the default comparison is feasible on the shipped catalog"
    for o in feasible:
        assert math.isfinite(o["total_usd"])
        assert o["total_usd"] > 0
        assert abs(sum(i["usd"] for i in o["items"]) - o["total_usd"]) <= 1e-6 * o["total_usd"]
    for o in options:
        if not o["feasible"]:
            assert o["infeasible_reasons"], o["name"]
