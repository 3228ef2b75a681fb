"""ROLLBOOK_VLLM_* settings reach vLLM's engine arguments, checked without importing vllm (the engine's main venv has
none; the `conformance` modules run the real thing in the vLLM venv: scripts/test.sh)."""

from __future__ import annotations

import sys

import pytest

from rollbook_engine.backends.vllm_args import CPU_KV_CACHE_GIB, guided_decoding_kwargs, vllm_engine_args
from rollbook_engine.settings import EngineSettings


def test_tensor_parallel_and_memory_settings_reach_the_engine_args():
    settings = EngineSettings.from_env({
        "ROLLBOOK_VLLM_TENSOR_PARALLEL": "4", "ROLLBOOK_VLLM_GPU_MEMORY": "0.8", "ROLLBOOK_VLLM_MAX_LORA_RANK": "32",
    })
    args = vllm_engine_args("/models/SmolLM2-135M-Instruct", 8192, 4, settings, device="cuda", sleep_mode=True)
    assert args["tensor_parallel_size"] == 4
    assert args["gpu_memory_utilization"] == 0.8
    assert args["max_lora_rank"] == 32
    assert args["model"] == "/models/SmolLM2-135M-Instruct" and args["max_model_len"] == 8192 and args["max_loras"] == 4
    assert args["enable_lora"] and args["enable_sleep_mode"]
    # On CUDA the KV cache is what the memory share leaves: no fixed size unless asked.
    assert "kv_cache_memory_bytes" not in args
    # The mapping never needs vLLM itself.
    assert "vllm" not in sys.modules


def test_defaults_keep_one_gpu():
    args = vllm_engine_args("m", 2048, 2, EngineSettings.from_env({}), device="cuda", sleep_mode=True)
    assert args["tensor_parallel_size"] == 1 and args["gpu_memory_utilization"] == 0.5


def test_the_platform_decides_dtype_sleep_mode_and_the_kv_cache():
    none = EngineSettings.from_env({})
    cpu = vllm_engine_args("m", 2048, 2, none, device="cpu", sleep_mode=False)
    # fp32 on CPU (the trainer's dtype: bf16 logprobs were 0.03-0.05 off), no sleep mode (vLLM refuses it on CPU),
    # a KV cache of a fixed size (vLLM's CPU default is a share of all RAM).
    assert cpu["dtype"] == "float32" and cpu["enable_sleep_mode"] is False
    assert cpu["kv_cache_memory_bytes"] == int(CPU_KV_CACHE_GIB * 1024**3)
    assert vllm_engine_args("m", 2048, 2, none, device="cuda", sleep_mode=True)["dtype"] == "bfloat16"
    set_ = EngineSettings.from_env({"ROLLBOOK_VLLM_DTYPE": "bfloat16", "ROLLBOOK_VLLM_KV_CACHE_GIB": "0.5"})
    both = vllm_engine_args("m", 2048, 2, set_, device="cpu", sleep_mode=False)
    assert both["dtype"] == "bfloat16" and both["kv_cache_memory_bytes"] == 512 * 1024**2
    assert vllm_engine_args("m", 2048, 2, set_, device="cuda", sleep_mode=True)["kv_cache_memory_bytes"] == 512 * 1024**2
    # The product's Lark grammars go to llguidance ("guidance"), never to xgrammar under "auto".
    assert cpu["structured_outputs_config"] == {"backend": "guidance"}
    # vLLM's CPU LoRA kernels pad to max_lora_rank (64 ran 5x slower than 8, the trainer's default rank).
    assert cpu["max_lora_rank"] == 8 and vllm_engine_args("m", 2048, 2, none, device="cuda", sleep_mode=True)["max_lora_rank"] == 64
    with pytest.raises(ValueError, match="ROLLBOOK_VLLM_DTYPE='int8'"):
        EngineSettings.from_env({"ROLLBOOK_VLLM_DTYPE": "int8"})
    assert "vllm" not in sys.modules


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_tensor_parallel_value_names_the_variable(value):
    with pytest.raises(ValueError, match=f"ROLLBOOK_VLLM_TENSOR_PARALLEL='{value}'"):
        EngineSettings.from_env({"ROLLBOOK_VLLM_TENSOR_PARALLEL": value})


def test_a_bad_train_parallel_value_names_the_variable():
    with pytest.raises(ValueError, match=r"ROLLBOOK_TRAIN_PARALLEL='zero'.*'ddp' or 'fsdp'"):
        EngineSettings.from_env({"ROLLBOOK_TRAIN_PARALLEL": "zero"})


class _Params:  # stands in for vLLM's StructuredOutputsParams / GuidedDecodingParams (keyword-only dataclasses)
    def __init__(self, **kw):
        self.kw = kw


def test_a_forced_calls_grammar_reaches_vllms_guided_decoding_in_either_api():
    lark = 'start: " " args_0 "}"\nargs_0: %json{"type": "object"}'
    new = guided_decoding_kwargs(lark, _Params, None)
    assert list(new) == ["structured_outputs"] and new["structured_outputs"].kw == {"grammar": lark}
    old = guided_decoding_kwargs(lark, None, _Params)
    assert list(old) == ["guided_decoding"] and old["guided_decoding"].kw == {"grammar": lark}
    assert guided_decoding_kwargs(lark, _Params, _Params).keys() == {"structured_outputs"}  # the current API first
    assert guided_decoding_kwargs(None, _Params, _Params) == {}  # unconstrained requests: vLLM as before
    with pytest.raises(RuntimeError, match="tool_choice"):
        guided_decoding_kwargs(lark, None, None)
    assert "vllm" not in sys.modules


def test_the_xml_and_mistral_v11_grammars_reach_vllm_as_they_are():
    """qwen3_coder's and Mistral v11's forced-call grammars (regex `&`/`~`, `<[id]>` tokens, `%json`: llguidance's
    Lark, which vLLM's "guidance" backend runs) are handed to vLLM unchanged, and llguidance compiles them."""
    import llguidance

    from rollbook_engine.contracts.chat import ToolSpec
    from rollbook_engine.tool_formats import MistralV11Format, Qwen3CoderFormat

    tools = [ToolSpec.model_validate({"type": "function", "function": {"name": "weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "days": {"type": "integer"}},
        "required": ["city"]}}})]
    for lark in (Qwen3CoderFormat().call_grammar("required", tools),
                 MistralV11Format(special={"[ARGS]": 32}).call_grammar("required", tools)):
        assert lark is not None
        kwargs = guided_decoding_kwargs(lark, _Params, None)
        assert kwargs["structured_outputs"].kw == {"grammar": lark}
        assert llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(lark), None) == ""
    assert "vllm" not in sys.modules
