"""Optional dependencies: which extra brings which package, and one error line when one is missing.

The core install (``pip install .``) carries numpy, pydantic, PyYAML, typer, rich, pandas and
scipy. Everything else comes with an *extra* (``pip install 'aitco[report]'``); the table
:data:`EXTRA_OF_MODULE` says which. A command that needs an extra calls :func:`require_extra`
before doing any work, and the CLI's error handler turns any other ``ModuleNotFoundError`` of a
package in the table into the same one line (:func:`missing_extra`), exit status 2 -- never a
traceback.

Examples
--------
>>> EXTRA_OF_MODULE["xlsxwriter"], EXTRA_OF_MODULE["uvicorn"]
('report', 'web')
>>> print(MissingExtraError("uvicorn", "web", what="aitco web"))
aitco web needs the optional package 'uvicorn': pip install 'aitco[web]'
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from aitco.errors import AitcoError

#: Import name of each optional package -> the extra of pyproject.toml that installs it
#: (tests/test_extras.py checks the table against pyproject.toml).
EXTRA_OF_MODULE: dict[str, str] = {
    # [report]: charts, the HTML report, the ROI workbook
    "matplotlib": "report",
    "plotly": "report",
    "xlsxwriter": "report",
    "openpyxl": "report",
    "formulas": "report",
    "jinja2": "report",
    "markupsafe": "report",
    # [web]: the local web app (it renders the report's charts: [web] includes [report])
    "fastapi": "web",
    "starlette": "web",
    "uvicorn": "web",
    "multipart": "web",
    "python_multipart": "web",
    "httpx": "web",
    "fastapi_offline": "web",
    # [calibrate]: Parquet and large CSV billing exports, PyTorch profiler traces
    "duckdb": "calibrate",
    "pyarrow": "calibrate",
    "sklearn": "calibrate",
    "ijson": "calibrate",
    # [audit]: offline tokenizers and dated API prices
    "tokenizers": "audit",
    "tiktoken": "audit",
    "bpe_openai": "audit",
    "genai_prices": "audit",
    # [dask]: distributed sweeps
    "dask": "dask",
    "distributed": "dask",
}

#: Modules each extra must provide for the commands that use it (checked by :func:`require_extra`).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "report": ("jinja2", "markupsafe", "matplotlib", "xlsxwriter"),
    "web": (
        "fastapi",
        "uvicorn",
        "fastapi_offline",
        "jinja2",
        "markupsafe",
        "matplotlib",
        "xlsxwriter",
    ),
}


class MissingExtraError(AitcoError):
    """An optional package is not installed; the message names the extra that brings it.

    Parameters
    ----------
    module : str
        Import name of the missing package (``"xlsxwriter"``).
    extra : str
        The extra of ``aitco`` that installs it (``"report"``).
    what : str, optional
        What needs it (``"aitco roi-template"``); default: "this command".
    """

    exit_code = 2

    def __init__(self, module: str, extra: str, *, what: str = "") -> None:
        self.module = module
        self.extra = extra
        self.what = what or "this command"
        super().__init__(
            f"{self.what} needs the optional package {module!r}: pip install 'aitco[{extra}]'"
        )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module without a spec
        return False


def require_extra(name: str, extra: str | None = None, *, what: str = "") -> ModuleType | None:
    """Check that an optional package (or every package of an extra) is importable.

    Parameters
    ----------
    name : str
        An import name (``"uvicorn"``), or the name of an extra (``"report"``): then every module
        of :data:`EXTRA_MODULES` for that extra is checked.
    extra : str, optional
        The extra that installs ``name`` (default: from :data:`EXTRA_OF_MODULE`).
    what : str, optional
        What needs it, for the message (``"aitco report"``).

    Returns
    -------
    module or None
        The imported module when ``name`` is a module; None when ``name`` is an extra.

    Raises
    ------
    MissingExtraError
        One line: what needs which package, and ``pip install 'aitco[EXTRA]'``.
    """
    if name in EXTRA_MODULES and extra is None:
        for module in EXTRA_MODULES[name]:
            if not _installed(module):
                raise MissingExtraError(module, name, what=what)
        return None
    extra = extra or EXTRA_OF_MODULE.get(name.split(".")[0], "all")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(exc.name or name, extra, what=what) from exc


def missing_extra(exc: BaseException, *, what: str = "") -> MissingExtraError | None:
    """Return the one-line error for a ``ModuleNotFoundError`` of an optional package, else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    return None if extra is None else MissingExtraError(top, extra, what=what)
