r"""``EfficiencyFit``: fit the global efficiency parameters to a user's own observations.

scikit-learn conventions: ``__init__`` only stores its arguments, :meth:`EfficiencyFit.fit`
returns ``self`` and sets the fitted attributes (names ending in ``_``: ``params_``,
``efficiency_``, ``residuals_``, ``fitted_``, ``stderr_``), :meth:`EfficiencyFit.predict`
predicts observations with the fitted parameters.

The prediction of each observation is pluggable (``predict_fn(obs, efficiency) -> value``); the
default, :func:`default_predict`, uses the same models the estimates use: the alpha-beta
collectives of :mod:`aitco.perf.comms` (with :func:`aitco.perf.comms.group_link`, as the training
engine does), the roofline of :mod:`aitco.perf.roofline` for matmuls and copies, and
:func:`aitco.perf.training.estimate_training` for step times.

Notes
-----
The fit minimises the weighted squared log-ratios

.. math:: \min_\theta \sum_i w_i \left[\ln \hat y_i(\theta) - \ln y_i\right]^2

over the parameters :math:`\theta` that the observations constrain, each kept inside its bounds
by a logistic transform, with :func:`scipy.optimize.least_squares` (MINPACK Levenberg-Marquardt,
or trust-region reflective when there are fewer observations than parameters) and a
central-difference Jacobian in the transformed variable.
Parameters no observation depends on keep their defaults and are reported as not fitted.
``stderr_`` is the usual Gauss-Newton estimate :math:`\sqrt{\mathrm{diag}((J^TJ)^{-1})\,s^2}` in
parameter units (``None`` where undetermined).

References
----------
.. [1] F. Pedregosa et al., "Scikit-learn: Machine Learning in Python", JMLR 12, 2011 (estimator
   conventions); M. A. Branch, T. F. Coleman, Y. Li, "A subspace, interior, and conjugate
   gradient method for large-scale bound-constrained minimization problems", SIAM J. Sci.
   Comput. 21(1), 1999 (the trust-region reflective method of ``least_squares``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from aitco.calibrate.observations import Observation
from aitco.calibrate.profile import CalibrationProfile, ParamFit
from aitco.errors import InputError
from aitco.perf import comms
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.inference import estimate_inference
from aitco.perf.roofline import kernel_time_s
from aitco.perf.training import estimate_training
from aitco.units import BYTES_PER_DTYPE, GIGA, TERA

try:  # scikit-learn is optional (the [calibrate] extra): the same API without it
    from sklearn.base import BaseEstimator
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - exercised only without scikit-learn

    class NotFittedError(ValueError, AttributeError):  # type: ignore[no-redef]
        """Raised by ``predict`` before ``fit`` (as scikit-learn's)."""

    class BaseEstimator:  # type: ignore[no-redef]
        """``get_params``/``set_params`` from the ``__init__`` signature (as scikit-learn's)."""

        def get_params(self, deep: bool = True) -> dict[str, Any]:
            """Return the constructor arguments."""
            import inspect

            names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
            return {n: getattr(self, n) for n in names}

        def set_params(self, **params: Any) -> Any:
            """Set constructor arguments; returns ``self``."""
            for k, v in params.items():
                setattr(self, k, v)
            return self


PredictFn = Callable[[Observation, EfficiencyParams], float]

#: Parameters fitted by default. ``gemm`` means the GEMM fraction of the observations'
#: accelerator family (``gemm:<family>``).
DEFAULT_PARAMS = (
    "gemm",
    "hbm",
    "intra_node_link",
    "scale_out_link",
    "decode_hbm",
    "serving_overhead_s",
)
#: Bounds of every fitted fraction (the EfficiencyParams validators allow [0.01, 1]).
PARAM_BOUNDS = (0.01, 1.0)
#: A fitted value this close to a bound (as a fraction of the range) is reported as at the bound.
BOUND_MARGIN = 0.01
#: Span above the lower bound allowed for a parameter without an upper bound (x its magnitude).
OPEN_BOUND_SPAN = 10.0
#: Function evaluations allowed to ``least_squares`` per iteration of ``max_iter`` (one per
#: Jacobian column and side, plus the step).
NFEV_PER_ITER = 8
#: Bump of a parameter (in the transformed variable) to test whether observations depend on it,
#: and the smallest change of a residual that counts as a dependence.
SENSITIVITY_STEP = 0.5
SENSITIVITY_MIN = 1e-9
#: Relative step of the forward-difference Jacobian used for standard errors.
STDERR_REL_STEP = 1e-4
#: Logistic transforms keep this far from the bounds (fraction of the range).
EDGE = 1e-6
#: Log-residual given to a trial point where the model has no finite prediction.
INVALID_RESIDUAL = 50.0
#: Step of the central-difference Jacobian, in the logistic-transformed variable. Large enough
#: to see through the small jitter of simulated predictors (the serving queue simulation).
FD_STEP = 1e-2
#: Largest plausible fitted fraction of a hardware peak (GEMM, HBM, links). Tuned dense BF16
#: GEMMs reach about 0.7-0.8 of the H100 datasheet peak (NVIDIA, "Matrix Multiplication
#: Background User's Guide", docs.nvidia.com/deeplearning/performance, 2023) and copies about
#: 0.9 of HBM bandwidth; a fit above 0.95 means the run was described wrongly (GPU count, model,
#: message size), not that the hardware beat its datasheet.
PLAUSIBLE_MAX_FRACTION = 0.95
#: Fitted parameters that are fractions of a datasheet peak (checked against the maximum above).
PEAK_FRACTION_PARAMS = ("gemm", "hbm", "intra_node_link", "scale_out_link", "decode_hbm")
#: Largest plausible model FLOPs utilisation of a training run. The best published large runs
#: report 0.38-0.55 (Llama 3: 0.38-0.43, Dubey et al. 2024, table 4; MegaScale: 0.552, Jiang et
#: al., NSDI 2024); 0.75 leaves a wide margin.
PLAUSIBLE_MAX_MFU = 0.75
#: The MFU a log reports and the MFU implied by the run's description (--model, --gpus,
#: --seq-len) further apart than this factor mean the description is wrong.
MFU_MISMATCH_FACTOR = 1.5
#: Matrices a matmul reads and writes (A, B, C) for the roofline byte count.
MATMUL_OPERANDS = 3
#: FLOPs per multiply-add.
FLOPS_PER_FMA = 2
#: A copy reads and writes each byte once.
COPY_TRAFFIC_FACTOR = 2
#: Default bytes of the copy modelled for a memory-bandwidth observation without a size. [B]
DEFAULT_COPY_BYTES = 2**30


def _collective_time_s(obs: Observation, eff: EfficiencyParams) -> float:
    c = obs.conditions
    if obs.system is None:
        raise InputError("observation.system", None, "a system for a collective observation")
    n = int(c["n_ranks"])
    m = float(c["message_bytes"])
    bw, lat, e = comms.group_link(obs.system, n, 1, eff.intra_node_link, eff.scale_out_link)
    coll = str(c.get("collective", "all_reduce"))
    fn = {
        "all_reduce": comms.allreduce_time_s,
        "all_gather": comms.allgather_time_s,
        "reduce_scatter": comms.reduce_scatter_time_s,
        "alltoall": comms.alltoall_time_s,
    }.get(coll)
    if fn is None:
        raise InputError("collective", coll, "all_reduce, all_gather, reduce_scatter or alltoall")
    return float(fn(m, n, bw, lat, e))


def _matmul_tflops(obs: Observation, eff: EfficiencyParams) -> float:
    dtype = str(obs.conditions.get("dtype", "bf16"))
    size = int(obs.conditions.get("size") or 8192)
    flops = FLOPS_PER_FMA * float(size) ** 3
    bytes_moved = MATMUL_OPERANDS * float(size) ** 2 * BYTES_PER_DTYPE.get(dtype, 2.0)
    t = kernel_time_s(
        flops,
        bytes_moved,
        obs.acc.peak_tflops[dtype],
        obs.acc.hbm_bandwidth_gb_s,
        flops_efficiency=eff.gemm_for(obs.acc.family, obs.acc.matmul_ceiling(dtype)),
        memory_efficiency=eff.hbm,
    )
    return float(flops / t / TERA)


def _memory_bandwidth_gb_s(obs: Observation, eff: EfficiencyParams) -> float:
    n = float(obs.conditions.get("bytes") or DEFAULT_COPY_BYTES) * COPY_TRAFFIC_FACTOR
    t = kernel_time_s(0.0, n, 1.0, obs.acc.hbm_bandwidth_gb_s, memory_efficiency=eff.hbm)
    return float(n / t / GIGA)


def _step_time_s(obs: Observation, eff: EfficiencyParams) -> float:
    c = obs.conditions
    if obs.model is None or obs.system is None:
        raise InputError(
            "observation.model", None, "a model and a system for a step-time observation"
        )
    res = estimate_training(
        obs.model,
        obs.acc,
        obs.system,
        int(c["gpus"]),
        seq_len=int(c["seq_len"]),
        global_batch=int(c["global_batch"]),
        precision=str(c.get("precision", "bf16")),
        plan=c.get("plan"),
        efficiency=eff,
        speed_of_infeasible=True,  # a measured run: it happened, whatever the memory model says
    )
    return float(res.values["step_time_s"])


#: Inference estimates reused between the TTFT and TPOT observations of one run.
_SERVING_CACHE: dict[tuple[Any, ...], dict[str, Any]] = {}
_SERVING_CACHE_MAX = 256


def _serving(obs: Observation, eff: EfficiencyParams) -> float:
    c = obs.conditions
    if obs.model is None or obs.system is None:
        raise InputError(
            "observation.model", None, "a model and a system for a serving observation"
        )
    key = (obs.model.id, obs.acc.id, obs.system.id, tuple(sorted(c.items())), eff.model_dump_json())
    vals = _SERVING_CACHE.get(key)
    if vals is None:
        res = estimate_inference(
            obs.model,
            obs.acc,
            obs.system,
            int(c["gpus"]),
            precision=str(c.get("precision", "bf16")),
            input_tokens=int(c["input_tokens"]),
            output_tokens=int(c["output_tokens"]),
            qps=c.get("qps"),
            concurrency=c.get("concurrency"),
            mode="online",
            tp=c.get("tp"),
            efficiency=eff,
        )
        vals = res.values
        if len(_SERVING_CACHE) >= _SERVING_CACHE_MAX:
            _SERVING_CACHE.clear()
        _SERVING_CACHE[key] = vals
    return float(vals["ttft_s"] if obs.kind == "serving_ttft_s" else vals["tpot_s"])


PREDICTORS: dict[str, PredictFn] = {
    "serving_ttft_s": _serving,
    "serving_tpot_s": _serving,
    "collective_time_s": _collective_time_s,
    "matmul_tflops": _matmul_tflops,
    "memory_bandwidth_gb_s": _memory_bandwidth_gb_s,
    "step_time_s": _step_time_s,
}


def default_predict(obs: Observation, eff: EfficiencyParams) -> float:
    """Predict an observation with aitco's own models (see the module docstring)."""
    return PREDICTORS[obs.kind](obs, eff)


def param_bounds(name: str) -> tuple[float, float]:
    """Bounds of a fitted parameter: the ``ge``/``le`` of its EfficiencyParams field.

    ``gemm:<family>`` and fields without both bounds use :data:`PARAM_BOUNDS`.
    """
    lo, hi = PARAM_BOUNDS
    info = EfficiencyParams.model_fields.get(name)
    if info is not None:
        for m in info.metadata:
            if getattr(m, "ge", None) is not None:
                lo = float(m.ge)
            if getattr(m, "le", None) is not None:
                hi = float(m.le)
    if hi <= lo:  # only a lower bound (e.g. an exponent >= 1): allow a decade above it
        hi = lo + OPEN_BOUND_SPAN * max(abs(lo), 1.0)
    return lo, hi


def _near_bound(name: str, v: float) -> bool:
    lo, hi = param_bounds(name)
    return min(v - lo, hi - v) < BOUND_MARGIN * (hi - lo)


def _to_u(x: float, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    f = min(max((x - lo) / (hi - lo), EDGE), 1 - EDGE)
    return math.log(f / (1 - f))


def _from_u(u: float, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    return lo + (hi - lo) / (1 + math.exp(-min(max(u, -700.0), 700.0)))


class EfficiencyFit(BaseEstimator):
    """Fit efficiency parameters to observations (a scikit-learn estimator).

    ``get_params``/``set_params``/:func:`sklearn.base.clone` work as for any estimator, and
    :meth:`predict` before :meth:`fit` raises :class:`NotFittedError`.

    Parameters
    ----------
    params : sequence of str
        Parameters to fit: names of :class:`~aitco.perf.efficiency.EfficiencyParams` fields,
        ``"gemm"`` (the family of the observations' accelerator) or ``"gemm:<family>"``.
    base : EfficiencyParams, optional
        Starting values and the values of the parameters not fitted (default: the global
        defaults).
    predict_fn : callable, optional
        ``predict_fn(observation, efficiency) -> predicted value``; :func:`default_predict` if
        omitted.
    max_iter : int
        Bounds the solver's function evaluations (``max_iter`` x a few per parameter).
    tol : float
        ``ftol`` and ``xtol`` of :func:`scipy.optimize.least_squares`.
    fd_step : float
        Step of the central-difference Jacobian in the transformed variable.

    Attributes
    ----------
    params_ : dict of str to float
        Fitted values of the constrained parameters. [0-1]
    efficiency_ : EfficiencyParams
        ``base`` with the fitted values.
    fitted_ : list of str
        Parameters the observations constrained.
    unconstrained_ : list of str
        Requested parameters no observation depends on (left at their base value).
    residuals_ : numpy.ndarray
        ln(predicted / observed) per observation after the fit.
    stderr_ : dict of str to float or None
        Standard errors of the fitted parameters.
    at_bound_ : list of str
        Fitted parameters that ended within 1 % of a bound (the data want a value outside).
    n_iter_ : int
        Function evaluations used by the solver.

    Examples
    --------
    >>> fit = EfficiencyFit(params=("hbm",))
    >>> fit.params
    ('hbm',)
    """

    def __init__(
        self,
        params: Sequence[str] = DEFAULT_PARAMS,
        base: EfficiencyParams | None = None,
        predict_fn: PredictFn | None = None,
        max_iter: int = 50,
        tol: float = 1e-10,
        fd_step: float = FD_STEP,
    ) -> None:
        self.params = params
        self.base = base
        self.predict_fn = predict_fn
        self.max_iter = max_iter
        self.tol = tol
        self.fd_step = fd_step

    # ------------------------------------------------------------------ helpers
    @property
    def base_(self) -> EfficiencyParams:
        """``base``, or the global defaults when it is None."""
        return self.base if self.base is not None else DEFAULT_EFFICIENCY

    def _resolve(self, observations: Sequence[Observation]) -> list[str]:
        names: list[str] = []
        families = sorted({o.acc.family for o in observations})
        for p in self.params:
            if p == "gemm":
                names += [f"gemm:{f}" for f in families]
            elif p.startswith("gemm:") or p in EfficiencyParams.model_fields:
                names.append(p)
            else:
                raise InputError(
                    "params", p, "an EfficiencyParams field, 'gemm' or 'gemm:<family>'"
                )
        return list(dict.fromkeys(names))

    def _value(self, eff: EfficiencyParams, name: str) -> float:
        if name.startswith("gemm:"):
            return eff.gemm_for(name.split(":", 1)[1])
        return float(getattr(eff, name))

    @staticmethod
    def _with(
        base: EfficiencyParams, names: list[str], values: Sequence[float]
    ) -> EfficiencyParams:
        over: dict[str, Any] = {}
        gemm: dict[str, float] = {}
        for n, v in zip(names, values, strict=True):
            if n.startswith("gemm:"):
                gemm[n.split(":", 1)[1]] = float(v)
            else:
                over[n] = float(v)
        if gemm:
            over["gemm"] = gemm
        return base.with_overrides(over)

    def _residuals(
        self,
        obs: Sequence[Observation],
        eff: EfficiencyParams,
        fn: PredictFn,
        *,
        strict: bool = True,
    ) -> np.ndarray:
        out = np.empty(len(obs))
        for i, o in enumerate(obs):
            pred = fn(o, eff)
            if not (math.isfinite(pred) and pred > 0):
                if strict:
                    raise InputError(
                        "prediction", pred, f"a positive prediction for {o.kind} ({o.source})"
                    )
                out[i] = INVALID_RESIDUAL  # e.g. a saturated queue: reject the trial step
                continue
            out[i] = math.sqrt(o.weight) * (math.log(pred) - math.log(o.value))
        return out

    # ------------------------------------------------------------------ API
    def fit(self, observations: Sequence[Observation]) -> EfficiencyFit:
        """Fit the parameters to ``observations``; returns ``self``."""
        obs = list(observations)
        if not obs:
            raise InputError("observations", 0, "at least one observation to fit")
        fn = self.predict_fn or default_predict
        names = self._resolve(obs)
        base = self.base_
        x0 = [self._value(base, n) for n in names]
        # which parameters do the observations depend on?
        r0 = self._residuals(obs, base, fn)
        active = []
        for j, n in enumerate(names):
            x = list(x0)
            x[j] = _from_u(_to_u(x0[j], param_bounds(n)) + SENSITIVITY_STEP, param_bounds(n))
            rj = self._residuals(obs, self._with(base, names, x), fn)
            if np.max(np.abs(rj - r0)) > SENSITIVITY_MIN:
                active.append(n)
        self.unconstrained_ = [n for n in names if n not in active]
        bounds = [param_bounds(n) for n in active]

        def vals_of(uv: np.ndarray) -> list[float]:
            return [_from_u(float(v), b) for v, b in zip(uv, bounds, strict=True)]

        def res(uv: np.ndarray) -> np.ndarray:
            return self._residuals(obs, self._with(base, active, vals_of(uv)), fn, strict=False)

        def jac(uv: np.ndarray) -> np.ndarray:  # central differences, absolute step in u
            out = np.empty((len(obs), len(uv)))
            for k in range(len(uv)):
                du = np.zeros_like(uv)
                du[k] = self.fd_step
                out[:, k] = (res(uv + du) - res(uv - du)) / (2 * self.fd_step)
            return out

        if active:
            u0 = np.array(
                [_to_u(self._value(base, n), b) for n, b in zip(active, bounds, strict=True)]
            )
            sol = least_squares(
                res,
                u0,
                jac=jac,
                method="lm" if len(obs) >= len(active) else "trf",  # MINPACK when it applies
                ftol=self.tol,
                xtol=self.tol,
                gtol=self.tol,
                max_nfev=self.max_iter * NFEV_PER_ITER,
            )
            u = np.asarray(sol.x)
            it = int(sol.nfev)
        else:
            u, it = np.zeros(0), 0
        vals = vals_of(u)
        self.n_iter_ = it
        self.params_ = dict(zip(active, vals, strict=True))
        self.fitted_ = list(active)
        self.efficiency_ = self._with(base, active, vals)
        self.residuals_ = res(u) / np.sqrt([o.weight for o in obs])
        self.observations_ = obs
        self.at_bound_ = [n for n, v in self.params_.items() if _near_bound(n, v)]
        self.stderr_ = self._stderr(active, vals, obs, fn)
        return self

    def _stderr(
        self, active: list[str], vals: list[float], obs: list[Observation], fn: PredictFn
    ) -> dict[str, float | None]:
        dof = len(obs) - len(active)
        if not active:
            return {}
        base = self.base_
        r = self._residuals(obs, self._with(base, active, vals), fn)
        jac = np.zeros((len(obs), len(active)))
        for j in range(len(active)):
            x = list(vals)
            h = max(EDGE, STDERR_REL_STEP * vals[j])
            x[j] = min(vals[j] + h, param_bounds(active[j])[1])
            x[j] = x[j] if x[j] > vals[j] else vals[j] - h
            jac[:, j] = (self._residuals(obs, self._with(base, active, x), fn) - r) / (
                x[j] - vals[j]
            )
        out: dict[str, float | None] = dict.fromkeys(active)
        if dof <= 0:
            return out
        s2 = float(r @ r) / dof
        try:
            cov = np.linalg.inv(jac.T @ jac) * s2
        except np.linalg.LinAlgError:
            return out
        for j, n in enumerate(active):
            out[n] = float(math.sqrt(cov[j, j])) if cov[j, j] >= 0 else None
        return out

    def predict(self, observations: Sequence[Observation]) -> np.ndarray:
        """Predicted values of ``observations`` with the fitted parameters (unit of each kind)."""
        if not hasattr(self, "efficiency_"):
            raise NotFittedError(
                "This EfficiencyFit instance is not fitted yet: call fit() before predict()"
            )
        fn = self.predict_fn or default_predict
        return np.array([fn(o, self.efficiency_) for o in observations])

    def residual_rms(self, name: str | None = None) -> float:
        """RMS of the log residuals (of the observations ``name`` depends on, or all)."""
        r = self.residuals_
        return float(math.sqrt(float(np.mean(r**2)))) if len(r) else 0.0


def profile_from_fit(
    fit: EfficiencyFit,
    *,
    accelerator: str | None = None,
    family: str | None = None,
    sources: Sequence[str] = (),
    measurements: dict[str, float] | None = None,
    notes: Sequence[str] = (),
) -> Any:
    """Build a :class:`~aitco.calibrate.profile.CalibrationProfile` from a fitted ``fit``."""
    fitted = {}
    for name, value in fit.params_.items():
        idx = [i for i, o in enumerate(fit.observations_) if _depends(fit, o, name)]
        r = fit.residuals_[idx] if idx else fit.residuals_
        fitted[name] = ParamFit(
            value=value,
            default=fit._value(fit.base_, name),
            n_observations=len(idx),
            residual_rms=float(math.sqrt(float(np.mean(r**2)))) if len(r) else 0.0,
            stderr=fit.stderr_.get(name),
        )
    all_notes = list(notes)
    for n in fit.unconstrained_:
        all_notes.append(
            f"{n}: no observation depends on it; left at {fit._value(fit.base_, n):.3g}"
        )
    if len(fit.observations_) <= len(fit.fitted_):
        all_notes.append(
            f"{len(fit.fitted_)} parameters from {len(fit.observations_)} observations: the fit is "
            "not unique (no standard errors); add runs at other loads or sizes, or fit fewer "
            "parameters (--params)"
        )
    for n in fit.at_bound_:
        all_notes.append(
            f"{n}: fitted value {fit.params_[n]:.3g} is at its bound; the data want a value "
            f"outside {list(param_bounds(n))} (the model misses this effect)"
        )
    return CalibrationProfile(
        accelerator=accelerator,
        family=family,
        efficiency=fit.efficiency_,
        fitted=fitted,
        measurements=dict(measurements or {}),
        sources=list(dict.fromkeys(sources)),
        notes=all_notes,
    )


def _depends(fit: EfficiencyFit, obs: Observation, name: str) -> bool:
    fn = fit.predict_fn or default_predict
    base = fit.efficiency_
    v = fit.params_[name]
    lo, hi = param_bounds(name)
    bumped = EfficiencyFit._with(
        base, [name], [v + 0.05 * (hi - v) if v < hi else v - 0.05 * (v - lo)]
    )
    return bool(abs(fn(obs, bumped) - fn(obs, base)) > 1e-12 * abs(fn(obs, base)))


def fit_warnings(fit: EfficiencyFit, measurements: dict[str, float] | None = None) -> list[str]:
    """Reasons not to trust a fit: a parameter at a bound, above physics, or an MFU mismatch.

    Parameters
    ----------
    fit : EfficiencyFit
        A fitted estimator.
    measurements : dict of str to float, optional
        ``mfu`` (from the run's description) and ``mfu_from_log`` (what the log itself reports),
        as :func:`aitco.calibrate.measurements.training_throughput` returns them.

    Returns
    -------
    list of str
        One sentence per problem; empty when the fit is plausible. ``aitco calibrate`` refuses
        to write a profile with warnings unless ``--force`` is given.
    """
    out: list[str] = []
    for n in fit.at_bound_:
        out.append(
            f"{n}: fitted value {fit.params_[n]:.3g} is at its bound {list(param_bounds(n))} "
            "(the data want a value outside it)"
        )
    for n, v in fit.params_.items():
        peak_fraction = n.split(":", 1)[0] in PEAK_FRACTION_PARAMS
        if peak_fraction and v > PLAUSIBLE_MAX_FRACTION and n not in fit.at_bound_:
            out.append(
                f"{n}: fitted {v:.3g} of the datasheet peak is above the plausible "
                f"{PLAUSIBLE_MAX_FRACTION:g}"
            )
    m = measurements or {}
    mfu, mfu_log = m.get("mfu_fitted", m.get("mfu")), m.get("mfu_from_log")
    if mfu is not None and mfu > PLAUSIBLE_MAX_MFU:
        out.append(f"fitted MFU {mfu:.3g} is above the plausible {PLAUSIBLE_MAX_MFU:g}")
    if mfu and mfu_log and max(mfu / mfu_log, mfu_log / mfu) > MFU_MISMATCH_FACTOR:
        # first: a run described wrongly (model, GPUs, sequence) explains the other warnings
        out.insert(
            0,
            f"the log reports MFU {mfu_log:.3g} but the fit gives {mfu:.3g} for the model, GPU "
            "count and sequence length given: check --model, --gpus and --seq-len",
        )
    return out


def fitted_mfu(fit: EfficiencyFit, mfu_described: float | None) -> float | None:
    """MFU the fitted model predicts: the described run's MFU x observed / predicted step time."""
    steps = [o for o in fit.observations_ if o.kind == "step_time_s"]
    if mfu_described is None or not steps:
        return None
    pred = fit.predict(steps)
    obs = np.array([o.value for o in steps])
    return float(mfu_described * np.mean(obs / pred))
