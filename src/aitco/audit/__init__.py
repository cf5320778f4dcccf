"""Token-API bill audit: billed vs useful tokens and the waste per cause (``aitco audit``).

See ``docs/audit.md`` for the definitions of the causes and their precedence.
"""

from __future__ import annotations

from aitco.audit.audit import AuditOptions, AuditPrice, AuditResult, audit_log
from aitco.audit.tokenizers import TokenCounter, resolve_tokenizer

__all__ = [
    "AuditOptions",
    "AuditPrice",
    "AuditResult",
    "TokenCounter",
    "audit_log",
    "resolve_tokenizer",
]
