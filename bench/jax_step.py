#!/usr/bin/env python3
"""The training step of the MHA and HKT classifiers in JAX, jax.jit over the
whole step (forward, backward, global-norm clip to 1, optax AdamW with lr
1e-3, betas 0.9/0.98, eps 1e-8, weight decay 0.01: the same step as
bench/pytorch_step.py and hkt-train), written from ../shared/SPEC.md
(sections 2-5). Run it in the environment bench/setup-venv.sh makes:

    bench/.venv/bin/python bench/jax_step.py --threads 2

HKT is the SPEC's math as XLA sees it: each level's score matrix gathered up
to T x T, summed, masked, softmax (XLA fuses what it can); bidirectional by
default, --causal for the causal mode. Like bench/pytorch_step.py it runs
without SPEC section 2's `down_pointwise` projection unless --down-pointwise
is given (bench/compare.sh gives it: hkt-train has the projection by default).

Threads. XLA:CPU sizes its intra-op thread pool from the CPUs the process may
run on (its scheduling affinity); XLA has no flag that sets the count (the
often-quoted XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1" only ever meant "one thread"; current XLA
rejects the second word). So --threads N restricts this process to the first N
CPUs it may use (os.sched_setaffinity, as `taskset` does) before JAX is
imported, and sets OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS
to N for any library that reads them.

Correctness: --init DIR starts from the weights and batch that
`bench/pytorch_step.py --save-init DIR` wrote (DIR/{mha,hkt}.npz, PyTorch's
parameter names and layouts) and prints the differences of its first loss (and, with as many
steps, its last) from PyTorch eager's.

Prints one JSON line per model: median, min and max step time over the steps
after --warmup (the first step compiles), the compile step's time and the
first and last losses.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8, help="steps per model, warm-up included")
    parser.add_argument("--warmup", type=int, default=2, help="leading steps left out of the statistics")
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=128)
    parser.add_argument("--levels", type=int, default=3)
    parser.add_argument("--causal", action="store_true", help="causal attention (default: bidirectional)")
    parser.add_argument("--down-pointwise", action="store_true", help="SPEC section 2's pointwise projection")
    parser.add_argument("--models", default="mha,hkt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", help="folder of pytorch_step.py --save-init: same weights and batch")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="with --init: largest first-loss difference")
    return parser.parse_args()


args = parse()
# Before JAX starts its thread pools (see the docstring).
cpus = sorted(os.sched_getaffinity(0))
if args.threads > len(cpus):
    print(f"jax_step: --threads {args.threads} but this process may run on {len(cpus)} CPUs", file=sys.stderr)
os.sched_setaffinity(0, cpus[:args.threads])
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[name] = str(args.threads)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from step_batch import spread_lengths  # noqa: E402

STRIDE, DOWN_KERNEL, CONV_KERNEL, VOCAB, CLASSES = 2, 3, 5, 18, 10


# --- parameters: PyTorch's names and layouts (Linear weight [out, in]) -------

def init_params(rng, attention, a):
    d, ff = a.d_model, a.d_ff
    p = {}

    def uniform(shape, fan_in):
        bound = 1 / math.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    def linear(name, n_out, n_in):
        p[name + ".weight"], p[name + ".bias"] = uniform((n_out, n_in), n_in), uniform((n_out,), n_in)

    def norm(name):
        p[name + ".weight"], p[name + ".bias"] = np.ones(d, np.float32), np.zeros(d, np.float32)

    def depthwise(name, k):
        p[name + ".weight"], p[name + ".bias"] = uniform((d, 1, k), k), uniform((d,), k)

    p["token.weight"] = rng.standard_normal((VOCAB, d)).astype(np.float32)
    p["pos.weight"] = rng.standard_normal((a.seq_len, d)).astype(np.float32)
    for i in range(a.layers):
        block = f"blocks.{i}."
        norm(block + "ln1")
        norm(block + "ln2")
        linear(block + "fc1", ff, d)
        linear(block + "fc2", d, ff)
        if attention == "mha":
            for name in "qkvo":
                linear(block + "attn." + name, d, d)
            continue
        for level in range(a.levels):
            linear(block + f"attn.qk.{level}.0", d, d)
            linear(block + f"attn.qk.{level}.1", d, d)
        linear(block + "attn.v", d, d)
        linear(block + "attn.o", d, d)
        for level in range(a.levels - 1):
            depthwise(block + f"attn.down.{level}.conv", DOWN_KERNEL)
            if a.down_pointwise:
                linear(block + f"attn.down.{level}.pointwise", d, d)
            norm(block + f"attn.down.{level}.ln")
        depthwise(block + "attn.conv", CONV_KERNEL)
        p[block + "attn.level_logits"] = np.zeros((a.heads, a.levels), np.float32)
        p[block + "attn.gate_logit"] = np.zeros(a.heads, np.float32)
    norm("ln_f")
    linear("head", CLASSES, d)
    return p


# --- the model (SPEC sections 2-5) ---------------------------------------

def linear(p, name, x):
    return x @ p[name + ".weight"].T + p[name + ".bias"]


def layer_norm(p, name, x):
    mean = x.mean(-1, keepdims=True)
    var = jnp.square(x - mean).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p[name + ".weight"] + p[name + ".bias"]


def gelu(x):
    return jax.nn.gelu(x, approximate=False)


def depthwise(p, name, x, stride, left, right):
    """Depthwise conv over time of x [b, t, d] (PyTorch layout [d, 1, k])."""
    w, bias = p[name + ".weight"][:, 0, :], p[name + ".bias"]
    k = w.shape[1]
    xp = jnp.pad(x, ((0, 0), (left, right), (0, 0)))
    out_len = (xp.shape[1] - k) // stride + 1
    return bias + sum(xp[:, r:r + stride * (out_len - 1) + 1:stride, :] * w[:, r] for r in range(k))


def causal_mask(t):
    return jnp.triu(jnp.ones((t, t), bool), 1)


def mha(p, name, x, key_padding, a):
    b, t, d = x.shape
    h, dh = a.heads, d // a.heads
    split = lambda y: y.reshape(b, t, h, dh).transpose(0, 2, 1, 3)
    q, k, v = (split(linear(p, name + n, x)) for n in (".q", ".k", ".v"))
    s = jnp.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(dh)
    s = jnp.where(key_padding[:, None, None, :], -jnp.inf, s)
    if a.causal:
        s = jnp.where(causal_mask(t), -jnp.inf, s)
    out = jnp.einsum("bhij,bhjd->bhid", jax.nn.softmax(s, -1), v)
    return linear(p, name + ".o", out.transpose(0, 2, 1, 3).reshape(b, t, d))


def hkt(p, name, x, key_padding, a):
    b, t, d = x.shape
    h, dh = a.heads, d // a.heads
    x0 = jnp.where(key_padding[:, :, None], 0.0, x)
    inputs = [x0]
    for level in range(a.levels - 1):
        prev = inputs[-1]
        out_len = -(-prev.shape[1] // STRIDE)
        y = depthwise(p, f"{name}.down.{level}.conv", prev, STRIDE, DOWN_KERNEL - STRIDE,
                      out_len * STRIDE - prev.shape[1])
        if a.down_pointwise:
            y = linear(p, f"{name}.down.{level}.pointwise", y)
        inputs.append(gelu(layer_norm(p, f"{name}.down.{level}.ln", y)))
    lam = jax.nn.softmax(p[name + ".level_logits"], -1)
    i = np.arange(t)
    fused = 0.0
    for level, xl in enumerate(inputs):
        tl = xl.shape[1]
        split = lambda y: y.reshape(b, tl, h, dh).transpose(0, 2, 1, 3)
        q, k = split(linear(p, f"{name}.qk.{level}.0", xl)), split(linear(p, f"{name}.qk.{level}.1", xl))
        s = jnp.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(dh)
        if level:
            block = STRIDE ** level
            if a.causal:
                q_index, k_index = (i + 1) // block - 1, i // block
                allowed = (q_index[:, None] >= 0) & (k_index[None, :] <= q_index[:, None])
                s = jnp.where(allowed, s[:, :, np.maximum(q_index, 0)][:, :, :, k_index], 0.0)
            else:
                s = s[:, :, i // block][:, :, :, i // block]
        fused = fused + lam[None, :, level, None, None] * s
    fused = jnp.where(key_padding[:, None, None, :], -jnp.inf, fused)
    if a.causal:
        fused = jnp.where(causal_mask(t), -jnp.inf, fused)
    v = linear(p, name + ".v", x0)
    att = jnp.einsum("bhij,bhjd->bhid", jax.nn.softmax(fused, -1), v.reshape(b, t, h, dh).transpose(0, 2, 1, 3))
    att = att.transpose(0, 2, 1, 3).reshape(b, t, d)
    conv = depthwise(p, name + ".conv", v, 1, CONV_KERNEL - 1, 0)
    gate = jnp.repeat(jax.nn.sigmoid(p[name + ".gate_logit"]), dh)
    return linear(p, name + ".o", gate * att + (1 - gate) * conv)


def make_loss(attention, a):
    attend = mha if attention == "mha" else hkt

    def loss_fn(p, tokens, lengths, labels):
        b, t = tokens.shape
        key_padding = jnp.arange(t)[None, :] >= lengths[:, None]
        x = p["token.weight"][tokens] + p["pos.weight"][:t]
        for i in range(a.layers):
            block = f"blocks.{i}."
            x = x + attend(p, block + "attn", layer_norm(p, block + "ln1", x), key_padding, a)
            x = x + linear(p, block + "fc2", gelu(linear(p, block + "fc1", layer_norm(p, block + "ln2", x))))
        valid = (~key_padding).astype(x.dtype)[:, :, None]
        pooled = (x * valid).sum(1) / valid.sum(1)
        logits = linear(p, "head", layer_norm(p, "ln_f", pooled))
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    return loss_fn


def run(attention, a):
    reference = reference_last = None
    if a.init:
        saved = np.load(os.path.join(a.init, attention + ".npz"))
        params = {k[6:]: saved[k] for k in saved.files if k.startswith("param:")}
        tokens, lengths, labels = saved["tokens"], saved["lengths"], saved["labels"]
        reference = float(saved["eager_loss_first"])
        reference_last = float(saved["eager_loss_last"]) if int(saved["eager_steps"]) == a.steps else None
        for key, value in json.loads(str(saved["config"])).items():
            setattr(a, key, value)  # the sizes the weights were made for
    else:
        rng = np.random.default_rng(a.seed)
        params = init_params(rng, attention, a)
        tokens = rng.integers(1, VOCAB, (a.batch, a.seq_len))
        lengths = np.array(spread_lengths(a.batch, a.seq_len))
        labels = rng.integers(0, CLASSES, (a.batch,))
    params = jax.tree_util.tree_map(jnp.asarray, params)
    tokens, lengths, labels = (jnp.asarray(v, jnp.int32) for v in (tokens, lengths, labels))
    tx = optax.chain(optax.clip_by_global_norm(1.0),
                     optax.adamw(1e-3, b1=0.9, b2=0.98, eps=1e-8, weight_decay=0.01))
    loss_fn = make_loss(attention, a)

    def step(params, opt_state, tokens, lengths, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, lengths, labels)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    step = jax.jit(step, donate_argnums=(0, 1))
    opt_state = tx.init(params)
    times, losses = [], []
    for _ in range(a.steps):
        start = time.perf_counter()
        params, opt_state, loss = step(params, opt_state, tokens, lengths, labels)
        jax.block_until_ready((params, loss))
        times.append((time.perf_counter() - start) * 1000)
        losses.append(float(loss))
    timed = times[a.warmup:] or times[-1:]
    row = {"framework": "jax " + jax.__version__, "model": attention, "mode": "jit",
           "attention": "causal" if a.causal else "bidirectional", "threads": len(os.sched_getaffinity(0)),
           "seq_len": int(tokens.shape[1]), "batch": int(tokens.shape[0]), "steps_timed": len(timed),
           "optimizer": "optax adamw", "step_ms_median": round(statistics.median(timed), 1),
           "step_ms_min": round(min(timed), 1), "step_ms_max": round(max(timed), 1),
           "first_step_ms": round(times[0], 1), "loss_first": losses[0], "loss_last": losses[-1]}
    if reference is not None:
        row["loss_first_diff_vs_pytorch_eager"] = float(f"{losses[0] - reference:.3g}")
    if reference_last is not None:
        row["loss_last_diff_vs_pytorch_eager"] = float(f"{losses[-1] - reference_last:.3g}")
    return row


def main():
    failed = False
    for attention in args.models.split(","):
        row = run(attention, args)
        print(json.dumps(row), flush=True)
        if abs(row.get("loss_first_diff_vs_pytorch_eager", 0.0)) > args.tolerance:
            failed = True
    if failed:
        print(f"jax_step: the first loss differs from PyTorch eager's by more than {args.tolerance}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
