"""GRPO trainer: advantages, loss, checkpoints and the step itself (see trainer.py)."""
