"""The batch lengths bench/pytorch_step.py and bench/jax_step.py time: the
formula of hkt-bench step's step_lengths (tools/bench/step.h), so all three
time the same batch."""


def spread_lengths(batch, seq_len):
    """Valid tokens per example, spread evenly from T/2 (example 0) to T (the last); B = 1: T."""
    half = seq_len // 2
    return [seq_len] * batch if batch == 1 else [half + b * (seq_len - half) // (batch - 1) for b in range(batch)]
