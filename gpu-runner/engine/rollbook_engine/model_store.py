"""ModelStore: the one base model (wrapped once in a PeftModel) shared by inference and training.

Inference and the trainer both use `store.model`. Generation batches run under `store.generating()`;
the trainer holds `store.exclusive()` while it trains, which waits for in-flight batches and holds back new
ones (the same role as vLLM's sleep/wake around training on a shared GPU).

Adapter names used on `store.model`:
- `rollbook-placeholder`: a zero-effect LoRA created only because a PeftModel needs one adapter; never active
  for generation (the base model is served with adapters disabled).
- `ckpt:<run>@<step>`: checkpoints loaded for serving by `resolve_adapter`, kept in a small LRU. An adapter
  pinned by a running mixed-adapter batch (`serving()`) is never deleted under it: its eviction waits for the
  batch to end (a reload meanwhile gets a fresh name, `ckpt:<run>@<step>~<n>`).
- `train:<run>`: the trainer's own adapters (the trainer adds and owns them).
Generation (the transformers backend) names each row's adapter in the forward (PEFT's mixed adapter batches,
`adapter_names`) and never changes the active adapter; `use_adapter()` (set_adapter with inference_mode=True,
which also sets requires_grad=False on every other adapter) is still there for one-adapter callers: the
trainer calls `set_adapter("train:<run>")` at the start of each step either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model

from . import model_loader
from .adapter_ledger import AdapterLedger, default_budget_bytes, tensor_bytes
from .identifiers import parse_checkpoint_model
from .ownership import may_use
from .settings import REPO_ROOT, engine_settings
from .vocab import Vocab

log = logging.getLogger(__name__)

PLACEHOLDER_ADAPTER = "rollbook-placeholder"


class UnknownModelError(LookupError):
    """The requested model is neither the base model nor an existing `<run>@<step>` checkpoint (HTTP 404)."""


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ModelStore:
    def __init__(
        self,
        base_model_name: str = model_loader.DEFAULT_MODEL,
        device: torch.device | None = None,
        runs_dir: Path | None = None,
        max_loaded_adapters: int | None = None,
        max_context_tokens: int | None = None,
        adapter_memory_mb: int | None = None,
    ) -> None:
        self.base_model_name = base_model_name
        self.device = device or default_device()
        # bf16 on CUDA (halves memory, native on tensor cores); fp32 on CPU where bf16 matmuls are slow.
        self.dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        if self.device.type == "cuda":
            # PyTorch picks cuDNN's attention on Hopper, and cuDNN builds an execution graph for every new sequence
            # length: each decode step (the KV cache grows by one) and each train micro-batch (a new padded length)
            # pays it on the CPU. Measured on an H200 (docs/benchmarks.md "GPU"): 1.8 ms of CPU per attention call,
            # 13 tok/s for one stream of a 135M model whose GPU work is 2.3 ms a token. Flash / memory-efficient
            # attention have no per-shape setup; SDPA falls back to them.
            torch.backends.cuda.enable_cudnn_sdp(False)
        settings = engine_settings()
        self.runs_dir = Path(runs_dir or settings.runs_dir or REPO_ROOT / "runs")
        self.max_loaded_adapters = max_loaded_adapters or settings.max_loaded_adapters

        base, self.tokenizer = model_loader.load(base_model_name, self.device, self.dtype)
        self.vocab = Vocab(self.tokenizer)
        self.eos_token_ids = _end_token_ids(base, self.tokenizer)
        model_limit = int(getattr(base.config, "max_position_embeddings", 0) or 4096)
        env_limit = settings.max_context_tokens or None
        self.max_context_tokens = min(x for x in (model_limit, env_limit, max_context_tokens) if x)

        # A PeftModel needs one adapter to exist; r=1 on q_proj with B=0 (LoRA's init) changes nothing, and
        # it is never activated for generation anyway.
        placeholder = LoraConfig(r=1, lora_alpha=1, target_modules=_first_linear_target(base), lora_dropout=0.0)
        self.model: PeftModel = get_peft_model(base, placeholder, adapter_name=PLACEHOLDER_ADAPTER)
        self.model.eval()
        # Per-run state (training LoRA + optimizer, serving adapters) in one ledger under one memory budget.
        if adapter_memory_mb is None:
            adapter_memory_mb = settings.adapter_memory_mb
        self.ledger = AdapterLedger(adapter_memory_mb * 1024 * 1024 if adapter_memory_mb else default_budget_bytes(base))

        # _model_lock: held by a generation batch for its whole loop and by adapter loads/deletes, so PEFT
        # modules never change under a running forward. _meta_lock: the LRU bookkeeping only (never slow).
        self._model_lock = threading.RLock()
        self._meta_lock = threading.Lock()
        self._loaded: OrderedDict[str, str] = OrderedDict()  # "<run>@<step>" -> adapter name, LRU order
        self._pending_delete: set[str] = set()
        self._in_use: Counter[str] = Counter()  # adapter name -> running batches that pinned it (serving())
        self._cond: asyncio.Condition | None = None
        self._cond_loop: asyncio.AbstractEventLoop | None = None
        self._active_batches = 0
        self._exclusive = False
        # Backends that hold their own weights (vLLM) register sleep/wake here.
        self.exclusive_hooks: list[tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]] = []

    # ---- naming ---------------------------------------------------------------------------------------
    def checkpoint_dir(self, run_id: str, step: int) -> Path:
        return self.runs_dir / run_id / "checkpoints" / f"{step:04d}"

    def parse_model_name(self, model_name: str) -> tuple[str, int] | None:
        """None for the base model; (run, step) for a checkpoint name; UnknownModelError otherwise."""
        if model_name == self.base_model_name:
            return None
        # The shared grammar (contracts/identifiers.json): ASCII digits, no leading zero, the whole string; a run
        # id is one folder name. Anything else is no model, never a looser reading of one.
        parsed = parse_checkpoint_model(model_name)
        if parsed is None:
            raise UnknownModelError(
                f"model {model_name!r} not found: use '{self.base_model_name}' or '<run>@<step>'"
            )
        run, step = parsed
        if not (self.checkpoint_dir(run, step) / "adapter_config.json").is_file():
            raise UnknownModelError(
                f"model '{model_name}' not found: run '{run}' has no checkpoint for step {step}"
            )
        return run, step

    def parse_model_for(self, model_name: str, workspace: str | None) -> tuple[str, int] | None:
        """parse_model_name for a request acting for `workspace`: a checkpoint only when its run is that
        workspace's (ownership.py), else the same "not found" as a checkpoint that does not exist."""
        parsed = parse_checkpoint_model(model_name)
        if parsed is not None and not may_use(self.runs_dir, parsed.run, workspace):
            raise UnknownModelError(
                f"model {model_name!r} not found: run '{parsed.run}' has no checkpoint for step {parsed.step}"
            )
        return self.parse_model_name(model_name)

    def loaded_adapters(self) -> list[str]:
        with self._meta_lock:
            return list(self._loaded)

    # ---- adapters -------------------------------------------------------------------------------------
    def resolve_adapter(self, model_name: str) -> str | None:
        """Base model -> None (serve with adapters disabled); `<run>@<step>` -> loaded adapter name.

        Loads the checkpoint on first use (LRU of `max_loaded_adapters`). Blocks while a batch runs, so
        call it from a worker thread, not the event loop."""
        parsed = self.parse_model_name(model_name)
        if parsed is None:
            return None
        run, step = parsed
        key = f"{run}@{step}"
        with self._model_lock:
            with self._meta_lock:
                cached = self._loaded.get(key)
                if cached is not None:
                    self._loaded.move_to_end(key)
            if cached is not None:
                self.ledger.touch(cached)  # outside _meta_lock: the ledger's evictions take it
                return cached
            self._flush_deletes()  # may hold a stale copy under the same name
            # The shared grammar's adapter key (run ids have no "." for PEFT to split module names on).
            name = base_name = f"ckpt:{run}@{step}"
            copies = 0
            while name in self.model.peft_config:  # an evicted copy still pinned by the running batch
                copies += 1
                name = f"{base_name}~{copies}"
            folder = self.checkpoint_dir(run, step)
            # Reserve before loading (the weights file's size ~ the fp32 tensors), measure after.
            self.ledger.reserve(name, "serve", (folder / "adapter_model.safetensors").stat().st_size,
                                evict=lambda: self._evict_serving(key, name), pin=True)
            try:
                # Never create adapter weights as inference tensors (a batch may call this inside inference_mode).
                with torch.inference_mode(False):
                    self.model.load_adapter(str(folder), adapter_name=name, is_trainable=False)
            except BaseException:
                self.ledger.release(name)
                raise
            token = f".{name}."
            self.ledger.resize(name, tensor_bytes(p for n, p in self.model.named_parameters() if token in n))
            self.ledger.unpin(name)
            with self._meta_lock:
                self._loaded[key] = name
                while len(self._loaded) > self.max_loaded_adapters:
                    self._pending_delete.add(self._loaded.popitem(last=False)[1])
            self._flush_deletes()
            log.info("loaded adapter %s from %s", name, self.checkpoint_dir(run, step))
            return name

    def invalidate_run(self, run_id: str) -> None:
        """Forget cached adapters of a run (its checkpoints were rewritten); they reload on next use.

        Never blocks: if a batch is running, the PEFT modules are deleted at the next resolve."""
        with self._meta_lock:
            for key in [k for k in self._loaded if k.rsplit("@", 1)[0] == run_id]:
                self._pending_delete.add(self._loaded.pop(key))
        if self._model_lock.acquire(blocking=False):
            try:
                self._flush_deletes()
            finally:
                self._model_lock.release()

    def _flush_deletes(self) -> None:
        # Caller holds _model_lock; a batch holds it for its whole loop, and names a running batch pinned
        # (serving()) stay pending until it ends, so nothing in use is deleted.
        with self._meta_lock:
            names = {n for n in self._pending_delete if not self._in_use[n]}
            self._pending_delete -= names
        for name in names:
            if name in self.model.peft_config:
                if self.model.active_adapter == name:
                    self.model.set_adapter(PLACEHOLDER_ADAPTER, inference_mode=True)
                self.model.delete_adapter(name)
            self.ledger.release(name)

    def _evict_serving(self, key: str, name: str) -> None:
        # Called by the ledger (under _model_lock, see resolve_adapter and the trainer): delete it now.
        with self._meta_lock:
            if self._loaded.get(key) == name:
                del self._loaded[key]
            self._pending_delete.add(name)
        self._flush_deletes()

    @contextlib.contextmanager
    def serving(self):
        """Hold the store for one mixed-adapter generation batch (PEFT `adapter_names` per row). Yields
        `pin(model_name) -> adapter name or None (base)`: resolves the model and keeps its adapter loaded
        until the batch ends, whatever the LRU evicts meanwhile. Call from the batch's worker thread."""
        pinned: list[str] = []

        def pin(model_name: str) -> str | None:
            name = self.resolve_adapter(model_name)
            if name is not None:
                with self._meta_lock:
                    self._in_use[name] += 1
                # Pinned in the memory ledger too, so no one evicts (and under-counts) what this batch uses.
                self.ledger.pin(name)
                pinned.append(name)
            return name

        with self._model_lock:
            self._flush_deletes()  # deletions deferred by invalidate_run while a batch ran
            try:
                yield pin
            finally:
                with self._meta_lock:
                    self._in_use.subtract(pinned)
                    self._in_use += Counter()  # drop zero counts
                for name in pinned:
                    self.ledger.unpin(name)
                self._flush_deletes()  # evictions deferred while this batch used them

    @contextlib.contextmanager
    def model_lock_released(self):
        """Inside serving() (its worker thread): the model lock let go for a while, its pins kept (so nothing
        the batch uses is deleted meanwhile), taken back after: how a batch steps aside for a trainer, whose
        step takes the lock too (trainer.train_step_sync)."""
        self._model_lock.release()
        try:
            yield
        finally:
            self._model_lock.acquire()

    @contextlib.contextmanager
    def use_adapter(self, adapter: str | None):
        """Hold the store for one generation batch with `adapter` active (None: base model)."""
        with self._model_lock:
            self._flush_deletes()  # deletions deferred by invalidate_run while a batch ran
            if adapter is None:
                with self.model.disable_adapter():
                    yield self.model
            else:
                self.model.set_adapter(adapter, inference_mode=True)
                yield self.model

    # ---- sharing between generation and training ------------------------------------------------------
    def _condition(self) -> asyncio.Condition:
        # An asyncio.Condition binds to the loop it is first used in; tests (and scripts) may drive the store
        # from successive asyncio.run() loops, so a new loop gets a new condition (state carries over).
        loop = asyncio.get_running_loop()
        if self._cond is None or self._cond_loop is not loop:
            self._cond, self._cond_loop = asyncio.Condition(), loop
        return self._cond

    @property
    def exclusive_pending(self) -> bool:
        """True while a trainer holds or waits for exclusive(): running batches stop taking new rows."""
        return self._exclusive

    @contextlib.asynccontextmanager
    async def generating(self) -> AsyncIterator[None]:
        """Held by a backend around each generation batch; waits while a trainer holds exclusive()."""
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: not self._exclusive)
            self._active_batches += 1
        try:
            yield
        finally:
            async with cond:
                self._active_batches -= 1
                cond.notify_all()

    async def step_aside(self) -> bool:
        """Called by a running batch of base-model rows (between decode steps; a batch that pins adapters does
        not, their memory may be what the step needs) holding generating(): while a trainer waits for
        exclusive(), the batch stops counting as active, so the trainer runs now instead of after the batch's
        longest row; it returns once no trainer holds the model. False when no trainer was waiting. The batch
        keeps its rows and their KV cache meanwhile (the trainer touches only its own run's adapter, and it puts
        back what it changes: the active adapter, train mode, requires_grad), so the rows continue exactly."""
        cond = self._condition()
        async with cond:
            if not self._exclusive:
                return False
            self._active_batches -= 1
            cond.notify_all()
            try:
                await cond.wait_for(lambda: not self._exclusive)
            finally:
                self._active_batches += 1
        return True

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """Training holds this: waits for in-flight batches to finish or step aside (step_aside) and blocks new
        ones until exit."""
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: not self._exclusive)  # one exclusive holder at a time
            self._exclusive = True
            await cond.wait_for(lambda: self._active_batches == 0)
        try:
            for sleep, _ in self.exclusive_hooks:
                await sleep()
            try:
                yield
            finally:
                for _, wake in reversed(self.exclusive_hooks):
                    await wake()
        finally:
            async with cond:
                self._exclusive = False
                cond.notify_all()


def _end_token_ids(model: torch.nn.Module, tokenizer) -> set[int]:
    """Tokens that end a reply: the tokenizer's EOS, the generation config's, and chatml's `<|im_end|>`."""
    ids = {tokenizer.eos_token_id}
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
        ids.add(im_end)
    return {i for i in ids if i is not None}


def _first_linear_target(model: torch.nn.Module) -> list[str]:
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    for preferred in ("q_proj", "c_attn", "query", "qkv_proj"):
        if preferred in names:
            return [preferred]
    return [sorted(names - {"lm_head"})[0]]
