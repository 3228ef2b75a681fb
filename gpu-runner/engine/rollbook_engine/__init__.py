"""Rollbook engine: OpenAI-compatible inference (transformers or vLLM) and the GRPO LoRA trainer."""
