#!/usr/bin/env python3
"""The training step of the MHA and HKT classifiers in PyTorch 2, written from
../shared/SPEC.md (sections 2-5), to compare with hkt-train's step time at the
same sizes and thread count. Run it in the environment bench/setup-venv.sh
makes (bench/compare.sh runs it with the rest):

    bench/.venv/bin/python bench/pytorch_step.py --threads 2
    bench/.venv/bin/python bench/pytorch_step.py --modes eager,sdpa --seq-len 128 --batch 4 --steps 3 --check

One step is what hkt-train times: zero the gradients, forward, mean
cross-entropy, backward, clip the global gradient norm to 1, AdamW (lr 1e-3,
betas 0.9/0.98, eps 1e-8, weight decay 0.01; the learning-rate schedule is
left out, it costs nothing). Each (model, mode) pair starts from the same
weights (seeded) and the same batch, so the first step's loss must be the same
in every mode: --check fails when it differs from eager's by more than
--tolerance (the last loss, after the AdamW updates, is printed beside
eager's too). --save-init DIR writes the weights and batch for
bench/jax_step.py --init DIR, which checks JAX against eager the same way.

Modes, each its own row:
  eager         the SPEC's math composed from tensor ops (each HKT level's score
                matrix upsampled to T x T, summed, masked, softmax)
  sdpa          F.scaled_dot_product_attention. MHA: one call with the key
                padding as a boolean mask. HKT, bidirectional: the fused score
                is one SDPA over level-concatenated, upsampled queries and keys,
                    sum_l lam_l Q_l[i/s^l].K_l[j/s^l] = [lam_0 Q_0 | lam_1 U_1 Q_1 | ...] . [K_0 | U_1 K_1 | ...],
                with SDPA's scale set to 1/sqrt(dh) (not its default
                1/sqrt(L dh)), and V zero-padded to width L dh (the CPU flash
                kernel wants one head width for q, k and v; the first dh
                columns of the output are the attention). HKT, causal: the
                same concatenation, but a coarse term l is allowed only for the
                keys j < c_l(i) = floor((i+1)/s^l) s^l, so the keys are given
                L times, copy m with the terms above m zeroed, and a static
                [T, L T] boolean mask picks for each (i, j <= i) the copy with
                exactly the allowed terms: still one SDPA call, exact, L times
                the keys. In causal mode the key-padding mask is left out of
                the SDPA calls (MHA then runs is_causal=True): a valid query i
                only sees keys j <= i < length, so it changes only padded rows,
                which never reach the loss (the check compares the losses).
  compile       torch.compile (default mode) of the eager forward + loss; its
                backward is compiled by AOTAutograd; the optimizer runs eagerly.
  compile+sdpa  the same over the sdpa model.

The optimizer is torch.optim.AdamW with fused=True (one kernel over all
parameters) where this PyTorch has it on CPU, else foreach; the same in every
mode.

HKT configuration: L = 3, s = 2, k = 3, kc = 5, bidirectional, without SPEC
section 2's `down_pointwise` projection, as `hkt-bench step` runs by default
(hkt-train has it on by default; --down-pointwise here and in `hkt-bench
step` adds it).

Prints one JSON line per (model, mode): the median, min and max step time
over the steps after --warmup (the steps that compile are warm-up), the first
step's time (compile time for the compile modes) and the first and last
losses. Then a table.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from step_batch import spread_lengths

MODES = ("eager", "sdpa", "compile", "compile+sdpa")


class MHA(nn.Module):
    def __init__(self, d, heads, sdpa, causal):
        super().__init__()
        self.heads, self.sdpa, self.causal = heads, sdpa, causal
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, key_padding):
        b, t, d = x.shape
        dh = d // self.heads
        split = lambda y: y.view(b, t, self.heads, dh).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        if self.sdpa:
            if self.causal:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=~key_padding[:, None, None, :])
        else:
            scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
            scores = scores.masked_fill(key_padding[:, None, None, :], float("-inf"))
            if self.causal:
                scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            out = scores.softmax(-1) @ v
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class Downsample(nn.Module):
    """SPEC section 2: depthwise conv (kernel k, stride s, window ending at the
    last fine position of the block) [+ pointwise] + LayerNorm + exact GELU."""

    def __init__(self, d, stride, kernel, pointwise):
        super().__init__()
        self.stride, self.kernel = stride, kernel
        self.conv = nn.Conv1d(d, d, kernel, stride=stride, groups=d)
        self.pointwise = nn.Linear(d, d) if pointwise else None
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        t = x.shape[1]
        out_len = -(-t // self.stride)
        left = self.kernel - self.stride
        right = out_len * self.stride - t
        y = F.pad(x.transpose(1, 2), (max(left, 0), right))
        if left < 0:
            y = y[:, :, -left:]
        y = self.conv(y).transpose(1, 2)
        if self.pointwise is not None:
            y = self.pointwise(y)
        return F.gelu(self.ln(y))


class HKT(nn.Module):
    """SPEC sections 2-4; eager: each level's score upsampled to T x T."""

    def __init__(self, d, heads, levels, sdpa, causal, stride=2, down_kernel=3, conv_kernel=5, down_pointwise=False):
        super().__init__()
        self.heads, self.levels, self.stride, self.sdpa, self.causal = heads, levels, stride, sdpa, causal
        self.qk = nn.ModuleList(nn.ModuleList([nn.Linear(d, d), nn.Linear(d, d)]) for _ in range(levels))
        self.v, self.o = nn.Linear(d, d), nn.Linear(d, d)
        self.down = nn.ModuleList(Downsample(d, stride, down_kernel, down_pointwise) for _ in range(levels - 1))
        self.conv = nn.Conv1d(d, d, conv_kernel, groups=d)
        self.level_logits = nn.Parameter(torch.zeros(heads, levels))
        self.gate_logit = nn.Parameter(torch.zeros(heads))
        self.conv_kernel = conv_kernel

    def index_maps(self, t, level):
        """SPEC section 3: q_l(i), k_l(j) and where term l is allowed (causal)."""
        i = torch.arange(t)
        block = self.stride ** level
        if not self.causal:
            return i // block, i // block, None
        q_index, k_index = (i + 1) // block - 1, i // block
        allowed = (q_index[:, None] >= 0) & (k_index[None, :] <= q_index[:, None])
        return q_index.clamp(min=0), k_index, allowed

    def project(self, inputs, b, h, dh):
        out = []
        for level, xl in enumerate(inputs):
            tl = xl.shape[1]
            split = lambda y: y.view(b, tl, h, dh).transpose(1, 2)
            out.append((split(self.qk[level][0](xl)), split(self.qk[level][1](xl))))
        return out

    def attend_eager(self, qk, v, lam, key_padding, t, dh):
        fused = 0
        for level, (q, k) in enumerate(qk):
            s = q @ k.transpose(-1, -2) / math.sqrt(dh)
            if level > 0:
                q_index, k_index, allowed = self.index_maps(t, level)
                s = s[:, :, q_index][:, :, :, k_index]
                if allowed is not None:
                    s = s.masked_fill(~allowed, 0.0)
            fused = fused + lam[None, :, level, None, None] * s
        fused = fused.masked_fill(key_padding[:, None, None, :], float("-inf"))
        if self.causal:
            fused = fused.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        return fused.softmax(-1) @ v

    def attend_sdpa(self, qk, v, lam, key_padding, t, dh):
        levels = self.levels
        queries, keys = [], []
        for level, (q, k) in enumerate(qk):
            block = self.stride ** level
            if self.causal and level:
                # q_l(i) = floor((i+1)/s^l) - 1, a zero row where it is negative
                q = F.pad(q, (0, 0, 1, 0)).index_select(2, (torch.arange(t) + 1) // block)
                k = k.repeat_interleave(block, dim=2)[:, :, :t]
            elif level:
                q = q.repeat_interleave(block, dim=2)[:, :, :t]
                k = k.repeat_interleave(block, dim=2)[:, :, :t]
            queries.append(q * lam[None, :, level, None, None])
            keys.append(k)
        query = torch.cat(queries, -1)
        value = F.pad(v, (0, (levels - 1) * dh))
        if not self.causal:
            out = F.scaled_dot_product_attention(query, torch.cat(keys, -1), value,
                                                 attn_mask=~key_padding[:, None, None, :], scale=1 / math.sqrt(dh))
            return out[..., :dh]
        # copy m of the keys carries the terms 0..m; key j takes term l for
        # query i iff j < c_l(i) = floor((i+1)/s^l) s^l (non-increasing in l)
        zeros = torch.zeros_like(keys[0])
        copies = [torch.cat(keys[:m + 1] + [zeros] * (levels - 1 - m), -1) for m in range(levels)]
        i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
        bound = [(i + 1) // self.stride ** l * self.stride ** l for l in range(levels)]
        masks = [(j < bound[m]) & ((j >= bound[m + 1]) if m + 1 < levels else True) for m in range(levels)]
        out = F.scaled_dot_product_attention(query, torch.cat(copies, 2), value.repeat(1, 1, levels, 1),
                                             attn_mask=torch.cat(masks, 1), scale=1 / math.sqrt(dh))
        return out[..., :dh]

    def forward(self, x, key_padding):
        b, t, d = x.shape
        h, dh = self.heads, d // self.heads
        x0 = x.masked_fill(key_padding[:, :, None], 0.0)
        inputs = [x0]
        for down in self.down:
            inputs.append(down(inputs[-1]))
        lam = self.level_logits.softmax(-1)
        qk = self.project(inputs, b, h, dh)
        v = self.v(x0)
        vh = v.view(b, t, h, dh).transpose(1, 2)
        attend = self.attend_sdpa if self.sdpa else self.attend_eager
        att = attend(qk, vh, lam, key_padding, t, dh).transpose(1, 2).reshape(b, t, d)
        conv = self.conv(F.pad(v.transpose(1, 2), (self.conv_kernel - 1, 0))).transpose(1, 2)
        gate = torch.sigmoid(self.gate_logit).repeat_interleave(dh)
        return self.o(gate * att + (1 - gate) * conv)


class Classifier(nn.Module):
    def __init__(self, attention, vocab, max_len, d, layers, heads, d_ff, classes, levels, sdpa, causal,
                 down_pointwise):
        super().__init__()
        self.token, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        if attention == "mha":
            make = lambda: MHA(d, heads, sdpa, causal)
        else:
            make = lambda: HKT(d, heads, levels, sdpa, causal, down_pointwise=down_pointwise)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(dict(ln1=nn.LayerNorm(d), attn=make(), ln2=nn.LayerNorm(d),
                               fc1=nn.Linear(d, d_ff), fc2=nn.Linear(d_ff, d))) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, tokens, lengths):
        b, t = tokens.shape
        key_padding = torch.arange(t)[None, :] >= lengths[:, None]
        x = self.token(tokens) + self.pos.weight[:t]
        for block in self.blocks:
            x = x + block["attn"](block["ln1"](x), key_padding)
            x = x + block["fc2"](F.gelu(block["fc1"](block["ln2"](x))))
        valid = (~key_padding).to(x.dtype)[:, :, None]
        pooled = (x * valid).sum(1) / valid.sum(1)
        return self.head(self.ln_f(pooled))


def make_adamw(params):
    options = dict(lr=1e-3, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
    try:
        return torch.optim.AdamW(params, fused=True, **options), "fused"
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(params, **options), "foreach"


def batch(args, vocab=18, classes=10):
    generator = torch.Generator().manual_seed(args.seed + 1)
    tokens = torch.randint(1, vocab, (args.batch, args.seq_len), generator=generator)
    lengths = torch.tensor(spread_lengths(args.batch, args.seq_len))
    labels = torch.randint(0, classes, (args.batch,), generator=generator)
    return tokens, lengths, labels


def run(args, attention, mode):
    torch.manual_seed(args.seed)
    model = Classifier(attention, 18, args.seq_len, args.d_model, args.layers, args.heads, args.d_ff, 10,
                       args.levels, "sdpa" in mode, args.causal, args.down_pointwise)
    optimizer, kind = make_adamw(model.parameters())
    tokens, lengths, labels = batch(args)

    def forward_loss(tokens, lengths, labels):
        return F.cross_entropy(model(tokens, lengths), labels)

    loss_fn = torch.compile(forward_loss) if mode.startswith("compile") else forward_loss
    params = [p for p in model.parameters()]
    times, losses = [], []
    for _ in range(args.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(tokens, lengths, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        times.append((time.perf_counter() - start) * 1000)
        losses.append(loss.item())
    timed = times[args.warmup:] or times[-1:]
    return {"framework": "pytorch " + torch.__version__, "model": attention, "mode": mode,
            "attention": "causal" if args.causal else "bidirectional", "threads": torch.get_num_threads(),
            "seq_len": args.seq_len, "batch": args.batch, "steps_timed": len(timed), "optimizer": "adamw " + kind,
            "step_ms_median": round(statistics.median(timed), 1), "step_ms_min": round(min(timed), 1),
            "step_ms_max": round(max(timed), 1), "first_step_ms": round(times[0], 1),
            "loss_first": losses[0], "loss_last": losses[-1]}


def save_init(args, attention, eager):
    import numpy as np
    torch.manual_seed(args.seed)
    model = Classifier(attention, 18, args.seq_len, args.d_model, args.layers, args.heads, args.d_ff, 10,
                       args.levels, False, args.causal, args.down_pointwise)
    tokens, lengths, labels = batch(args)
    config = {k: getattr(args, k) for k in ("seq_len", "batch", "d_model", "layers", "heads", "d_ff", "levels",
                                              "causal", "down_pointwise")}
    os.makedirs(args.save_init, exist_ok=True)
    np.savez(os.path.join(args.save_init, attention + ".npz"), tokens=tokens.numpy(), lengths=lengths.numpy(),
             labels=labels.numpy(), eager_loss_first=eager["loss_first"],
             eager_loss_last=eager["loss_last"], eager_steps=args.steps, config=json.dumps(config),
             **{"param:" + k: v.detach().numpy() for k, v in model.state_dict().items()})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8, help="steps per (model, mode), warm-up included")
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
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="fail unless every mode's first loss equals eager's")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--save-init", metavar="DIR",
                        help="write DIR/{model}.npz: initial weights, batch, eager's losses (for jax_step.py --init)")
    args = parser.parse_args()
    modes = args.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r} (modes: {', '.join(MODES)})")
    if not hasattr(torch, "compile") and set(modes) - {"eager"}:
        parser.error(f"PyTorch {torch.__version__} has only the eager mode (run bench/setup-venv.sh)")
    if args.check and "eager" not in modes:
        modes.insert(0, "eager")
    torch.set_num_threads(args.threads)
    failed = False
    rows = []
    for attention in args.models.split(","):
        eager_loss = None
        for mode in modes:
            row = run(args, attention, mode)
            if mode == "eager":
                eager_loss, eager_last = row["loss_first"], row["loss_last"]
                if args.save_init:
                    save_init(args, attention, row)
            elif eager_loss is not None:
                row["loss_first_diff_vs_eager"] = float(f"{row['loss_first'] - eager_loss:.3g}")
                row["loss_last_diff_vs_eager"] = float(f"{row['loss_last'] - eager_last:.3g}")
                if args.check and abs(row["loss_first"] - eager_loss) > args.tolerance:
                    failed = True
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(f"\n{'model':<6} {'mode':<13} {'step ms':>9} {'min':>8} {'max':>8} {'1st step ms':>12} "
          f"{'1st loss':>10} {'vs eager':>9} {'last vs eager':>14}")
    for r in rows:
        print(f"{r['model']:<6} {r['mode']:<13} {r['step_ms_median']:>9.1f} {r['step_ms_min']:>8.1f} "
              f"{r['step_ms_max']:>8.1f} {r['first_step_ms']:>12.1f} {r['loss_first']:>10.6f} "
              f"{r.get('loss_first_diff_vs_eager', 0.0):>9.2g} {r.get('loss_last_diff_vs_eager', 0.0):>14.2g}")
    if failed:
        print(f"pytorch_step: a mode's first loss differs from eager's by more than {args.tolerance}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
