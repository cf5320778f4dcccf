"""Web-test fixtures: the app wired to an explicit test pricing, and a live server on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from aitco.cost.tco import Breakdown

#: Explicit test prices (not aitco results): they make each option's numbers predictable.
TEST_USD_PER_GPU = {"on_demand": 1000.0, "spot": 400.0, "owned": 700.0}


def explicit_compare(scenario: Any, catalog: Any) -> SimpleNamespace:
    """A stand-in for ``aitco.decide.compare.compare`` with hand-set numbers, for wiring tests."""
    opts = []
    for k, o in enumerate(scenario.options):
        catalog.hardware(
            o.hardware, field=f"options[{k}].hardware"
        )  # unknown ids still raise the real error
        b = Breakdown(name=o.label, hardware=o.hardware, pricing=o.pricing, gpus=o.gpus)
        b.add(
            "rental",
            o.gpus * TEST_USD_PER_GPU.get(o.pricing, 900.0),
            "compute",
            formula="gpus x 1000",
        )
        b.add("labour", 5000.0, "people", formula="fixed 5000")
        b.add("failure_rework", 0.05 * o.gpus * 1000.0, "reliability", formula="5 % of gpus x 1000")
        b.values["wall_clock_days"] = 1000.0 / o.gpus
        opts.append(b.finalize())
    return SimpleNamespace(options=opts, cheapest=None, fastest=None)


@pytest.fixture(scope="session")
def app() -> Any:
    from aitco.web.app import create_app

    return create_app(compare=explicit_compare)


@pytest.fixture(scope="session")
def client(app: Any) -> Any:
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        yield c


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live_server(app: Any) -> Iterator[str]:
    """Serve the app with uvicorn in a thread on 127.0.0.1 and a free port."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            server.should_exit = True
            pytest.fail("uvicorn did not start within 10 s")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    th.join(timeout=10)


BODY: dict[str, Any] = {
    "name": "web test",
    "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e9, "seq_len": 1024},
    "options": [
        {"hardware": "a100-sxm4-80gb", "gpus": 8, "pricing": "on_demand"},
        {"hardware": "h100-sxm5-80gb", "gpus": 16, "pricing": "spot"},
    ],
}
