"""Which sampled tokens were scaffolding and which were content (token_roles.py), per tool format, on the chat
templates and the bundled SmolLM2 tokenizer of test_tool_formats.py: a reply with two parallel calls, token by
token. A reply is drawn with each content token in brackets and each scaffolding token bare, so the expected
string fixes every token's role (the tokenisation is the bundled tokenizer's, fixed)."""

from __future__ import annotations

import pytest

from rollbook_engine import tool_formats
from rollbook_engine.backends.base import GenerationResult
from rollbook_engine.responses import chat_response, final_reply, reply_token_roles
from rollbook_engine.token_roles import content_chars
from rollbook_engine.vocab import Vocab

from test_tool_formats import FIRST, TEMPLATES, end_id, enc, load_tokenizer, prompt_for, req

# What each family's model writes for "add 2+3 and multiply 4*5", two calls in one turn (prose before them
# where the format reads calls after prose; llama3_json reads calls only at the start, prose after them).
TWO = {
    "hermes": 'Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n'
              '<tool_call>\n{"name": "mul", "arguments": {"a": 4, "b": 5}}\n</tool_call>',
    "qwen3_coder": "Sure.\n<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\n3\n</parameter>\n"
                   "</function>\n</tool_call>\n<tool_call>\n<function=mul>\n<parameter=a>\n4\n</parameter>\n"
                   "<parameter=b>\n5\n</parameter>\n</function>\n</tool_call>",
    "llama3_json": '<|python_tag|>{"name": "add", "parameters": {"a": 2, "b": 3}}; '
                   '{"name": "mul", "parameters": {"a": 4, "b": 5}}\nDone.',
    "mistral": 'Sure.\n[TOOL_CALLS] [{"name": "add", "arguments": {"a": 2, "b": 3}}, '
               '{"name": "mul", "arguments": {"a": 4, "b": 5}}]',
}

# [content] tokens in brackets; <|im_end|> is the sampled end of turn (scaffolding). A token that holds the
# arguments' last `}` and the envelope's `}` is content (it writes part of the arguments).
EXPECTED = {
    "hermes": '[Sure][.]\n<tool_call>\n{"name": "[add]", "arguments":[ {"][a][":][ ][2][,][ "][b][":][ ][3][}}]\n'
              '</tool_call>\n<tool_call>\n{"name": "[mul]", "arguments":[ {"][a][":][ ][4][,][ "][b][":][ ][5][}}]\n'
              "</tool_call><|im_end|>",
    "qwen3_coder": "[Sure][.]\n<tool_call>\n<function=[add]>\n<parameter=[a]>\n[2]\n</parameter>\n<parameter=[b]>\n[3]\n"
                   "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=[mul]>\n<parameter=[a]>\n[4]\n"
                   "</parameter>\n<parameter=[b]>\n[5]\n</parameter>\n</function>\n</tool_call><|im_end|>",
    "llama3_json": '<|python_tag|>{"name": "[add]", "parameters":[ {"][a][":][ ][2][,][ "][b][":][ ][3][}}]; '
                   '{"name": "[mul]", "parameters":[ {"][a][":][ ][4][,][ "][b][":][ ][5][}}]\n[Done][.]<|im_end|>',
    "mistral": '[Sure][.]\n[TOOL_CALLS] [{"name": "[add]", "arguments":[ {"][a][":][ ][2][,][ "][b][":][ ][3][}]}, '
               '{"name": "[mul]", "arguments":[ {"][a][":][ ][4][,][ "][b][":][ ][5][}}]]<|im_end|>',
}


@pytest.fixture(scope="module", params=list(TWO))
def family(request):
    tok = load_tokenizer()
    tok.chat_template = (TEMPLATES / f"{request.param}.jinja").read_text()
    return request.param, tok


def roles_of(tok, prompt, sampled_text: str, stop_text: str = ""):
    """The roles of `sampled_text` sampled after `prompt`, then `stop_text` (a stop string it was cut before),
    then the end of turn; with the ids and the reply."""
    ids = enc(tok, sampled_text + stop_text) + [end_id(tok)]
    result = GenerationResult(ids, [-0.5] * len(ids), sampled_text, "stop")
    reply = final_reply(prompt, result)
    roles = reply_token_roles(prompt, result, reply, Vocab(tok))
    assert len(roles) == len(ids)
    return roles, ids, reply


def marked(tok, ids, roles) -> str:
    return "".join(f"[{tok.decode([t])}]" if r == "content" else tok.decode([t]) for t, r in zip(ids, roles))


def test_two_parallel_calls_token_by_token(family):
    name, tok = family
    roles, ids, reply = roles_of(tok, prompt_for(tok, FIRST), TWO[name])
    assert [c.function.name for c in reply.calls] == ["add", "mul"]
    assert marked(tok, ids, roles) == EXPECTED[name]


def test_a_forced_calls_prefill_is_prompt_and_the_rest_is_marked(family):
    name, tok = family
    prompt = prompt_for(tok, FIRST, tool_choice="required")
    call = TWO[name].removeprefix("Sure.\n").removeprefix("<|python_tag|>")
    assert call.startswith(prompt.prefill)
    roles, ids, reply = roles_of(tok, prompt, call[len(prompt.prefill):])
    assert len(reply.calls) == 2
    # The sampled tokens start inside the call: its name first (content), then the envelope.
    first_content = next(i for i, r in enumerate(roles) if r == "content")
    assert tok.decode(ids[:first_content + 1]).endswith("add") and roles[-1] == "scaffolding"
    assert marked(tok, ids, roles) in EXPECTED[name]


def test_a_reply_without_tools_is_content_up_to_its_end_of_turn():
    tok = load_tokenizer()
    prompt = prompt_for(tok, FIRST)
    prompt.tool_names = None  # no tools offered: nothing is parsed
    roles, ids, _ = roles_of(tok, prompt, "It is 5 and 20.")
    assert roles == ["content"] * (len(ids) - 1) + ["scaffolding"]


def test_a_malformed_call_is_content_and_a_stop_string_is_not():
    tok = load_tokenizer()
    prompt = prompt_for(tok, FIRST)
    bad = '<tool_call>\n{"name": "sub", "arguments": {}}\n</tool_call>'
    roles, ids, reply = roles_of(tok, prompt, bad, stop_text="\nUser:")
    assert reply.calls == [] and reply.malformed
    stop_tokens = len(enc(tok, bad + "\nUser:")) - len(enc(tok, bad))
    assert roles == ["content"] * (len(ids) - stop_tokens - 1) + ["scaffolding"] * (stop_tokens + 1)


def test_a_character_split_across_tokens_takes_the_role_of_the_token_that_completes_it():
    tok = load_tokenizer()
    prompt = prompt_for(tok, FIRST)
    # "城市" is several byte tokens in SmolLM2's vocabulary: none of them decodes to text alone.
    text = '<tool_call>\n{"name": "add", "arguments": {"城市": 2}}\n</tool_call>'
    roles, ids, reply = roles_of(tok, prompt, text)
    assert len(reply.calls) == 1
    pieces = [tok.decode([t]) for t in ids]
    partial = [i for i, p in enumerate(pieces) if "\ufffd" in p]
    assert partial and all(roles[i] == "content" for i in partial)
    assert marked(tok, ids, roles).startswith('<tool_call>\n{"name": "[add]", "arguments":[ {"]')


def test_spans_of_whitespace_between_calls_are_scaffolding_and_prose_whitespace_content():
    fmt = tool_formats.Qwen3CoderFormat()
    call = "<tool_call>\n<function=f>\n</function>\n</tool_call>"
    text = "a b \n" + call + "\n\n" + call + "\n"
    parsed = fmt.parse(text, ["f"])
    chars = content_chars(text, parsed.spans)
    assert "".join(c for c, keep in zip(text, chars) if keep) == "a bff"


def test_the_response_carries_one_role_per_token_id_with_return_token_ids():
    tok = load_tokenizer()
    tok.chat_template = (TEMPLATES / "hermes.jinja").read_text()
    prompt = prompt_for(tok, FIRST)
    ids = enc(tok, TWO["hermes"]) + [end_id(tok)]
    result = GenerationResult(ids, [-0.5] * len(ids), TWO["hermes"], "stop")
    with_ids = chat_response(req(FIRST, return_token_ids=True, logprobs=True), prompt, [result], Vocab(tok))
    choice = with_ids.choices[0]
    assert choice.token_roles is not None and len(choice.token_roles) == len(choice.token_ids or [])
    assert choice.token_roles[-1] == "scaffolding" and "content" in choice.token_roles
    assert chat_response(req(FIRST), prompt, [result], Vocab(tok)).choices[0].token_roles is None


def test_a_marker_that_is_a_special_token_is_scaffolding_though_the_text_drops_it():
    # Mistral's own tokenizers hold [TOOL_CALLS] as a control token, which the decoded reply leaves out.
    tok = load_tokenizer()
    tok.chat_template = (TEMPLATES / "mistral.jinja").read_text()
    tok.add_special_tokens({"additional_special_tokens": ["[TOOL_CALLS]"]})
    prompt = prompt_for(tok, FIRST)
    fmt = prompt.tool_format
    assert isinstance(fmt, tool_formats.MistralFormat) and fmt.marker_is_special
    sampled = TWO["mistral"].removeprefix("Sure.\n")
    text = tok.decode(enc(tok, sampled), skip_special_tokens=True)
    assert "[TOOL_CALLS]" not in text
    ids = enc(tok, sampled) + [end_id(tok)]
    result = GenerationResult(ids, [-0.5] * len(ids), text, "stop")
    reply = final_reply(prompt, result)
    roles = reply_token_roles(prompt, result, reply, Vocab(tok))
    assert [c.function.name for c in reply.calls] == ["add", "mul"]
    assert tok.decode([ids[0]]) == "[TOOL_CALLS]" and roles[0] == "scaffolding"
    assert marked(tok, ids, roles) == EXPECTED["mistral"].removeprefix("[Sure][.]\n")
