"""The engine's Tinker primitives (POST /tinker/*, tinker_routes.py): one Tinker model is one run's `train:<run>`
LoRA, trained beside other runs' through the trainer's own machinery (adapter_cache.build_state, the tenancy
ledger, grpo_loss, the checkpoint format). Files: session.py (the run's step and pending gradients), state.py
(the adapter, kept or rebuilt), checks.py, batches.py, losses.py, training.py (forward_backward, optim_step),
checkpointing.py (save, load), sampling.py, locked.py (the queue and locks /train runs under)."""
