"""One parser per input format; :mod:`~aitco.calibrate.parsers.detect` picks one."""
