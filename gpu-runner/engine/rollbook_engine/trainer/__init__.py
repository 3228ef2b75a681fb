"""GRPO trainer: advantages, loss, checkpoints, request checks, the adapter cache and the step itself (see trainer.py)."""
