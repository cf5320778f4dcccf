"""Decisions: scenarios, comparisons, sweeps, optimisation, ROI."""
