"""The prompt ids the engine actually fed the model for each reply it sampled with a prefill, kept for training.

A reply forced by `tool_choice` ("required" or a named function) is sampled after a prompt that ends with the
tool format's prefill (prompt.py: `<tool_call>\n{"name": "…", "arguments": ` for Hermes): those prefill tokens are
prompt, not sampled. An outside client (OpenPipe ART) sends the conversation back for training without the
tool_choice it sampled with, so re-rendering its messages gives the prompt *without* the prefill, and the forced
reply would train after a prompt the model never saw (mean |log ratio| 0.75 in the issue's test).

So each such served reply is recorded: key (workspace, the sampled ids), value (the prompt rendered without the
prefill, the prompt fed). POST /tokenize given `sampled_token_ids` answers the fed prompt when a record has the
same sampled ids *and* the same unprefilled rendering of the messages asked about (two conversations can sample
the same short reply; only the one whose messages match is the same turn). Replies sampled without a prefill
need no record: their prompt is the re-rendering.

Bounded by tokens held (least recently used first out); the records live in this process only: after an engine
restart a forced reply is trained on the re-rendered prompt, as before, and the runner's log says how many
replies had a record. Keyed by workspace so one workspace's records never answer another's tokenize.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict

# About 64 MB of int32 ids (prompt + unprefilled rendering): a few thousand forced replies of long prompts.
DEFAULT_MAX_TOKENS = 16_000_000

_Key = tuple[str | None, bytes]


def _ids(ids: list[int]) -> array:
    return array("i", ids)


class ServedPrompts:
    def __init__(self, max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._held = 0
        # Per key, the records of that reply (usually one); the OrderedDict's order is recency.
        self._records: OrderedDict[_Key, list[tuple[array, array]]] = OrderedDict()
        self._lock = threading.Lock()  # streamed replies finish on the event loop, others may not

    @staticmethod
    def _key(workspace: str | None, sampled: list[int]) -> _Key:
        return workspace, _ids(sampled).tobytes()

    def record(self, workspace: str | None, sampled: list[int], unprefilled: list[int], fed: list[int]) -> None:
        if not sampled:
            return
        cost = len(unprefilled) + len(fed)
        if cost > self.max_tokens:
            return
        key = self._key(workspace, sampled)
        entry = (_ids(unprefilled), _ids(fed))
        with self._lock:
            records = self._records.setdefault(key, [])
            if entry in records:
                self._records.move_to_end(key)
                return
            records.append(entry)
            self._records.move_to_end(key)
            self._held += cost
            while self._held > self.max_tokens and self._records:
                _, dropped = self._records.popitem(last=False)
                self._held -= sum(len(u) + len(f) for u, f in dropped)

    def fed_prompt(self, workspace: str | None, sampled: list[int], unprefilled: list[int]) -> list[int] | None:
        """The prompt fed before `sampled` in a turn whose messages render to `unprefilled`, if one was recorded."""
        key = self._key(workspace, sampled)
        want = _ids(unprefilled)
        with self._lock:
            for u, fed in self._records.get(key, []):
                if u == want:
                    self._records.move_to_end(key)
                    return fed.tolist()
        return None

    @property
    def held_tokens(self) -> int:
        return self._held
