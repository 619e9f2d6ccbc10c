"""The demo's stand-in for Megatron-Bridge: the weight conversion from the training policy to its
generation copy (NeMo-RL's "refit"), done once per step before generation.

The demo imports ``rlc_demo_bridge`` when that module is on ``PYTHONPATH`` (``--bridge-repo`` puts
the checkout there), else this module. A change in that module's ``export_weights`` really changes
the numbers: generation then samples from other weights than the ones that are trained, which shows
as a higher ``token_mult_prob_error`` and different rollouts. ``rl-console run --baseline REF`` and
``rl-console compare`` are tested on exactly that.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import torch

PROVIDER_MODULE = "rlc_demo_bridge"


def export_weights(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Training weights -> generation weights (the identity: both sides share the layout)."""
    return dict(state_dict)


def load_provider() -> ModuleType:
    """``rlc_demo_bridge`` from the Bridge checkout when importable, else this built-in one."""
    try:
        return importlib.import_module(PROVIDER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != PROVIDER_MODULE:
            raise
        return importlib.import_module(__name__)
