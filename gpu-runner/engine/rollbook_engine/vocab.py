"""What the server needs to know about the tokenizer's vocabulary, computed once at load.

- Each token's UTF-8 bytes, for OpenAI's `logprobs.content[].bytes` (a byte-level BPE token may hold part of
  a character, so its decoded text alone can be "\ufffd").
- The longest token in bytes: `ceil(len(utf8 text) / longest)` is a lower bound on the number of tokens any
  text becomes, which lets the server refuse a prompt far beyond the context without tokenising it.
"""

from __future__ import annotations

import math
import re

_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")  # SentencePiece byte-fallback tokens


class Vocab:
    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.size = len(tokenizer)
        pieces = tokenizer.convert_ids_to_tokens(list(range(self.size)))
        special = set(tokenizer.all_special_ids)
        added = set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
        byte_level = _is_byte_level(tokenizer)
        table = _byte_decoder() if byte_level else None
        self._bytes: list[bytes] = []
        for i, piece in enumerate(pieces):
            piece = piece or ""
            if i in special or i in added or table is None:
                self._bytes.append(_plain_piece_bytes(piece))
            else:
                try:
                    self._bytes.append(bytes(table[c] for c in piece))
                except KeyError:  # not a byte-level piece after all
                    self._bytes.append(piece.encode("utf-8"))
        self.longest_token_bytes = max(1, max(len(b) for b in self._bytes))
        # The ids decoding skips (skip_special_tokens): end of turn, and markers that are control tokens.
        self.special_ids = special | {i for i, t in (getattr(tokenizer, "added_tokens_decoder", {}) or {}).items()
                                      if getattr(t, "special", False)}

    def token_bytes(self, token_id: int) -> list[int]:
        return list(self._bytes[token_id]) if 0 <= token_id < self.size else []

    def token_text(self, token_id: int) -> str:
        """The token as text (special tokens included), as OpenAI's `logprobs.content[].token`."""
        return self.tokenizer.decode([token_id])

    def min_tokens(self, text: str) -> int:
        """A lower bound on how many tokens `text` becomes, without tokenising it."""
        return math.ceil(len(text.encode("utf-8")) / self.longest_token_bytes)


def _is_byte_level(tokenizer) -> bool:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = getattr(backend, "decoder", None)
    return type(decoder).__name__ == "ByteLevel"


def _plain_piece_bytes(piece: str) -> bytes:
    if m := _BYTE_TOKEN.match(piece):
        return bytes([int(m.group(1), 16)])
    return piece.replace("\u2581", " ").encode("utf-8")  # SentencePiece's word marker is a space


def _byte_decoder() -> dict[str, int]:
    # GPT-2's reversible byte <-> printable-character map, which byte-level BPE vocabularies are written in;
    # transformers ships it for its slow-to-fast tokenizer conversion.
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return {c: b for b, c in bytes_to_unicode().items()}
