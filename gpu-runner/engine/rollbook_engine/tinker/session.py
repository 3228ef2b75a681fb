"""A Tinker run's bookkeeping beside its adapter: its step, its pending gradients, and what its weights equal.

Tinker steps without checkpointing (optim_step applies, save writes only when asked), so unlike /train the run's
step is not its newest checkpoint: it is recorded here, in memory and in runs/<run>/.tinker.json (rewritten on
every change, a few hundred bytes), so that a restart or an eviction can never silently continue from other
weights than the ones the client trained:
- `pending_batches`: forward_backward calls whose gradients sit in the adapter's `.grad`. Gradients are never
  spilled; if the state they live on is gone when the run is next used (evicted by another run's state,
  engine restarted) they are counted in `lost_batches`, and the next optim_step refuses (never applies a partial
  sum), naming how many were lost.
- `origin`: the checkpoint the in-memory weights equal exactly (after a load or a save; cleared by optim_step),
  which is what a lost state is rebuilt from when it has no spill (tenancy.py spills an evicted state that
  differs from its checkpoint). Lost with neither: the run refuses, saying so, until a load.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
import weakref
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..contracts.train import TrainerConfig
from ..trainer.adapter_cache import RunState

SESSION_FILE = ".tinker.json"


@dataclass
class Origin:
    run_id: str
    step: int
    with_optimizer: bool


@dataclass
class Session:
    run_id: str
    lora_rank: int
    lora_alpha: float
    target_modules: list[str]
    step: int = 0
    pending_batches: int = 0
    pending_loss: float = 0.0
    pending_tokens: int = 0
    lost_batches: int = 0
    origin: Origin | None = None
    # The checkpoint the run was last loaded from (recorded as init_from in the checkpoints it saves).
    loaded_from: Origin | None = None
    # The RunState the pending gradients live on (memory only): another object, or none, means they are gone.
    state: RunState | None = field(default=None, repr=False, compare=False)

    def config(self) -> TrainerConfig:
        """The trainer config that shapes the adapter (lora_*); the optimizer's values come with each optim_step."""
        return TrainerConfig(lora_rank=self.lora_rank, lora_alpha=self.lora_alpha,
                             lora_target_modules=list(self.target_modules), lora_dropout=0.0)

    def drop_pending(self) -> None:
        self.pending_batches, self.pending_loss, self.pending_tokens = 0, 0.0, 0


def new_session(run_id: str, lora_rank: int) -> Session:
    # alpha = 2·rank: the adapter's scale alpha/r is 2 at every rank, the trainer's default (16 at its rank 8).
    return Session(run_id=run_id, lora_rank=lora_rank, lora_alpha=2.0 * lora_rank,
                   target_modules=list(TrainerConfig().lora_target_modules))


_sessions: weakref.WeakKeyDictionary[object, dict[str, Session]] = weakref.WeakKeyDictionary()


def _path(store, run_id: str) -> Path:
    return Path(store.runs_dir) / run_id / SESSION_FILE


def session_for(store, run_id: str) -> Session | None:
    """The run's session: in memory, else as recorded on disk (an engine restart: pending gradients lost), else None."""
    held = _sessions.setdefault(store, {})
    if run_id in held:
        return held[run_id]
    try:
        raw = json.loads(_path(store, run_id).read_text())
    except (OSError, ValueError):
        return None
    origin, loaded = raw.pop("origin", None), raw.pop("loaded_from", None)
    try:
        s = Session(**raw, origin=Origin(**origin) if origin else None, loaded_from=Origin(**loaded) if loaded else None)
    except TypeError:
        return None  # written by another version: nothing to trust in it
    s.lost_batches += s.pending_batches  # their gradients were in the memory of the engine that wrote this
    s.drop_pending()
    held[run_id] = s
    return s


def remember(store, s: Session) -> None:
    """Keep `s` as the run's session and record it on disk (temp file + rename: never half written)."""
    _sessions.setdefault(store, {})[s.run_id] = s
    path = _path(store, s.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Not asdict(s): it would deep-copy the RunState (the adapter's tensors and optimizer) only to drop it.
    data = {f.name: getattr(s, f.name) for f in fields(s) if f.name != "state"}
    data["origin"] = asdict(s.origin) if s.origin else None
    data["loaded_from"] = asdict(s.loaded_from) if s.loaded_from else None
    tmp = path.with_name(f"{SESSION_FILE}.{uuid.uuid4().hex[:8]}")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def forget_sessions(store) -> None:
    """Drop every session from memory (what an engine restart does; tests use it)."""
    _sessions.pop(store, None)
