"""A tiny causal transformer policy for the demo workload."""

from __future__ import annotations

import torch
from torch import nn


class TinyPolicy(nn.Module):
    """Decoder-only transformer: token + position embeddings, a few causal layers, an LM head."""

    def __init__(self, vocab: int, max_len: int, dim: int = 64, layers: int = 2, heads: int = 4) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=dim * 2, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        mask = torch.triu(torch.full((max_len, max_len), float("-inf")), diagonal=1)
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits of shape ``(batch, seq, vocab)`` for the next token at each position."""
        n = tokens.shape[1]
        pos = torch.arange(n, device=tokens.device)
        h = self.tok(tokens) + self.pos(pos)[None]
        h = self.blocks(h, mask=self.get_buffer("causal_mask")[:n, :n], is_causal=True)
        logits: torch.Tensor = self.head(self.norm(h))
        return logits


def answer_logprobs(policy: nn.Module, seqs: torch.Tensor, prompt_len: int) -> torch.Tensor:
    """Log-probabilities the policy gives each answer token of ``seqs`` (shape ``(batch, answer_len)``)."""
    logits = policy(seqs[:, :-1])
    logp = torch.log_softmax(logits.float(), dim=-1)
    answer = seqs[:, prompt_len:]
    return logp[:, prompt_len - 1 :].gather(-1, answer.unsqueeze(-1)).squeeze(-1)


@torch.no_grad()
def generate(
    policy: nn.Module, prompts: torch.Tensor, answer_len: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample ``answer_len`` tokens after each prompt; return the full sequences and their logprobs.

    Sampling is Gumbel-max on the logits, so a policy whose weights went non-finite keeps producing
    (garbage) tokens instead of crashing: the blow-up then shows up in the logged metrics.
    """
    seqs = prompts
    logps = []
    for _ in range(answer_len):
        logits = policy(seqs)[:, -1].float()
        logp = torch.log_softmax(logits, dim=-1)
        u = torch.rand(logp.shape, generator=generator, device="cpu").to(logp.device)
        gumbel = -torch.log((-torch.log(u.clamp_min(1e-20))).clamp_min(1e-20))
        tok = torch.nan_to_num(logp + gumbel, nan=0.0).argmax(dim=-1)
        logps.append(logp.gather(-1, tok[:, None]).squeeze(-1))
        seqs = torch.cat([seqs, tok[:, None]], dim=1)
    return seqs, torch.stack(logps, dim=1)
