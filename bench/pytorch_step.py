#!/usr/bin/python3
"""The training step of the MHA and HKT classifiers in PyTorch, written from
../shared/SPEC.md (sections 2-5), to compare with hkt-train's step time at the
same sizes and thread count. Run by hand (needs Debian's python3-torch):

    /usr/bin/python3 bench/pytorch_step.py --threads 2

Prints one JSON line per model: the median step time (forward, backward,
AdamW) over the steps after the first two.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def level_length(t, level, stride):
    for _ in range(level):
        t = -(-t // stride)
    return t


class MHA(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, key_padding):
        b, t, d = x.shape
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(key_padding[:, None, None, :], float("-inf"))
        return self.o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))


class HKT(nn.Module):
    """SPEC sections 2-4, composed (each level's score upsampled to T x T)."""

    def __init__(self, d, heads, levels, stride=2, down_kernel=3, conv_kernel=5):
        super().__init__()
        self.heads, self.levels, self.stride = heads, levels, stride
        self.qk = nn.ModuleList(nn.ModuleList([nn.Linear(d, d), nn.Linear(d, d)]) for _ in range(levels))
        self.v, self.o = nn.Linear(d, d), nn.Linear(d, d)
        self.down = nn.ModuleList(nn.Conv1d(d, d, down_kernel, stride=stride, groups=d) for _ in range(levels - 1))
        self.down_ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(levels - 1))
        self.conv = nn.Conv1d(d, d, conv_kernel, groups=d)
        self.level_logits = nn.Parameter(torch.zeros(heads, levels))
        self.gate_logit = nn.Parameter(torch.zeros(heads))
        self.down_kernel, self.conv_kernel = down_kernel, conv_kernel

    def downsample(self, x, level):
        # window ends at the last fine position of block m: pad left by k - s, right to a multiple of s
        t = x.shape[1]
        out_len = -(-t // self.stride)
        left = self.down_kernel - self.stride
        right = out_len * self.stride - t
        y = F.pad(x.transpose(1, 2), (max(left, 0), right))
        if left < 0:
            y = y[:, :, -left:]
        y = self.down[level - 1](y).transpose(1, 2)
        return F.gelu(self.down_ln[level - 1](y))

    def forward(self, x, key_padding):
        b, t, d = x.shape
        h, dh = self.heads, d // self.heads
        x0 = x.masked_fill(key_padding[:, :, None], 0.0)
        inputs = [x0]
        for level in range(1, self.levels):
            inputs.append(self.downsample(inputs[-1], level))
        weights = self.level_logits.softmax(-1)
        fused = 0
        for level, xl in enumerate(inputs):
            tl = xl.shape[1]
            split = lambda y: y.view(b, tl, h, dh).transpose(1, 2)
            q, k = split(self.qk[level][0](xl)), split(self.qk[level][1](xl))
            s = q @ k.transpose(-1, -2) / math.sqrt(dh)
            if level > 0:
                index = torch.arange(t) // self.stride ** level
                s = s[:, :, index][:, :, :, index]
            fused = fused + weights[None, :, level, None, None] * s
        fused = fused.masked_fill(key_padding[:, None, None, :], float("-inf"))
        v = self.v(x0)
        att = (fused.softmax(-1) @ v.view(b, t, h, dh).transpose(1, 2)).transpose(1, 2).reshape(b, t, d)
        conv = self.conv(F.pad(v.transpose(1, 2), (self.conv_kernel - 1, 0))).transpose(1, 2)
        gate = torch.sigmoid(self.gate_logit).repeat_interleave(dh)
        return self.o(gate * att + (1 - gate) * conv)


class Classifier(nn.Module):
    def __init__(self, attention, vocab, max_len, d, layers, heads, d_ff, classes, levels):
        super().__init__()
        self.token, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        make = (lambda: MHA(d, heads)) if attention == "mha" else (lambda: HKT(d, heads, levels))
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
        valid = (~key_padding).float()[:, :, None]
        pooled = (x * valid).sum(1) / valid.sum(1)
        return self.head(self.ln_f(pooled))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for attention in ("mha", "hkt"):
        model = Classifier(attention, 18, args.seq_len, 64, 2, 4, 128, 10, 3)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.98), weight_decay=0.01)
        tokens = torch.randint(1, 18, (args.batch, args.seq_len))
        lengths = torch.randint(args.seq_len // 2, args.seq_len + 1, (args.batch,))
        labels = torch.randint(0, 10, (args.batch,))
        times = []
        for _ in range(args.steps):
            start = time.perf_counter()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(tokens, lengths), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            times.append((time.perf_counter() - start) * 1000)
        print(json.dumps({"framework": "pytorch " + torch.__version__, "model": attention, "threads": args.threads,
                          "seq_len": args.seq_len, "batch": args.batch,
                          "step_ms_median": round(statistics.median(times[2:]), 1)}))


if __name__ == "__main__":
    main()
