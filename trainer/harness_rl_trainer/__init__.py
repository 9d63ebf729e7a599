"""harness-rl's trainer on PyTorch (transformers + peft, FSDP2 under torchrun)."""

__version__ = "0.1.0"
