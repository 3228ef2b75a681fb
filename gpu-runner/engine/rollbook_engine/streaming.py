"""`stream: true`: server-sent events, token by token as the batch samples.

Wire format (OpenAI's): `data: <ChatCompletionChunk JSON>\\n\\n` per chunk, then `data: [DONE]\\n\\n`. Each
choice's first chunk carries the role; then ONE chunk per sampled token, with or without tools, carrying that
token's logprob and id and whatever text it made safe to send (an empty delta when none); its last chunk
carries finish_reason (and `malformed_tool_calls`, and whatever was held back). With `stream_options.include_usage` a final chunk has
`choices: []` and the usage. A failure after the stream started is sent as `data: {"error": {...}}`, which the
official clients raise.

Text is decoded incrementally by the tokenizers library's DecodeStream, which never yields half a UTF-8
character. Some text is held back until it is safe to send, so that the streamed content always equals the
plain response's content:
- a stop string, and the last (longest stop string - 1) characters, which could be the start of one (the
  reply is cut before it);
- with tools, everything from where a call could start in the model's format (hermes: a `<tool_call>` or a
  suffix that could start one; llama3_json: the whole reply once it starts with `{`; see tool_formats/) on,
  and trailing whitespace: the reply is parsed when it ends, and its calls are sent whole as `delta.tool_calls`
  in the last chunk. An unconstrained call may turn out malformed, and the stream must not announce a call the
  reply does not make.
- A FORCED call (tool_choice "required" / named, in a format with a grammar: prompt.grammar) cannot turn out
  malformed, so it streams as OpenAI's does: a first `tool_calls` delta with index, id, type and name as soon
  as the name is complete, then `arguments` fragments as the tokens write them, their concatenation equal to
  the reply's arguments (ToolFormat.forced_call_so_far: the JSON formats and Mistral v11 send the JSON as
  written, holding back only a tail that could be closing text; qwen3_coder sends its parameters converted to
  JSON — a string value character by character, a typed one whole when its `</parameter>` closes). Cut by max_tokens,
  the stream ends with finish_reason "length" and `malformed_tool_calls` (the plain reply then returns the
  text as content, no call; the stream does not send it again as content).
Logprobs and token ids travel in their token's chunk, so a client assembling the chunks gets exactly the plain
response's lists.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from .backends.base import GenerationRequest, GenerationResult, InferenceBackend, SampledToken
from .contracts.chat import ChatCompletionChunk, ChatCompletionRequest, ChoiceLogprobs, ChunkChoice, ChunkDelta, FinishReason
from .contracts.chat import ToolCallDelta, ToolCallDeltaFunction
from .incremental_decode import IncrementalDecoder
from .prompt import Prompt
from .responses import completion_id, final_reply, logprob_entry, usage
from .tool_formats.base import openai_call_id
from .vocab import Vocab

log = logging.getLogger(__name__)


class ChoiceStream:
    """One choice's chunks: what can be sent after each token, and the end."""

    def __init__(self, index: int, req: ChatCompletionRequest, prompt: Prompt, vocab: Vocab, tokenizer,
                 stops: list[str]) -> None:
        self.index, self.req, self.prompt, self.vocab = index, req, prompt, vocab
        self.decoder = IncrementalDecoder(tokenizer)
        self.text = prompt.prefill  # everything the reply says so far; the prefill is held (it opens a call)
        self.sent = 0  # characters of self.text already sent
        self.stops = stops
        self.hold_for_stop = max((len(s) for s in stops), default=1) - 1
        self.parse_tools = prompt.tool_names is not None
        self.logprobs: list[Any] = []  # not yet sent, with the ids below
        self.ids: list[int] = []
        # A forced, grammar-constrained call: streamed as it is written (_ForcedCall).
        self.forced = _ForcedCall(req.tool_choice, prompt) if prompt.forces_call else None

    def _safe_end(self) -> int:
        end = len(self.text) - self.hold_for_stop
        for stop in self.stops:  # the token that completes a stop string is seen here before the row ends
            if (at := self.text.find(stop, max(0, self.sent - len(stop)))) != -1:
                end = min(end, at)
        if self.parse_tools:
            at = self.prompt.tool_format.hold_from(self.text)
            end = min(end, len(self.text[:at].rstrip()))
        return max(end, self.sent)

    def _choice(self, delta: ChunkDelta, finish: FinishReason | None = None, **extra: Any) -> ChunkChoice:
        carry: dict[str, Any] = {}
        if self.req.logprobs and self.logprobs:
            carry["logprobs"] = ChoiceLogprobs(content=self.logprobs)
        if self.req.return_token_ids and self.ids:
            carry["token_ids"] = self.ids
        self.logprobs, self.ids = [], []
        return ChunkChoice(index=self.index, delta=delta, finish_reason=finish, **carry, **extra)

    def first(self) -> ChunkChoice:
        return ChunkChoice(index=self.index, delta=ChunkDelta(role="assistant", content=""), finish_reason=None)

    def add(self, token: SampledToken) -> ChunkChoice:
        """The token's chunk: always one, so a client sees every token as it is sampled."""
        self.text += self.decoder.step(token.token_id)
        self.ids.append(token.token_id)
        if self.req.logprobs:
            self.logprobs.append(logprob_entry(self.vocab, token.token_id, token.logprob, token.top_logprobs,
                                               bool(self.req.return_tokens_as_token_ids)))
        if self.forced is not None:
            call = self.forced.delta(self.text)
            return self._choice(ChunkDelta(tool_calls=[call]) if call is not None else ChunkDelta())
        end = self._safe_end()
        if end == self.sent:
            return self._choice(ChunkDelta())
        piece, self.sent = self.text[self.sent:end], end
        return self._choice(ChunkDelta(content=piece))

    def finish(self, result: GenerationResult) -> list[ChunkChoice]:
        """The last chunk: what was held back, and the finish reason."""
        reply = final_reply(self.prompt, result)
        calls: list[ToolCallDelta] = []
        rest = ""
        if self.forced is not None and self.forced.announced:
            if reply.calls:
                calls = self.forced.rest(reply.calls[0].function.arguments)
        else:
            content = reply.content or ""
            sent = self.text[:self.sent]
            if not content.startswith(sent):  # would mean a hold-back rule above is wrong
                log.error("streamed text %r is not a prefix of the reply %r", sent, content)
            rest = content[len(sent):] if content.startswith(sent) else ""
            calls = [ToolCallDelta(index=i, id=c.id, type="function",
                                   function=ToolCallDeltaFunction(name=c.function.name, arguments=c.function.arguments))
                     for i, c in enumerate(reply.calls)]
        delta = ChunkDelta(content=rest or None, tool_calls=calls or None)
        return [self._choice(delta, reply.finish_reason, malformed_tool_calls=reply.malformed or None)]


class _ForcedCall:
    """The one call of a grammar-constrained reply, as OpenAI streams one: a first delta with the call's id and
    name once the name is written, then the arguments as the tokens write them. Where the text after the prefill
    stands in the call is the format's to say (ToolFormat.forced_call_so_far: the JSON formats hold back a tail
    that could still be their closing text; qwen3_coder converts its parameters to JSON as they close; Mistral
    v11 writes JSON after the name)."""

    def __init__(self, tool_choice: Any, prompt: Prompt) -> None:
        self.tool_choice = tool_choice
        self.prompt = prompt
        self.id = openai_call_id()
        self.announced = False
        self.args_sent = ""

    def delta(self, text: str) -> ToolCallDelta | None:
        """What the text so far adds to the call: its header once the name is known, then new arguments."""
        fmt, prefill = self.prompt.tool_format, self.prompt.prefill
        name, safe = fmt.forced_call_so_far(text[len(prefill):], self.tool_choice, self.prompt.tool_params)
        if name is None:
            return None
        new = safe[len(self.args_sent):] if safe.startswith(self.args_sent) else ""
        if self.announced and not new:
            return None
        self.args_sent += new
        if self.announced:
            return ToolCallDelta(index=0, function=ToolCallDeltaFunction(arguments=new))
        self.announced = True
        return ToolCallDelta(index=0, id=self.id, type="function",
                             function=ToolCallDeltaFunction(name=name, arguments=new))

    def rest(self, final_arguments: str) -> list[ToolCallDelta]:
        """The arguments' last fragment (the tail held back as possibly closing text), from the parsed call."""
        if not final_arguments.startswith(self.args_sent):  # would mean the spelling above is wrong
            log.error("streamed arguments %r are not a prefix of the call's %r", self.args_sent, final_arguments)
            return []
        tail = final_arguments[len(self.args_sent):]
        return [ToolCallDelta(index=0, function=ToolCallDeltaFunction(arguments=tail))] if tail else []


def _event(payload: dict[str, Any]) -> str:
    # The SSE framing is one line per event; a library would add nothing here.
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


async def sse_events(backend: InferenceBackend, gen: GenerationRequest, req: ChatCompletionRequest, prompt: Prompt,
                     vocab: Vocab, tokenizer,
                     on_result: Callable[[GenerationResult], None] | None = None) -> AsyncIterator[str]:
    """The response body. Closing it early (the client went away) cancels the generation. `on_result`: each
    choice's result once sampled (server.py records a prefilled reply's prompt, served_prompts.py)."""
    chunk_id, created = completion_id(), int(time.time())
    streams = [ChoiceStream(i, req, prompt, vocab, tokenizer, gen.stop) for i in range(gen.n)]
    queue: asyncio.Queue[tuple[int, SampledToken | GenerationResult] | None] = asyncio.Queue()
    gen.on_token = lambda i, token: queue.put_nowait((i, token))
    gen.on_finish = lambda i, result: queue.put_nowait((i, result))
    task = asyncio.ensure_future(backend.generate([gen]))
    task.add_done_callback(lambda _t: queue.put_nowait(None))

    def chunk(choices: list[ChunkChoice], **extra: Any) -> str:
        return _event(ChatCompletionChunk(id=chunk_id, created=created, model=req.model, choices=choices,
                                          **extra).model_dump())

    try:
        yield chunk([s.first() for s in streams],
                    prompt_token_ids=prompt.token_ids if req.return_token_ids else None)
        results: dict[int, GenerationResult] = {}
        while len(results) < gen.n:
            item = await queue.get()
            if item is None:  # generate() ended before every choice finished: it failed
                err = task.exception() if not task.cancelled() else asyncio.CancelledError()
                log.error("streamed generation failed: %r", err)
                yield _event({"error": {"message": f"generation failed: {err}", "type": "server_error",
                                        "param": None, "code": 500}})
                return
            index, value = item
            if isinstance(value, GenerationResult):
                results[index] = value
                if on_result is not None:
                    on_result(value)
                for piece in streams[index].finish(value):
                    yield chunk([piece])
            else:
                yield chunk([streams[index].add(value)])
        if req.stream_options is not None and req.stream_options.include_usage:
            yield chunk([], usage=usage(prompt, [results[i] for i in range(gen.n)]))
        yield "data: [DONE]\n\n"
    finally:
        if not task.done():
            task.cancel()  # the client went away (or we failed): its rows leave the queue and the batch
