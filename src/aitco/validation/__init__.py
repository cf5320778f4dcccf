"""Validation of aitco's performance models against published runs (``aitco validate``)."""
