"""Training workloads without a batch use the same published-practice rule as ``aitco train``."""

from __future__ import annotations

from aitco.decide.scenario import TrainingWorkload
from aitco.perf.training import default_global_batch, default_global_batch_tokens


def test_default_batch_is_the_train_rule_not_a_fixed_million_tokens() -> None:
    w = TrainingWorkload(model="llama-3.1-405b", tokens=15.6e12, seq_len=8192)
    n = w.batch_sequences(405e9, 16384)
    assert n == default_global_batch(405e9, 16384, 8192, 15.6e12)
    # one sequence per 8 GPUs at least (Llama 3's floor): far above the old 1M-token default
    assert n * 8192 >= 16384 // 8 * 8192 > 2**20
    assert n == round(int(default_global_batch_tokens(405e9, 16384, 8192, 15.6e12)) / 8192)


def test_given_batch_wins() -> None:
    w = TrainingWorkload(model="m", tokens=1e9, seq_len=2048, global_batch=64)
    assert w.batch_sequences(1e9, 1024) == 64
    w = TrainingWorkload(model="m", tokens=1e9, seq_len=2048, global_batch_tokens=2048 * 10)
    assert w.batch_sequences(1e9, 1024) == 10
