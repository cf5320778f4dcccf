"""Cost models: pure, vectorised functions for money, energy and carbon.

Modules: :mod:`finance` (annuity, NPV, depreciation, residual value), :mod:`power` (IT power to
facility power), :mod:`cloud` (rental by pricing mode, spot interruptions), :mod:`reliability`
(failures, checkpoints, goodput), :mod:`people`, :mod:`data` (data and compliance),
:mod:`carbon`, and :mod:`tco` (the itemised :class:`~aitco.cost.tco.Breakdown`).
"""
