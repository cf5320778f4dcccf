"""Offline token counting: a local ``tokenizer.json``, a bundled OpenAI BPE, or a labelled estimate.

Three kinds of tokenizer, none of which ever touches the network:

* :class:`HFTokenizer` reads a Hugging Face ``tokenizer.json`` from a local path with the
  ``tokenizers`` library (``Tokenizer.from_file``), for open models.
* :class:`TiktokenBPE` builds a ``tiktoken.Encoding`` from the ``cl100k_base`` / ``o200k_base``
  rank files that the ``bpe-openai`` wheel ships inside itself (``bpe_openai/data/*.tiktoken.gz``).
  The files are read from the installed package without importing it, and their SHA-256 is checked
  against the hash that tiktoken itself pins for the same encoding, so the counts are exactly
  tiktoken's. ``tiktoken.get_encoding`` is never called: it downloads from a blob store.
  A user may also pass a local ``*.tiktoken`` (or ``.tiktoken.gz``) file.
* :class:`ApproxTokenizer` counts ``ceil(bytes / 4)`` and says so (``approximate = True``); it is
  used only when nothing better is available, and every audit that uses it is labelled.

Prefer the provider's reported ``usage`` to any re-tokenisation: tokenizers are used by the audit
only for *differences* (encoded vs decoded text, repeated prefixes), never to re-bill a request.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from aitco.errors import InputError
from aitco.fileio import read_bytes

#: Average UTF-8 bytes per token of English text for OpenAI BPEs (OpenAI help center,
#: "What are tokens and how to count them?": 1 token ~ 4 characters of English text).
APPROX_BYTES_PER_TOKEN = 4.0

#: Regex split patterns of the two OpenAI encodings, as published in tiktoken
#: (``tiktoken_ext/openai_public.py``, MIT licence, tiktoken 0.14.0).
_PAT_CL100K = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_PAT_O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True)
class _BpeSpec:
    pat_str: str
    special_tokens: dict[str, int]
    sha256: str  # hash of the uncompressed rank file, as pinned by tiktoken


#: The OpenAI encodings that can be built offline from a bundled rank file.
BUNDLED_ENCODINGS: dict[str, _BpeSpec] = {
    "cl100k_base": _BpeSpec(
        _PAT_CL100K,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": _BpeSpec(
        _PAT_O200K,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

#: Which OpenAI encoding each model family uses (prefix match on the model name; tiktoken's
#: ``model.py`` MODEL_PREFIX_TO_ENCODING). Longest prefix wins.
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "gpt-5": "o200k_base",
    "gpt-4.5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4": "o200k_base",
    "gpt-oss": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "text-embedding-3": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base",
}


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts tokens of a text offline."""

    name: str
    approximate: bool
    source: str

    def count(self, text: str) -> int:
        """Count the tokens of ``text``."""
        ...


@dataclass
class ApproxTokenizer:
    r"""Approximate count ``ceil(utf8_bytes / 4)``: clearly labelled, never exact.

    Notes
    -----
    .. math:: n \approx \lceil b / 4 \rceil

    where :math:`b` is the UTF-8 byte length. OpenAI's rule of thumb is ~4 characters of English
    per token; base64 and non-English text tokenise much worse than this, so overheads measured
    with it are lower bounds of the truth for BPE tokenizers.
    """

    name: str = "approx-bytes/4"
    approximate: bool = True
    source: str = "heuristic: ceil(UTF-8 bytes / 4) (OpenAI: 1 token ~ 4 chars of English)"

    def count(self, text: str) -> int:
        """Approximate number of tokens of ``text``."""
        return math.ceil(len(text.encode("utf-8")) / APPROX_BYTES_PER_TOKEN)


@dataclass
class TiktokenBPE:
    """An OpenAI BPE (``cl100k_base``, ``o200k_base``) run by tiktoken from a local rank file."""

    name: str
    encoding: Any = field(repr=False)
    source: str = ""
    approximate: bool = False

    def count(self, text: str) -> int:
        """Exact token count of ``text`` (special tokens are counted as plain text)."""
        return len(self.encoding.encode_ordinary(text))


@dataclass
class HFTokenizer:
    """A Hugging Face ``tokenizer.json`` read from a local file."""

    name: str
    tokenizer: Any = field(repr=False)
    source: str = ""
    approximate: bool = False

    def count(self, text: str) -> int:
        """Token count of ``text`` without special tokens (BOS/EOS are not added)."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


# --------------------------------------------------------------------------- loaders
def bundled_bpe_path(encoding: str) -> Path | None:
    """Path of the rank file ``<encoding>.tiktoken.gz`` shipped by the ``bpe-openai`` wheel.

    The package is located with :func:`importlib.util.find_spec` and *not imported* (its compiled
    extension is not needed). Returns ``None`` when the package or the file is absent.
    """
    try:
        spec = importlib.util.find_spec("bpe_openai")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "data" / f"{encoding}.tiktoken.gz"
        if p.is_file():
            return p
    return None


def _read_ranks(path: Path, expected_sha256: str | None) -> dict[bytes, int]:
    """Parse a tiktoken rank file (``base64-token rank`` per line, optionally gzipped)."""
    raw = read_bytes(path, field="--tokenizer")
    if path.suffix == ".gz" or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if expected_sha256 is not None:
        got = hashlib.sha256(raw).hexdigest()
        if got != expected_sha256:
            raise InputError(
                "tokenizer",
                str(path),
                f"a rank file with SHA-256 {expected_sha256}",
                hint=f"got {got}",
            )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if not line:
            continue
        tok, rank = line.split()
        ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def load_bundled_bpe(encoding: str) -> TiktokenBPE:
    """Build an OpenAI encoding offline from the rank file bundled in ``bpe-openai``.

    Parameters
    ----------
    encoding : str
        ``"cl100k_base"`` or ``"o200k_base"``.

    Returns
    -------
    TiktokenBPE
        Exact tiktoken counts (the rank file's hash is checked against tiktoken's pin).

    Raises
    ------
    InputError
        Unknown encoding, or ``tiktoken`` / ``bpe-openai`` not installed (``pip install
        'aitco[audit]'``).
    """
    if encoding not in BUNDLED_ENCODINGS:
        raise InputError("tokenizer", encoding, f"one of {', '.join(BUNDLED_ENCODINGS)} or a path")
    path = bundled_bpe_path(encoding)
    if path is None:
        raise InputError(
            "tokenizer",
            encoding,
            "an installed bpe-openai wheel (it ships the rank file)",
            hint="pip install 'aitco[audit]', or pass --tokenizer PATH to a local tokenizer.json "
            "or .tiktoken file",
        )
    return _tiktoken_from_file(
        path, encoding, BUNDLED_ENCODINGS[encoding], f"bpe-openai:{path.name}"
    )


def _tiktoken_from_file(path: Path, name: str, spec: _BpeSpec, source: str) -> TiktokenBPE:
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - tiktoken is in the audit extra
        raise InputError(
            "tokenizer", name, "the tiktoken package", hint="pip install 'aitco[audit]'"
        ) from exc
    ranks = _read_ranks(path, spec.sha256)
    enc = tiktoken.Encoding(
        name=f"aitco-{name}",
        pat_str=spec.pat_str,
        mergeable_ranks=ranks,
        special_tokens=spec.special_tokens,
    )
    return TiktokenBPE(name=name, encoding=enc, source=source)


def load_tokenizer_file(path: str | Path) -> TokenCounter:
    """Load a local tokenizer file: HF ``tokenizer.json`` or an OpenAI ``*.tiktoken[.gz]`` file.

    A ``.tiktoken`` file must be one of the known OpenAI encodings (its hash decides which, since
    the split pattern is not stored in the file).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError("--tokenizer", str(path), "an existing tokenizer.json or .tiktoken file")
    if p.name.endswith((".tiktoken", ".tiktoken.gz")):
        raw = read_bytes(p, field="--tokenizer")
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        digest = hashlib.sha256(raw).hexdigest()
        for name, spec in BUNDLED_ENCODINGS.items():
            if spec.sha256 == digest:
                return _tiktoken_from_file(p, name, spec, f"file:{p}")
        raise InputError(
            "--tokenizer",
            str(path),
            "a cl100k_base or o200k_base rank file (unknown hash: its split pattern is unknown)",
        )
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - tokenizers is in the audit extra
        raise InputError(
            "--tokenizer", str(path), "the tokenizers package", hint="pip install 'aitco[audit]'"
        ) from exc
    try:
        tok = Tokenizer.from_file(str(p))
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
        raise InputError(
            "--tokenizer", str(path), f"a valid Hugging Face tokenizer.json ({exc})"
        ) from exc
    name = p.parent.name + "/" + p.name if p.parent.name else p.name
    return HFTokenizer(name=name, tokenizer=tok, source=f"file:{p}")


def encoding_for_model(model: str) -> str | None:
    """OpenAI encoding of a model name (longest-prefix match), ``None`` if not an OpenAI model."""
    m = model.lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in MODEL_PREFIX_TO_ENCODING:
        if m.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return MODEL_PREFIX_TO_ENCODING[best] if best else None


def resolve_tokenizer(spec: str | None = None, *, model: str | None = None) -> TokenCounter:
    """Pick a tokenizer offline.

    Parameters
    ----------
    spec : str, optional
        A path (``tokenizer.json``, ``*.tiktoken``), an encoding name (``o200k_base``,
        ``cl100k_base``), or ``"approx"``. When absent, the model decides.
    model : str, optional
        Model name (``gpt-4o-2024-08-06``, ``openai/gpt-4.1``) used when ``spec`` is absent.

    Returns
    -------
    TokenCounter
        OpenAI models get their exact BPE when ``bpe-openai`` is installed. Any other model
        without a ``tokenizer.json`` gets ``o200k_base`` **labelled approximate** (a proxy BPE),
        or the byte heuristic when no BPE is available.
    """
    if spec:
        if spec == "approx":
            return ApproxTokenizer()
        if spec in BUNDLED_ENCODINGS:
            return load_bundled_bpe(spec)
        return load_tokenizer_file(spec)
    enc = encoding_for_model(model) if model else None
    if enc is not None and bundled_bpe_path(enc) is not None:
        return load_bundled_bpe(enc)
    if bundled_bpe_path("o200k_base") is not None:
        proxy = load_bundled_bpe("o200k_base")
        what = f"model {model!r}" if model else "unknown model"
        proxy.approximate = True
        proxy.source += f" (proxy BPE for {what}; pass --tokenizer tokenizer.json for exact counts)"
        return proxy
    return ApproxTokenizer()
