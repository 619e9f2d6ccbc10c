"""The demo's toy task with a verifiable reward: copy the prompt's digits in reverse order.

A prompt is ``PROMPT_LEN`` random digits; the policy answers with ``PROMPT_LEN`` tokens. The reward of
an answer is the fraction of positions holding the right digit (0.0 .. 1.0), so a uniformly random
policy scores about ``1 / NUM_DIGITS``.
"""

from __future__ import annotations

import torch

NUM_DIGITS = 4
PROMPT_LEN = 4
BOS = NUM_DIGITS  # start of sequence
SEP = NUM_DIGITS + 1  # end of prompt, start of the answer
VOCAB = NUM_DIGITS + 2


def sample_prompts(n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` prompts as ``[BOS, d1..dk, SEP]`` rows (long tensor, shape ``(n, PROMPT_LEN + 2)``)."""
    digits = torch.randint(0, NUM_DIGITS, (n, PROMPT_LEN), generator=generator)
    bos = torch.full((n, 1), BOS, dtype=torch.long)
    sep = torch.full((n, 1), SEP, dtype=torch.long)
    return torch.cat([bos, digits, sep], dim=1)


def target_of(prompts: torch.Tensor) -> torch.Tensor:
    """The correct answer for each prompt: its digits reversed."""
    return prompts[:, 1 : 1 + PROMPT_LEN].flip(1)


def reward(prompts: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """Fraction of answer positions that match the reversed prompt (float tensor, shape ``(n,)``)."""
    return (answers == target_of(prompts).to(answers.device)).float().mean(dim=1)
