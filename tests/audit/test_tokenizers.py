"""Offline tokenizers: exact OpenAI BPE from bundled files, local tokenizer.json, labelled estimate.

The network is made unreachable in every test that loads a tokenizer: a download would raise.
"""

from __future__ import annotations

import gzip
import socket

import pytest

from aitco.audit import tokenizers as T
from aitco.errors import InputError

needs_bundle = pytest.mark.skipif(
    T.bundled_bpe_path("cl100k_base") is None,
    reason="bpe-openai (bundled rank files) not installed",
)


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Fail any attempt to resolve or connect, and point tiktoken's cache at an empty folder."""

    def refuse(*_a, **_k):
        raise OSError("network access attempted during an offline test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    try:
        import tiktoken

        monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    except ImportError:
        pass


@needs_bundle
def test_bundled_bpe_offline_matches_published_ids(no_network):
    cl = T.load_bundled_bpe("cl100k_base")
    o2 = T.load_bundled_bpe("o200k_base")
    # token ids published for tiktoken's cl100k_base / o200k_base ("Hello world")
    assert cl.encoding.encode_ordinary("Hello world") == [9906, 1917]
    assert o2.encoding.encode_ordinary("Hello world") == [13225, 2375]
    assert cl.count("Hello world") == 2
    assert cl.approximate is False
    assert o2.approximate is False
    assert "bpe-openai" in cl.source


@needs_bundle
def test_resolve_by_model_offline(no_network):
    assert T.resolve_tokenizer(model="gpt-4o-2024-08-06").name == "o200k_base"
    assert T.resolve_tokenizer(model="openai/gpt-4.1").name == "o200k_base"
    assert T.resolve_tokenizer(model="gpt-3.5-turbo").name == "cl100k_base"
    other = T.resolve_tokenizer(model="claude-sonnet-4-6")
    assert other.approximate is True  # a proxy BPE is labelled approximate
    assert "proxy" in other.source


@needs_bundle
def test_local_tiktoken_file_is_recognised_by_hash(no_network, tmp_path):
    src = T.bundled_bpe_path("cl100k_base")
    assert src is not None
    plain = tmp_path / "cl100k_base.tiktoken"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    tok = T.load_tokenizer_file(plain)
    assert tok.name == "cl100k_base"
    assert tok.count("Hello world") == 2
    bad = tmp_path / "other.tiktoken"
    bad.write_bytes(b"SGVsbG8= 0\n")
    with pytest.raises(InputError, match="unknown hash"):
        T.load_tokenizer_file(bad)


def test_hf_tokenizer_json_offline(no_network, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tk = tokenizers.Tokenizer(
        WordLevel({"[UNK]": 0, "hello": 1, "world": 2, "!": 3}, unk_token="[UNK]")
    )
    tk.pre_tokenizer = Whitespace()
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    tok = T.resolve_tokenizer(str(path))
    assert isinstance(tok, T.HFTokenizer)
    assert tok.approximate is False
    assert tok.count("hello world !") == 3
    assert tok.count("hello unknown") == 2


def test_bad_tokenizer_paths(tmp_path):
    with pytest.raises(InputError, match="existing tokenizer"):
        T.load_tokenizer_file(tmp_path / "missing.json")
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{not json")
    with pytest.raises(InputError, match=r"tokenizer\.json"):
        T.load_tokenizer_file(broken)
    with pytest.raises(InputError):
        T.load_bundled_bpe("p50k_base")


def test_approx_is_labelled_and_byte_based():
    tok = T.resolve_tokenizer("approx")
    assert tok.approximate is True
    assert tok.count("") == 0
    assert tok.count("abcd") == 1
    assert tok.count("abcde") == 2
    assert tok.count("é" * 4) == 2  # 8 UTF-8 bytes


def test_missing_bundle_falls_back_to_labelled_estimate(monkeypatch):
    monkeypatch.setattr(T, "bundled_bpe_path", lambda _enc: None)
    tok = T.resolve_tokenizer(model="gpt-4o")
    assert isinstance(tok, T.ApproxTokenizer)
    assert tok.approximate is True
    with pytest.raises(InputError, match="bpe-openai"):
        T.load_bundled_bpe("o200k_base")
