"""Performance models: pure, vectorised numpy functions (no catalog I/O)."""
