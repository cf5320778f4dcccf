"""Calibrate from reality: parse the logs users already have and fit the efficiency model to them.

Layers: ``parsers/`` (one module per format) -> :mod:`~aitco.calibrate.observations`
(normalised records) -> :mod:`~aitco.calibrate.measurements` (what a run achieved) ->
:mod:`~aitco.calibrate.fit` (``EfficiencyFit``) -> :mod:`~aitco.calibrate.profile`
(``CalibrationProfile`` YAML read by ``--calibration``).
"""

from aitco.calibrate.profile import CalibrationProfile, load_profile, save_profile

__all__ = ["CalibrationProfile", "load_profile", "save_profile"]
