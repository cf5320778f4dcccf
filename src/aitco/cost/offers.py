r"""Which cloud offer prices a job, and how many whole instances it rents.

Clouds sell instances, not accelerators: a job on *g* accelerators of an instance type with *a*
accelerators per instance rents whole instances. A job is made of *units* that must share one
network (a training job is one unit of *g* accelerators; a service is *g / r* independent
replicas of *r* accelerators each):

.. math::

    n_\mathrm{inst} = \begin{cases}
        \lceil (g/r) / \lfloor a/r \rfloor \rceil & r \le a \quad\text{(units packed)}\\
        (g/r)\,\lceil r/a \rceil & r > a \quad\text{(a unit spans instances)}
    \end{cases}
    \qquad g_\mathrm{billed} = n_\mathrm{inst}\,a

A unit that spans several instances is only eligible on an offer whose ``cluster_network`` is a
fabric (EFA, InfiniBand, RoCE, ICI, NeuronLink, Ethernet) -- not ``none`` and not unstated -- and
within the offer's ``max_instances`` where the provider states one. Single-accelerator
marketplace/community offers (no cluster network) therefore serve single-instance jobs and
inference replicas only.

Among eligible offers the cheapest *billed* price per hour (:math:`n_\mathrm{inst}` x instance
price) wins; a tie goes to the offer that sells more pricing terms (so that an option's spot or
committed price has the same home as its on-demand one: AWS sells 48 L40S as 12 g6e.24xlarge or 6
g6e.48xlarge at one on-demand price, and only the former on spot), then to fewer instances, then to
the offer id. A provider's 1-GPU shape is used for a 1-GPU job where it exists, else the smallest
shape that holds the job.

One provider per option: unless the caller asks for ``provider="any"``, an option's on-demand,
spot and committed prices come from one *home* instance type -- the cheapest eligible offer by
on-demand price (by the term's price when no eligible offer has an on-demand one). A term the
home offer does not sell leaves the option without an eligible offer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from aitco.catalog.schema import CloudOffer

#: Cluster networks that join instances into one multi-node job.
FABRICS: tuple[str, ...] = ("efa", "infiniband", "roce", "ici", "neuronlink", "ethernet")
#: The term every provider sells and the home instance type is chosen by.
REFERENCE_TERM = "on_demand"
#: ``provider`` value that lets each pricing mode take the cheapest eligible offer of any provider.
ANY_PROVIDER = "any"


@dataclass(frozen=True)
class OfferChoice:
    """The offer, price and instance count that bill a job.

    Attributes
    ----------
    offer_id, provider, instance : str
        The catalog offer, its provider and instance type.
    term, region : str
        Price term and region of the price used.
    accelerators_per_instance : int
        Accelerators in one instance. [count]
    instances : int
        Whole instances rented. [count]
    gpus_billed : int
        ``instances x accelerators_per_instance``. [count]
    usd_per_instance_hour : float
        Price of one instance-hour. [USD/h]
    as_of : str
        Date of the price.
    eligible : bool
        False when no offer meets the eligibility rules and this one is shown for reference.
    reasons : list of str
        Why the job has no eligible offer (empty when ``eligible``).
    terms_sold : int
        Pricing terms the offer sells (breaks ties of price: module rules). [count]
    """

    offer_id: str
    provider: str
    instance: str
    term: str
    region: str
    accelerators_per_instance: int
    instances: int
    gpus_billed: int
    usd_per_instance_hour: float
    as_of: str = ""
    eligible: bool = True
    reasons: tuple[str, ...] = field(default_factory=tuple)
    terms_sold: int = 0

    @property
    def usd_per_gpu_hour(self) -> float:
        """Return the instance price per accelerator-hour. [USD/(GPU h)]."""
        return self.usd_per_instance_hour / self.accelerators_per_instance

    @property
    def usd_per_hour_billed(self) -> float:
        """Return the price of every instance rented, per hour. [USD/h]."""
        return self.instances * self.usd_per_instance_hour


def instances_needed(gpus: int, unit_gpus: int, per_instance: int) -> int:
    """Whole instances for ``gpus`` accelerators in units of ``unit_gpus`` (module formula).

    Examples
    --------
    >>> instances_needed(1, 1, 8), instances_needed(16, 16, 8), instances_needed(6, 2, 4)
    (1, 2, 2)
    """
    unit = max(1, min(unit_gpus, gpus))
    units = math.ceil(gpus / unit)
    if unit <= per_instance:
        return math.ceil(units / (per_instance // unit))
    return units * math.ceil(unit / per_instance)


def span_ineligibility(
    name: str, unit_gpus: int, per_instance: int, cluster_network: str | None
) -> str | None:
    """Why an offer cannot host a unit of ``unit_gpus`` that spans its instances, or None.

    A unit larger than one instance needs a cluster network that is a fabric
    (:data:`FABRICS`); ``none`` or an unstated network does not join instances.

    Examples
    --------
    >>> span_ineligibility("x", 1, 1, None) is None, span_ineligibility("x", 8, 8, None) is None
    (True, True)
    >>> span_ineligibility("x", 8, 1, None)  # doctest: +ELLIPSIS
    'x: a 8-accelerator job spans 8 instances of 1, and the offer has no cluster network (...)'
    """
    if unit_gpus > per_instance and cluster_network not in FABRICS:
        net = cluster_network or "not stated"
        return (
            f"{name}: a {unit_gpus}-accelerator job spans {math.ceil(unit_gpus / per_instance)} "
            f"instances of {per_instance}, and the offer has no cluster network ({net})"
        )
    return None


def ineligibility(offer: CloudOffer, gpus: int, unit_gpus: int) -> str | None:
    """Why ``offer`` cannot host the job, or None when it can."""
    a = offer.accelerators_per_instance
    unit = max(1, min(unit_gpus, gpus))
    spans = span_ineligibility(offer.id, unit, a, offer.cluster_network)
    if spans is not None:
        return spans
    n = instances_needed(gpus, unit, a)
    if offer.max_instances is not None and n > offer.max_instances:
        return f"{offer.id}: needs {n} instances, the provider sells at most {offer.max_instances}"
    return None


def _prices(offer: CloudOffer, term: str, region: str | None) -> list[tuple[float, str, str]]:
    return [
        (p.usd_per_hour, p.region, str(p.as_of))
        for p in offer.prices
        if p.term == term and (region is None or p.region.startswith(region) or p.region == "all")
    ]


def _choice(
    o: CloudOffer, term: str, region: str | None, gpus: int, unit: int, reasons: tuple[str, ...]
) -> OfferChoice | None:
    got = _prices(o, term, region)
    if not got:
        return None
    usd, reg, as_of = min(got)
    n = instances_needed(gpus, unit, o.accelerators_per_instance)
    return OfferChoice(
        offer_id=o.id,
        provider=o.provider,
        instance=o.instance,
        term=term,
        region=reg,
        accelerators_per_instance=o.accelerators_per_instance,
        instances=n,
        gpus_billed=n * o.accelerators_per_instance,
        usd_per_instance_hour=usd,
        as_of=as_of,
        eligible=not reasons,
        reasons=reasons,
        terms_sold=len({p.term for p in o.prices}),
    )


def _cheapest(choices: Iterable[OfferChoice | None]) -> OfferChoice | None:
    """Return the cheapest billed choice; ties: more terms sold, fewer instances, offer id."""
    ok = [c for c in choices if c is not None]
    if not ok:
        return None
    return min(ok, key=lambda c: (c.usd_per_hour_billed, -c.terms_sold, c.instances, c.offer_id))


def select_offer(
    offers: list[CloudOffer],
    term: str,
    gpus: int,
    *,
    unit_gpus: int | None = None,
    provider: str | None = None,
    region: str | None = None,
) -> OfferChoice | None:
    """Choose the offer that bills a job, and its whole instances (module rules).

    Parameters
    ----------
    offers : list of CloudOffer
        Offers of the job's accelerator (already narrowed to a named offer, if any).
    term : str
        Pricing term (``on_demand``, ``spot``, ``reserved_1y``, ``reserved_3y``).
    gpus : int
        Accelerators the job uses. [count]
    unit_gpus : int, optional
        Accelerators that must share one network (a training job: all of them, the default; a
        service: one replica).
    provider : str, optional
        Provider whose offers may price the job; ``"any"``: the cheapest eligible offer of any
        provider for this term; None: any provider, but one home instance type for every term.
    region : str, optional
        Region prefix the price must be in.

    Returns
    -------
    OfferChoice or None
        The choice; ``eligible=False`` with ``reasons`` when no offer is eligible (the cheapest
        offer with the term is returned for reference); None when no offer has a ``term`` price.

    Examples
    --------
    >>> from aitco.catalog.loader import load_catalog
    >>> cat = load_catalog()
    >>> c = select_offer(cat.offers_for("a100-sxm4-80gb"), "on_demand", 1, provider="aws")
    >>> c.offer_id, c.instances, c.gpus_billed
    ('aws-p4de.24xlarge', 1, 8)
    """
    unit = gpus if unit_gpus is None else max(1, min(unit_gpus, gpus))
    cands, why = _candidates(offers, provider, gpus, unit)
    eligible = [o for o in cands if why[o.id] is None]
    job = (term, region, gpus, unit)
    got = (
        _cheapest(_choice(o, *job, ()) for o in eligible)
        if provider == ANY_PROVIDER
        else _home_choice(eligible, cands, job)
    )
    if got is not None:
        return got
    reasons = tuple(f"no eligible offer: {w}" for w in why.values() if w) or (
        f"no eligible offer with a {term} price",
    )
    return _cheapest(_choice(o, *job, reasons) for o in cands)


def _candidates(
    offers: list[CloudOffer], provider: str | None, gpus: int, unit: int
) -> tuple[list[CloudOffer], dict[str, str | None]]:
    """Return the offers of ``provider`` (all for None or "any") and why each is ineligible."""
    cands = list(offers)
    if provider and provider != ANY_PROVIDER:
        cands = [o for o in cands if o.provider == provider]
    return cands, {o.id: ineligibility(o, gpus, unit) for o in cands}


def _home_choice(
    eligible: list[CloudOffer], cands: list[CloudOffer], job: tuple[str, str | None, int, int]
) -> OfferChoice | None:
    """Return the ``term`` price of the home instance type (module rules), None if none is eligible.

    The home type is the cheapest eligible offer by on-demand price (by the term's price when no
    eligible offer has an on-demand one). When it sells no ``term`` price, the cheapest offer
    with one is returned for reference, ineligible, with the reason.
    """
    term, region, gpus, unit = job
    home = _cheapest(_choice(o, REFERENCE_TERM, region, gpus, unit, ()) for o in eligible)
    if home is None:
        home = _cheapest(_choice(o, *job, ()) for o in eligible)
    if home is None:
        return None
    o = next(x for x in eligible if x.id == home.offer_id)
    got = _choice(o, *job, ())
    if got is not None:
        return got
    reason = (
        f"no eligible offer: {o.id} (the home instance type, cheapest on-demand) sells no "
        f"{term} price; on-demand, spot and committed come from one instance type "
        "(set provider: any, or name another provider or offer)"
    )
    return _cheapest(_choice(x, *job, (reason,)) for x in cands)
