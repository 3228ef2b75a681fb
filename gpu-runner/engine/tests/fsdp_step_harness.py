"""Run under torchrun by test_distributed_step.py: one FSDP-sharded training step on every rank, on CPU/gloo.

    python -m torch.distributed.run --standalone --nproc-per-node 2 tests/fsdp_step_harness.py RUNS_DIR REQUEST.json

Not the HTTP worker group: with the decoder sharded, rank 0 alone cannot sample with the transformers backend
(the worker refuses fsdp without vLLM), so this drives trainer.train_step_sync directly on each rank.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch.distributed as dist

from rollbook_engine.contracts.train import TrainRequest
from rollbook_engine.model_store import ModelStore
from rollbook_engine.trainer.distributed import announce, set_control_group
from rollbook_engine.trainer.distributed_worker import follow
from rollbook_engine.trainer.fsdp import sharded_parameters, shard_base_model
from rollbook_engine.trainer.trainer import train_step_sync


def main() -> None:
    runs_dir, request_file = Path(sys.argv[1]), Path(sys.argv[2])
    dist.init_process_group("gloo")
    set_control_group(dist.new_group(backend="gloo"))
    store = ModelStore(runs_dir=runs_dir)
    shard_base_model(store)
    print(f"RANK {dist.get_rank()} SHARDED {sharded_parameters(store.model)}", flush=True)
    if dist.get_rank() == 0:  # as the worker group's rank 0, minus HTTP: announces each request to the others
        for line in request_file.read_text().splitlines():
            req = TrainRequest.model_validate_json(line)
            train_step_sync(store, req)
            print(f"RANK 0 TRAINED run={req.run_id} step={req.step}", flush=True)
        announce(None)
    else:
        follow(store, dist.get_rank())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
