"""One engine whose training step runs on N processes: a persistent torchrun worker group.

    torchrun --nproc-per-node N -m rollbook_engine.trainer.distributed_worker --host H --port P --model M

Design (why this and not the alternatives):
- torchrun (torch.distributed.run), not `accelerate launch`: torchrun ships with torch, sets RANK /
  WORLD_SIZE / LOCAL_RANK / MASTER_ADDR for each process and restarts nothing behind our back; accelerate
  would add a config file and its own launcher around the same torch.distributed calls without doing any of
  the work here (the trainer already owns its optimizer, accumulation and checkpoints).
- The group is started once and lives as long as the engine: loading the model on every rank costs far more
  than a step, so launching a torchrun job per step is out.
- Rank 0 is the engine: it serves HTTP exactly as `python -m rollbook_engine` does (inference included,
  with the transformers or vLLM backend). Ranks > 0 only train: each loads the same base model on its own
  device and waits for rank 0 to hand it a request (broadcast_object_list on a gloo control group). Every
  rank then runs trainer.train_step_sync on the same request and takes its share of the micro-batches
  (distributed.py); rank 0 answers the HTTP stream and writes the checkpoint.
- All ranks read the same checkpoint folder (ROLLBOOK_RUNS_DIR) when a run's state must be rebuilt (restart,
  resume): one machine's disk, or shared storage when the ranks span machines.
When rank 0's server stops it sends None and the other ranks exit.

Device per rank: cuda:LOCAL_RANK with NCCL for the gradients when CUDA is present, else CPU with gloo (how
the tests run it: 2 processes on this machine). ROLLBOOK_TRAIN_PARALLEL=fsdp shards the base model's
decoder layers over the ranks (fsdp.py).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

from .. import __main__ as engine_main
from ..model_store import ModelStore
from ..settings import EngineSettings, engine_settings
from .distributed import announce, receive, set_control_group
from .trainer import train_step_sync

log = logging.getLogger("rollbook_engine.distributed_worker")

# Ranks > 0 wait on the control group between steps, however long the engine sits idle: gloo's default
# 30-minute timeout would kill an idle worker group. The gradient collectives keep the default timeout, so a
# rank that died mid-step still ends the others' wait with an error.
_IDLE_TIMEOUT = timedelta(days=365)


def _device(local_rank: int) -> torch.device:
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def _check_fsdp_can_serve(rank: int) -> None:
    """Rank 0 serves chat from the same model; sharded, only a backend with its own weights (vLLM) can."""
    if rank != 0:
        return
    from ..server import select_backend_name

    if select_backend_name() != "vllm":
        raise RuntimeError(
            "ROLLBOOK_TRAIN_PARALLEL=fsdp shards the model over the ranks, so rank 0 cannot sample with the "
            "transformers backend: install vLLM on a CUDA machine (ROLLBOOK_BACKEND=auto or vllm), or use ddp"
        )


def _store_factory(device: torch.device, settings: EngineSettings, rank: int):
    def build(model_name: str) -> ModelStore:
        if settings.train_parallel == "fsdp":
            _check_fsdp_can_serve(rank)
        store = ModelStore(model_name, device=device)
        if settings.train_parallel == "fsdp":
            from .fsdp import shard_base_model

            shard_base_model(store)
        return store

    return build


def follow(store: ModelStore, rank: int) -> None:
    """Ranks > 0: run each step rank 0 announces until it announces None."""
    while (req := receive()) is not None:
        try:
            train_step_sync(store, req)
            # One line per step, so an operator (and the test) can see this rank took part.
            print(f"RANK {rank} TRAINED run={req.run_id} step={req.step}", file=sys.stderr, flush=True)
        except Exception:  # rank 0 hits the same error and reports it to the client
            log.exception("rank %d: step %s of run %s failed", rank, req.step, req.run_id)


def main(argv: list[str] | None = None) -> int:
    args = engine_main.parse_args("torchrun ... -m rollbook_engine.trainer.distributed_worker", argv)
    settings = engine_settings()
    if settings.rank is None or settings.local_rank is None:
        raise RuntimeError("RANK and LOCAL_RANK are not set: start this module with torchrun")
    rank, local_rank = settings.rank, settings.local_rank
    if rank == 0 and engine_main.refuse_open_host(args.host):
        return 2  # the other ranks then fail at init_process_group and torchrun ends the job
    engine_main.setup_process()
    device = _device(local_rank)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", device_id=device if device.type == "cuda" else None)
    set_control_group(dist.new_group(backend="gloo", timeout=_IDLE_TIMEOUT))
    factory = _store_factory(device, settings, rank)
    code = 0
    try:
        if rank == 0:
            log.info("rank 0 of %d (%s, %s): serving on %s:%d", dist.get_world_size(), device,
                     settings.train_parallel, args.host, args.port)
            code = asyncio.run(engine_main.serve(args.host, args.port, args.model, store_factory=factory))
            announce(None)
        else:
            follow(factory(args.model), rank)
    finally:
        dist.destroy_process_group()
    return code


if __name__ == "__main__":
    sys.exit(main())
