"""Building a request's prompt (prompt.py) on the real SmolLM2 tokenizer, no model: the byte-length bound is a
true lower bound (else a prompt that fits would be refused), what tool_choice shows and prefills, and the
refusal of an over-long prompt without tokenising it."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from rollbook_engine.contracts.chat import ChatCompletionRequest
from rollbook_engine.errors import RequestError
from rollbook_engine.model_loader import DEFAULT_MODEL, ensure_local
from rollbook_engine.prompt import build_prompt
from rollbook_engine.vocab import Vocab

ADD = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}


@pytest.fixture(scope="module")
def tok():
    return AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL), local_files_only=True)


@pytest.fixture(scope="module")
def vocab(tok):
    return Vocab(tok)


def request(**body) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate({"model": "m", "messages": [{"role": "user", "content": "2+3?"}], **body})


@pytest.mark.parametrize("text", [
    "plain English words, a sentence or two.", " " * 5000, "-" * 3000, "=" * 999, "\n" * 777, "你好世界" * 300,
    "<|im_start|><|im_end|>" * 50, "🤖" * 200, "aaaa" * 2000, "0123456789" * 300,
])
def test_the_byte_bound_never_exceeds_the_real_token_count(tok, vocab, text):
    assert vocab.min_tokens(text) <= len(tok.encode(text, add_special_tokens=False))


def test_tool_choice_none_shows_no_tools_and_parses_nothing(tok, vocab):
    p = build_prompt(tok, vocab, request(tools=[ADD], tool_choice="none"), 8192, {2})
    assert "<tools>" not in tok.decode(p.token_ids) and p.tool_names is None and p.prefill == ""
    auto = build_prompt(tok, vocab, request(tools=[ADD]), 8192, {2})
    assert "<tools>" in tok.decode(auto.token_ids) and auto.tool_names == ["add"] and auto.prefill == ""


def test_required_tool_choice_ends_the_prompt_with_its_prefill(tok, vocab):
    p = build_prompt(tok, vocab, request(tools=[ADD], tool_choice="required"), 8192, {2})
    assert tok.decode(p.token_ids).endswith('<|im_start|>assistant\n<tool_call>\n{"name": "')
    assert p.prefill == '<tool_call>\n{"name": "'


def test_an_over_long_prompt_is_refused_from_its_length_alone(tok, vocab, monkeypatch):
    def no_tokenising(*_a, **_k):
        raise AssertionError("tokenised")

    monkeypatch.setattr(tok, "encode", no_tokenising)
    with pytest.raises(RequestError) as err:
        build_prompt(tok, vocab, request(messages=[{"role": "user", "content": "x" * 2_000_000}]), 8192, {2})
    assert err.value.param == "messages" and "at least" in err.value.message and "8192" in err.value.message


def test_a_prompt_just_over_the_context_is_refused_exactly(tok, vocab):
    # Passes the bound (a few thousand bytes), so it is tokenised and measured.
    with pytest.raises(RequestError) as err:
        build_prompt(tok, vocab, request(messages=[{"role": "user", "content": "word " * 600}]), 256, {2})
    assert err.value.param == "messages" and "tokens, the model's context is 256" in err.value.message
