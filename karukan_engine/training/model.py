"""A GPT-2 shaped decoder in PyTorch, laid out so every tensor maps 1:1 onto llama.cpp's gpt2 arch.

Pre-LayerNorm blocks, fused qkv, causal SDPA, tanh-GELU (what ggml's GPT-2 graph computes),
learned positions, LM head tied to the token embedding.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    n_ctx: int = 128
    n_embd: int = 256
    n_layer: int = 4
    n_head: int = 4
    layer_norm_eps: float = 1e-5

    def to_dict(self) -> dict:
        return asdict(self)


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        d = config.n_embd
        self.n_head = config.n_head
        self.attn_norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.attn_qkv = nn.Linear(d, 3 * d)
        self.attn_output = nn.Linear(d, d)
        self.ffn_norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.ffn_up = nn.Linear(d, 4 * d)
        self.ffn_down = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        batch, length, d = x.shape
        q, k, v = self.attn_qkv(self.attn_norm(x)).split(d, dim=2)
        shape = (batch, length, self.n_head, d // self.n_head)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None])
        x = x + self.attn_output(y.transpose(1, 2).reshape(batch, length, d))
        return x + self.ffn_down(F.gelu(self.ffn_up(self.ffn_norm(x)), approximate="tanh"))


class CharGPT(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.token_embd = nn.Embedding(config.vocab_size, config.n_embd)
        self.position_embd = nn.Embedding(config.n_ctx, config.n_embd)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.output_norm = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)
        self.apply(self._init)
        # GPT-2's scaled init of residual projections keeps deep stacks stable.
        for block in self.blocks:
            for proj in (block.attn_output, block.ffn_down):
                nn.init.normal_(proj.weight, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Logits [batch, length, vocab] for token ids [batch, length] (right padding is fine)."""
        length = ids.shape[1]
        if length > self.config.n_ctx:
            raise ValueError(f"sequence of {length} tokens exceeds n_ctx {self.config.n_ctx}")
        positions = torch.arange(length, device=ids.device)
        return self.logits(self.hidden(ids, positions))

    def hidden(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Final hidden states [batch, length, d]. Without `mask` attention is causal; with one
        (bool [batch, length, length], True = may attend) and per-token `positions`, several
        continuations of one prompt can share a row (training/rerank_train.py packs them so)."""
        if int(positions.max()) >= self.config.n_ctx:
            raise ValueError(f"position {int(positions.max())} exceeds n_ctx {self.config.n_ctx}")
        x = self.token_embd(ids) + self.position_embd(positions)
        for block in self.blocks:
            x = block(x, mask)
        return self.output_norm(x)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden @ self.token_embd.weight.T
