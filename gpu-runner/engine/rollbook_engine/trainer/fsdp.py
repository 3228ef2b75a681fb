"""ROLLBOOK_TRAIN_PARALLEL=fsdp: shard the base model's decoder layers over the ranks of a worker group.

For a base model one device cannot hold. torch FSDP2 (`fully_shard`, in torch ≥ 2.6) keeps 1/N of each
decoder layer's frozen weights on each rank and all-gathers a layer just before it runs. What it shards and
what it leaves alone, and why:
- Decoder layers and the final norm: sharded (they are nearly all of a large model's bytes).
- The token embedding: left whole on every rank, because models such as SmolLM2 and Llama-3.2 tie it to
  lm_head, which the trainer calls outside the decoder (trainer._selected_logits); a tied weight cannot live
  in two FSDP groups.
- LoRA weights: left whole (ignored_params). Adapters are added per run after sharding, are small, and are
  summed over ranks by distributed.DataParallel.sum_grads exactly as under DDP.
Because a sharded layer's forward is a collective, every rank must run the same number of forwards and
backwards: distributed.DataParallel(lockstep=True) gives ranks with fewer micro-batches zero-weight repeats.

Rank 0 alone cannot run the sharded model, so inference needs a backend with its own copy of the weights
(vLLM, with ROLLBOOK_VLLM_TENSOR_PARALLEL as the model requires); the transformers backend is refused.
"""

from __future__ import annotations

import torch

from . import distributed


def shard_base_model(store) -> None:
    from torch.distributed.fsdp import fully_shard

    decoder = store.model.get_base_model().get_decoder()
    lora = {p for n, p in store.model.named_parameters() if "lora_" in n}
    embed = set(decoder.get_input_embeddings().parameters())
    for layer in decoder.layers:
        fully_shard(layer, ignored_params={p for p in layer.parameters() if p in lora})
    # The decoder as the root group (its norm): the layers inside then reshard after their forward.
    fully_shard(decoder, ignored_params=lora | embed)
    distributed.set_lockstep(True)
    store.sharded = True


def is_sharded(store) -> bool:
    return bool(getattr(store, "sharded", False))


def sharded_parameters(model: torch.nn.Module) -> int:
    """How many parameters are FSDP-sharded (DTensor): for tests and the worker's start-up log."""
    from torch.distributed.tensor import DTensor

    return sum(1 for p in model.parameters() if isinstance(p, DTensor))
