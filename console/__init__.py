"""rl-console: validate Megatron-Bridge changes inside NeMo-RL and verl RL loops."""

__version__ = "0.1.0"
