r"""Latency under load: arrivals, length distributions and a fast continuous-batching simulation.

:func:`simulate_continuous_batching` is an event-driven simulation of an iteration-level
scheduler (vLLM/SGLang/TensorRT-LLM in-flight batching). It never steps iteration by iteration:
between two events (an arrival, a completion) the running batch is constant, so the time of
:math:`k` decode iterations has a closed form (the context of every running sequence grows by one
token per iteration):

.. math:: T(k) = k\,c_B + a\,(k S_0 + B k(k-1)/2)

with :math:`c_B` the linear-layer time at batch :math:`B`, :math:`a` the attention time per cached
token and :math:`S_0` the cached tokens at the start. The next event is found by solving this
quadratic, so the cost is O(events log n), about two per request.

References
----------
.. [1] A. Agrawal et al., "Vidur: A Large-Scale Simulation Framework for LLM Inference,"
   MLSys 2024, arXiv:2405.05465 (discrete-event simulation of LLM serving).
.. [2] L. Kleinrock, *Queueing Systems, Vol. 1: Theory*, Wiley, 1975 (M/M/1, M/D/1).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.errors import InputError
from aitco.perf.iteration import IterationModel

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: Percentiles reported.
PERCENTILES = (50, 90, 99)


# ----------------------------------------------------------------------------- workloads
def poisson_arrivals_s(rate_per_s: float, n: int, rng: np.random.Generator) -> F64:
    """Arrival times of a Poisson process (exponential gaps), starting at 0. [s]."""
    if not rate_per_s > 0:
        raise InputError("qps", rate_per_s, "a positive arrival rate")
    gaps = rng.exponential(1.0 / rate_per_s, size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def gamma_arrivals_s(rate_per_s: float, cv: float, n: int, rng: np.random.Generator) -> F64:
    """Arrival times with gamma gaps of mean ``1/rate`` and coefficient of variation ``cv``. [s].

    ``cv = 1`` is Poisson; ``cv > 1`` is bursty (as vLLM's ``--burstiness`` = 1/cv^2).
    """
    if not rate_per_s > 0 or not cv > 0:
        raise InputError(
            "arrivals", (rate_per_s, cv), "a positive rate and coefficient of variation"
        )
    shape = 1.0 / cv**2
    gaps = rng.gamma(shape, 1.0 / (rate_per_s * shape), size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def sample_lengths(
    mean: float, cv: float, n: int, rng: np.random.Generator, *, maximum: int | None = None
) -> I64:
    """Token lengths with the given mean and coefficient of variation (log-normal), at least 1.

    Parameters
    ----------
    mean : float
        Mean length. [tokens]
    cv : float
        Coefficient of variation; 0 gives fixed lengths.
    n : int
        Samples.
    rng : numpy.random.Generator
        Random source.
    maximum : int, optional
        Truncation (engines cap lengths). [tokens]

    Returns
    -------
    ndarray of int64
        Lengths. [tokens]
    """
    if cv <= 0:
        out = np.full(n, max(round(mean), 1), dtype=np.int64)
    else:
        sigma2 = math.log1p(cv**2)
        mu = math.log(mean) - sigma2 / 2.0
        out = np.maximum(np.rint(rng.lognormal(mu, math.sqrt(sigma2), size=n)), 1).astype(np.int64)
    if maximum is not None:
        out = np.minimum(out, maximum)
    return out


# ----------------------------------------------------------------------------- result
@dataclass
class SimulationResult:
    """Per-request outcomes of a simulation.

    Attributes
    ----------
    arrival_s, first_token_s, finish_s : ndarray
        Times of arrival, first token and last token. [s]
    output_tokens : ndarray
        Generated tokens per request. [tokens]
    mean_batch : float
        Time-averaged running batch. [sequences]
    makespan_s : float
        Time of the last completion. [s]
    iterations : int
        Engine iterations simulated.
    slo_ttft_s, slo_tpot_s : float or None
        Objectives used for goodput. [s]
    """

    arrival_s: F64
    first_token_s: F64
    finish_s: F64
    output_tokens: I64
    mean_batch: float
    makespan_s: float
    iterations: int
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None

    @property
    def ttft_s(self) -> F64:
        """Time to first token per request. [s]."""
        return self.first_token_s - self.arrival_s

    @property
    def tpot_s(self) -> F64:
        """Time per output token after the first, per request of more than one token. [s]."""
        o = self.output_tokens
        m = o > 1
        return (self.finish_s[m] - self.first_token_s[m]) / (o[m] - 1)

    @property
    def e2e_s(self) -> F64:
        """End-to-end latency per request. [s]."""
        return self.finish_s - self.arrival_s

    @property
    def mean_ttft_s(self) -> float:
        """Mean TTFT. [s]."""
        return float(np.mean(self.ttft_s))

    @property
    def mean_tpot_s(self) -> float:
        """Mean TPOT. [s]."""
        t = self.tpot_s
        return float(np.mean(t)) if t.size else float("nan")

    @property
    def mean_e2e_s(self) -> float:
        """Mean end-to-end latency. [s]."""
        return float(np.mean(self.e2e_s))

    @property
    def throughput_tokens_per_s(self) -> float:
        """Output tokens per second over the run. [tokens/s]."""
        return float(self.output_tokens.sum() / self.makespan_s) if self.makespan_s > 0 else 0.0

    @property
    def goodput_fraction(self) -> float:
        """Share of requests meeting both objectives (1 when none is set). [0-1]."""
        ok = np.ones(self.arrival_s.size, dtype=bool)
        if self.slo_ttft_s is not None:
            ok &= self.ttft_s <= self.slo_ttft_s
        if self.slo_tpot_s is not None:
            o = self.output_tokens
            tp = np.where(o > 1, (self.finish_s - self.first_token_s) / np.maximum(o - 1, 1), 0.0)
            ok &= tp <= self.slo_tpot_s
        return float(ok.mean())

    def percentiles(self) -> dict[str, float]:
        """P50/P90/P99 of TTFT, TPOT and end-to-end latency, keyed ``p99_ttft_s`` etc. [s]."""
        out: dict[str, float] = {}
        for name, arr in (
            ("ttft_s", self.ttft_s),
            ("tpot_s", self.tpot_s),
            ("e2e_latency_s", self.e2e_s),
        ):
            if arr.size == 0:
                continue
            qs = np.percentile(arr, PERCENTILES)
            for p, q in zip(PERCENTILES, qs, strict=True):
                out[f"p{p}_{name}"] = float(q)
        return out


# ----------------------------------------------------------------------------- simulator
def linear_time_table(it: IterationModel, max_tokens: int) -> F64:
    """Tabulate the layer (+comm, overhead) time for 0..max_tokens tokens per iteration. [s]."""
    t = np.arange(max_tokens + 1, dtype=np.float64)
    return it.body_s(t)


def _k_until(delta: float, c: float, a: float, s0: float, b: float) -> int:
    """Smallest k >= 1 with k c + a (k s0 + b k (k-1)/2) >= delta."""
    qa = a * b / 2.0
    qb = c + a * s0 - qa
    if qa <= 0.0:
        k = delta / qb if qb > 0 else 1.0
    else:
        k = (-qb + math.sqrt(qb * qb + 4.0 * qa * delta)) / (2.0 * qa)
    return max(1, math.ceil(k - 1e-9))


@dataclass(slots=True)
class _Requests:
    """Per-request inputs of a simulation, as Python lists (fast scalar access)."""

    arrival: list[float]
    inputs: list[int]
    outputs: list[int]
    need: list[int]
    cached: list[int]
    first: list[float]
    finish: list[float]


@dataclass(slots=True)
class _Tables:
    """Time tables of one replica: ``lin[t] + head[s]`` per iteration, attention rates. [s]."""

    lin: list[float]
    head: list[float]
    decode_c: list[float]
    a_dec: float
    a_pre: float


@dataclass(slots=True)
class _Limits:
    """Scheduler settings of the simulated engine."""

    max_num_seqs: int
    kv_capacity_tokens: int
    max_num_tokens: int
    steps: int
    chunked: bool
    mixed: bool = True


@dataclass(slots=True)
class _State:
    """Mutable scheduler state of one replica."""

    now: float = 0.0
    iteration: int = 0
    batch: int = 0
    ctx_sum: float = 0.0
    reserved: int = 0
    done: int = 0
    nxt: int = 0
    busy_batch_time: float = 0.0
    left: int = 0  # prompt tokens still to prefill over ``pending``
    heap: list[tuple[int, int]] = field(default_factory=list)
    queue: deque[int] = field(default_factory=deque)
    pending: list[list[int]] = field(default_factory=list)  # [request, tokens left, tokens done]


def _check_requests(
    arrival_s: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    kv_capacity_tokens: int,
    prefix_cache_hit_rate: float,
) -> tuple[F64, I64, I64, I64]:
    """Validate a request list; return arrivals, inputs, outputs and cached prompt tokens."""
    arr = np.asarray(arrival_s, dtype=np.float64)
    ins = np.asarray(input_tokens, dtype=np.int64)
    outs = np.asarray(output_tokens, dtype=np.int64)
    n = arr.size
    if ins.size != n or outs.size != n:
        raise InputError("lengths", (ins.size, outs.size), f"{n} input and output lengths")
    if n == 0:
        raise InputError("num_requests", 0, "at least one request")
    if np.any(np.diff(arr) < 0):
        raise InputError("arrival_s", "decreasing", "non-decreasing arrival times")
    if np.any(ins < 1) or np.any(outs < 1):
        raise InputError("lengths", "< 1", "at least one token in and out")
    cached = np.minimum(np.floor(prefix_cache_hit_rate * ins), ins - 1).astype(np.int64)
    longest = int((ins - cached + outs).max())
    if longest > kv_capacity_tokens:
        raise InputError(
            "kv_capacity_tokens",
            kv_capacity_tokens,
            f"room for the longest request ({longest} tokens)",
        )
    return arr, ins, outs, cached


def _tables(it: IterationModel, lim: _Limits, longest_prompt: int) -> _Tables:
    """Tabulate the iteration time terms for every token and sequence count needed."""
    t_max = int(lim.max_num_seqs + max(lim.max_num_tokens, longest_prompt) + 1)
    lin = linear_time_table(it, t_max).tolist()
    head = it.head_s(np.arange(lim.max_num_seqs + max(lim.max_num_tokens, 1) + 2)).tolist()
    decode_c = [lin[b] + head[b] for b in range(lim.max_num_seqs + 1)]
    return _Tables(
        lin, head, decode_c, it.decode_attention_s_per_context_token,
        it.prefill_attention_s_per_pair,
    )  # fmt: skip


def _admit(st: _State, rq: _Requests, lim: _Limits, budget: int) -> None:
    """Move waiting prompts (FCFS) into prefill while seats, KV and the token budget allow."""
    queue, pending = st.queue, st.pending
    while queue and st.batch + len(pending) < lim.max_num_seqs:
        j = queue[0]
        if st.reserved + rq.need[j] > lim.kv_capacity_tokens:
            break
        if lim.chunked:
            if st.left >= budget:
                break
        elif pending and st.left + rq.inputs[j] > budget:
            break
        queue.popleft()
        todo = rq.inputs[j] - rq.cached[j]
        pending.append([j, todo, rq.cached[j]])
        st.left += todo
        st.reserved += rq.need[j]


def _prefill_iteration(
    st: _State, rq: _Requests, tb: _Tables, budget: int, chunked: bool, mixed: bool
) -> None:
    """Run one iteration of prompt tokens (whole prompts or chunks), with every decode if mixed."""
    p_tokens = 0
    pairs = 0.0
    new: list[int] = []
    for e in st.pending:
        c_tok = min(e[1], budget - p_tokens) if chunked else e[1]
        if c_tok <= 0:
            break
        pairs += c_tok * e[2] + c_tok * (c_tok + 1) / 2.0
        e[1] -= c_tok
        e[2] += c_tok
        p_tokens += c_tok
        if e[1] == 0:
            new.append(e[0])
    st.left -= p_tokens
    if new:
        st.pending = [e for e in st.pending if e[1] > 0]
    batch, ctx = st.batch, st.ctx_sum
    if mixed:  # the running decodes ride along and each emits a token
        dt = tb.lin[batch + p_tokens] + tb.head[batch + len(new)] + tb.a_dec * ctx
        dt += tb.a_pre * pairs
        iteration = st.iteration + 1
        ctx += batch
    else:  # prefill-only iteration: the running decodes stall
        dt = tb.lin[p_tokens] + tb.head[len(new)] + tb.a_pre * pairs
        iteration = st.iteration
    st.busy_batch_time += batch * dt
    now = st.now + dt
    st.now = now
    st.iteration = iteration
    outputs, inputs, first, heap = rq.outputs, rq.inputs, rq.first, st.heap
    for j in new:
        first[j] = now
        o = outputs[j]
        if o > 1:
            heapq.heappush(heap, (iteration + o - 1, j))
            batch += 1
            ctx += inputs[j] + 1
        else:
            rq.finish[j] = now
            st.reserved -= rq.need[j]
            st.done += 1
    st.batch, st.ctx_sum = batch, ctx
    if heap and heap[0][0] <= iteration:
        _retire(st, rq)


def _retire(st: _State, rq: _Requests) -> None:
    """Finish the sequences whose last token came out at the current iteration."""
    heap, iteration, now = st.heap, st.iteration, st.now
    inputs, outputs, need, finish = rq.inputs, rq.outputs, rq.need, rq.finish
    while heap and heap[0][0] <= iteration:
        j = heapq.heappop(heap)[1]
        finish[j] = now
        st.batch -= 1
        st.ctx_sum -= inputs[j] + outputs[j]
        st.reserved -= need[j]
        st.done += 1


def _decode_stretch(st: _State, rq: _Requests, tb: _Tables, steps: int) -> None:
    """Advance decode-only iterations in closed form until something can change the batch.

    Each epoch ends at the next completion, the next arrival (when nothing waits) or, with
    multi-step scheduling and prompts waiting, the next scheduling point. Completions with no
    arrival due and no prompt waiting continue the stretch without going back to admission.
    The state is held in locals for the stretch and written back once (the hot loop).
    """
    a, decode_c, heap, queue = tb.a_dec, tb.decode_c, st.heap, st.queue
    inputs, outputs, need, finish = rq.inputs, rq.outputs, rq.need, rq.finish
    batch, ctx, iteration, now = st.batch, st.ctx_sum, st.iteration, st.now
    busy = st.busy_batch_time
    t_next = rq.arrival[st.nxt] if st.nxt < len(rq.arrival) else math.inf
    freed = ended = 0
    while True:
        c = decode_c[batch]
        k = heap[0][0] - iteration
        if not queue:
            if t_next < math.inf:
                k = min(k, _k_until(t_next - now, c, a, ctx, batch))
        elif steps > 1:
            k = min(k, steps - iteration % steps)
        dt = k * c + a * (k * ctx + batch * k * (k - 1) / 2.0)
        busy += batch * dt
        now += dt
        iteration += k
        ctx += batch * k
        while heap and heap[0][0] <= iteration:
            j = heapq.heappop(heap)[1]
            finish[j] = now
            batch -= 1
            ctx -= inputs[j] + outputs[j]
            freed += need[j]
            ended += 1
        if queue or batch == 0 or t_next <= now:
            break
    st.batch, st.ctx_sum, st.iteration, st.now = batch, ctx, iteration, now
    st.busy_batch_time = busy
    st.reserved -= freed
    st.done += ended


def simulate_continuous_batching(
    it: IterationModel,
    arrival_s: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    *,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    max_num_tokens: int = 8192,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    scheduler_steps: int = 1,
    chunked: bool = True,
    prefix_cache_hit_rate: float = 0.0,
    mixed: bool = True,
) -> SimulationResult:
    """Simulate iteration-level continuous batching of the given requests on one replica.

    Parameters
    ----------
    it : IterationModel
        Per-iteration time model of the replica.
    arrival_s : array_like
        Arrival times, non-decreasing (Poisson, gamma, or a trace). [s]
    input_tokens, output_tokens : array_like
        Prompt and output length per request. [tokens]
    max_num_seqs : int
        Engine limit on running sequences.
    kv_capacity_tokens : int
        KV-cache capacity; a request is admitted only when its full length fits (no eviction,
        as TensorRT-LLM's ``GUARANTEED_NO_EVICT``). [tokens]
    max_num_tokens : int
        Prompt tokens admitted per iteration (a prompt longer than this runs alone). [tokens]
    slo_ttft_s, slo_tpot_s : float, optional
        Objectives for goodput. [s]
    scheduler_steps : int
        Multi-step scheduling (vLLM ``--num-scheduler-steps``): new prompts are admitted only
        every ``scheduler_steps`` iterations (or when nothing runs).
    chunked : bool
        Chunked prefill: each iteration carries the running decodes plus at most
        ``max_num_tokens - batch`` prompt tokens, so a long prompt is split over iterations
        (Sarathi-Serve). Without it, whole prompts run (up to ``max_num_tokens`` together, a
        longer one alone).
    prefix_cache_hit_rate : float
        Share of each prompt's tokens whose KV is reused from the prefix cache: they are not
        prefilled and not reserved again (at least one token is always computed). [0-1)
    mixed : bool
        True: prompt tokens ride in the iteration with the running decodes (each of which emits
        a token). False: prefill-only iterations during which the decodes stall (vLLM V0
        prefill-first, SGLang's separate extend batches); the prompt budget is then the whole
        ``max_num_tokens``.

    Returns
    -------
    SimulationResult
        Per-request times.

    Notes
    -----
    Scheduling: FCFS; waiting prompts are admitted at iteration boundaries while the batch, the
    KV capacity and the per-iteration prompt budget allow (:func:`_admit`); an iteration that
    admits prompts runs them (prefill) together with one decode token of every running sequence
    (:func:`_prefill_iteration`); the first token of a request is emitted at the end of its
    prefill iteration, and reaches the client ``it.request_path_s`` later (API server, harness,
    streaming; it does not occupy the GPU). Between events, decode iterations are advanced in
    closed form (:func:`_decode_stretch`, module docstring).
    """
    steps = int(scheduler_steps)
    if steps < 1:
        raise InputError("scheduler_steps", scheduler_steps, "an integer >= 1")
    arr, ins, outs, cached = _check_requests(
        arrival_s, input_tokens, output_tokens, kv_capacity_tokens, prefix_cache_hit_rate
    )
    n = arr.size
    lim = _Limits(max_num_seqs, kv_capacity_tokens, max_num_tokens, steps, chunked, mixed)
    tb = _tables(it, lim, int(ins.max()))
    rq = _Requests(
        arr.tolist(), ins.tolist(), outs.tolist(), (ins - cached + outs).tolist(),
        cached.tolist(), [0.0] * n, [0.0] * n,
    )  # fmt: skip
    st = _run(st=_State(), rq=rq, tb=tb, lim=lim)
    # the request path outside the engine delays what the client sees, not the GPU
    first_a = np.asarray(rq.first) + it.request_path_s
    finish_a = np.asarray(rq.finish) + it.request_path_s
    span = float(finish_a.max() - arr[0])
    return SimulationResult(
        arrival_s=arr, first_token_s=first_a, finish_s=finish_a, output_tokens=outs,
        mean_batch=st.busy_batch_time / span if span > 0 else 0.0, makespan_s=span,
        iterations=st.iteration, slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s,
    )  # fmt: skip


def _run(*, st: _State, rq: _Requests, tb: _Tables, lim: _Limits) -> _State:
    """Event loop: admission and prefill iterations, else a decode stretch, until all finish."""
    arrival, n, steps = rq.arrival, len(rq.arrival), lim.steps
    queue = st.queue
    chunked, mixed, tokens = lim.chunked, lim.mixed, lim.max_num_tokens
    shrink = chunked and mixed  # the decodes take their share of the token budget
    while st.done < n:
        nxt, now = st.nxt, st.now
        while nxt < n and arrival[nxt] <= now:
            queue.append(nxt)
            nxt += 1
        st.nxt = nxt
        admit = bool(queue) and (steps == 1 or st.iteration % steps == 0 or st.batch == 0)
        if admit or st.pending:
            budget = max(tokens - st.batch, 1) if shrink else tokens
            if admit:
                _admit(st, rq, lim, budget)
            if st.pending:
                _prefill_iteration(st, rq, tb, budget, chunked, mixed)
                continue
        if st.batch == 0:
            if st.nxt < n:
                st.now = max(st.now, arrival[st.nxt])
                continue
            break  # pragma: no cover - nothing running, nothing to come
        _decode_stretch(st, rq, tb, steps)
    return st


def simulate_poisson(
    it: IterationModel,
    rate_per_s: float,
    input_tokens: float,
    output_tokens: float,
    *,
    input_cv: float = 0.0,
    output_cv: float = 0.0,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    max_num_tokens: int = 8192,
    num_requests: int = 5000,
    seed: int = 0,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    arrival_cv: float = 1.0,
    scheduler_steps: int = 1,
    chunked: bool = True,
    prefix_cache_hit_rate: float = 0.0,
    mixed: bool = True,
) -> SimulationResult:
    """Simulate Poisson (or gamma, ``arrival_cv != 1``) arrivals with sampled lengths.

    Lengths are log-normal with the given means and coefficients of variation, truncated so that
    one request fits the KV cache. See :func:`simulate_continuous_batching`.
    """
    rng = np.random.default_rng(seed)
    if arrival_cv == 1.0:
        t = poisson_arrivals_s(rate_per_s, num_requests, rng)
    else:
        t = gamma_arrivals_s(rate_per_s, arrival_cv, num_requests, rng)
    ins = sample_lengths(input_tokens, input_cv, num_requests, rng)
    outs = sample_lengths(output_tokens, output_cv, num_requests, rng)
    room = max(kv_capacity_tokens - 1, 2)
    ins = np.minimum(ins, max(room // 2, 1))
    outs = np.minimum(outs, room - ins)
    return simulate_continuous_batching(
        it,
        t,
        ins,
        outs,
        max_num_seqs=max_num_seqs,
        kv_capacity_tokens=kv_capacity_tokens,
        max_num_tokens=max_num_tokens,
        slo_ttft_s=slo_ttft_s,
        slo_tpot_s=slo_tpot_s,
        scheduler_steps=scheduler_steps,
        chunked=chunked,
        prefix_cache_hit_rate=prefix_cache_hit_rate,
        mixed=mixed,
    )


# ----------------------------------------------------------------------------- analytic limits
def mm1_mean_sojourn_s(arrival_rate_per_s: ArrayLike, service_rate_per_s: ArrayLike) -> F64:
    r"""Mean time in an M/M/1 system, :math:`1/(\mu - \lambda)`; ``inf`` when saturated. [s]."""
    lam = np.asarray(arrival_rate_per_s, dtype=np.float64)
    mu = np.asarray(service_rate_per_s, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(lam < mu, 1.0 / np.maximum(mu - lam, 1e-300), np.inf)


def md1_mean_wait_s(arrival_rate_per_s: ArrayLike, service_time_s: ArrayLike) -> F64:
    r"""Return the M/D/1 mean wait :math:`\rho S / (2(1-\rho))`; ``inf`` when saturated. [s]."""
    lam = np.asarray(arrival_rate_per_s, dtype=np.float64)
    s = np.asarray(service_time_s, dtype=np.float64)
    rho = lam * s
    with np.errstate(divide="ignore"):
        return np.where(rho < 1, rho * s / (2.0 * np.maximum(1.0 - rho, 1e-300)), np.inf)
