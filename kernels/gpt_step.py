#!/usr/bin/env python3
"""One training step of a small Llama-style GPT in PyTorch (bf16 autocast, SDPA attention, AdamW), measured on
one GPU, for comparison with `shardplan predict` on the calibrated profile. Writes the model as a Hugging Face
config.json (the same architecture shardplan reads) and prints the median step time in seconds.
Usage: gpt_step.py CONFIG_OUT.json  (prints: step_s <median> tokens <batch*seq>)
"""
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = dict(model_type="llama", hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
           num_attention_heads=16, num_key_value_heads=16, vocab_size=32000, max_position_embeddings=2048,
           hidden_act="silu", tie_word_embeddings=False, rms_norm_eps=1e-5)
BATCH, SEQ = 4, 2048


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, f = c["hidden_size"], c["intermediate_size"]
        self.heads = c["num_attention_heads"]
        self.n1, self.n2 = nn.RMSNorm(h), nn.RMSNorm(h)
        self.qkv = nn.Linear(h, 3 * h, bias=False)
        self.o = nn.Linear(h, h, bias=False)
        self.up = nn.Linear(h, 2 * f, bias=False)
        self.down = nn.Linear(f, h, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, h)
        x = x + self.o(a)
        g, u = self.up(self.n2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.emb = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["num_hidden_layers"]))
        self.norm = nn.RMSNorm(c["hidden_size"])
        self.head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))


def main():
    with open(sys.argv[1], "w") as f:
        json.dump(CFG, f, indent=1)
    model = GPT(CFG).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, CFG["vocab_size"], (BATCH, SEQ), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(ids).float().view(-1, CFG["vocab_size"]), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    times.sort()
    print(f"step_s {times[len(times) // 2]:.6f} tokens {BATCH * SEQ}")


if __name__ == "__main__":
    main()
