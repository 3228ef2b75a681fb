"""Token-by-token detokenisation, shared by the stream (streaming.py: what each token adds to the reply) and
the token roles (token_roles.py: which characters of the reply each sampled token wrote).

The tokenizers library's DecodeStream never yields half a UTF-8 character: a token holding part of one yields
"" and the token that completes it yields the whole character. Special tokens are skipped, as the reply's text
skips them."""

from __future__ import annotations


class IncrementalDecoder:
    def __init__(self, tokenizer) -> None:
        self.backend = getattr(tokenizer, "backend_tokenizer", None)
        self.tokenizer = tokenizer
        if self.backend is not None:
            from tokenizers.decoders import DecodeStream

            self.stream = DecodeStream(skip_special_tokens=True)
        self.ids: list[int] = []
        self.text = ""

    def step(self, token_id: int) -> str:
        if self.backend is not None:
            return self.stream.step(self.backend, token_id) or ""
        # A slow tokenizer has no DecodeStream: decode everything again and send what is new and whole.
        self.ids.append(token_id)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return ""
        new, self.text = text[len(self.text):], text
        return new
