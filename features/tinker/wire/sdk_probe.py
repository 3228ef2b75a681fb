"""The real Tinker SDK's side of the wire tests (wire-proto.test.ts, schemas.test.ts).

Run with the venv scripts/tinker-venv.sh builds (tinker==0.38.0):

    python sdk_probe.py make          prints JSON: request bodies the SDK builds, and what they hold
    python sdk_probe.py read < in     reads JSON from stdin: bytes and bodies the TS side built, as the SDK reads them

`make` builds every body with the SDK's own types and serializers (request_conv.forward_backward_request_to_proto
for the protobuf one; `model_dump(request, exclude_unset=False, exclude_none=True, mode="json")` for the JSON
ones, as tinker/resources/*.py do). `read` decodes protobuf results with tinker.proto.response_conv, validates
JSON answers with the pydantic models the SDK casts them to, and renders an error body as the SDK's
APIStatusError shows it.
"""

from __future__ import annotations

import base64
import json
import math
import os
import sys
from datetime import datetime, timezone
from typing import Any

import httpx
import numpy as np

import tinker
from tinker import types
from tinker._client import AsyncTinker
from tinker._compat import model_dump
from tinker._models import validate_type
from tinker.lib._pydantic_conv import deserialize_json_response
from tinker.proto import response_conv
from tinker.types.generic_event import GenericEvent
from tinker.types.try_again_response import TryAgainResponse
from tinker.proto.request_conv import forward_backward_request_to_proto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dump_proto  # noqa: E402

_NP = {"float32": np.float32, "int64": np.int64}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def num(x: Any) -> Any:
    """A JSON-safe number: NaN and infinities as strings (JSON has no literal for them)."""
    f = float(x)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return int(x) if isinstance(x, (int, np.integer)) else f


def dense_values(td: types.TensorData) -> list[Any]:
    """The tensor's values, row-major, as the wire carries them (cast to the declared dtype; a sparse CSR
    tensor densified with 0 in the unlisted cells, without torch)."""
    values = np.asarray(td.data, dtype=_NP[td.dtype])
    if td.sparse_crow_indices is None:
        return [num(v) for v in values.tolist()]
    assert td.shape is not None and len(td.shape) == 2
    rows, cols = td.shape
    out = np.zeros((rows, cols), dtype=_NP[td.dtype])
    crow, col = td.sparse_crow_indices, td.sparse_col_indices or []
    for r in range(rows):
        for k in range(crow[r], crow[r + 1]):
            out[r, col[k]] = values[k]
    return [num(v) for v in out.flatten().tolist()]


def expected_request(req: types.ForwardBackwardRequest, forward_only: bool) -> dict[str, Any]:
    fbi = req.forward_backward_input
    return {
        "model_id": req.model_id,
        "seq_id": req.seq_id,
        "forward_only": forward_only,
        "loss_fn": fbi.loss_fn,
        "loss_fn_config": {
            k: (v if isinstance(v, str) else float(np.float64(v))) for k, v in (fbi.loss_fn_config or {}).items()
        },
        "data": [
            {
                "tokens": datum.model_input.to_ints(),
                "loss_fn_inputs": {
                    name: {"dtype": td.dtype, "shape": td.shape, "values": dense_values(td)}
                    for name, td in datum.loss_fn_inputs.items()
                },
            }
            for datum in fbi.data
        ],
    }


def fwdbwd(data: list[types.Datum], loss_fn: str, config: dict[str, Any] | None, seq_id: int, forward_only: bool = False):
    req = types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(data=data, loss_fn=loss_fn, loss_fn_config=config),
        model_id="sess-1:train:0",
        seq_id=seq_id,
    )
    msg = forward_backward_request_to_proto(req)
    msg.forward_only = forward_only  # as resources/training.py sets it
    return req, msg.SerializeToString()


def text(*chunks: list[int]) -> types.ModelInput:
    return types.ModelInput(chunks=[types.EncodedTextChunk(tokens=c) for c in chunks])


def make_fwdbwd_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []

    def add(name: str, data: list[types.Datum], loss_fn: str, config: dict[str, Any] | None, seq_id: int, forward_only: bool = False) -> None:
        req, body = fwdbwd(data, loss_fn, config, seq_id, forward_only)
        cases.append({"name": name, "bytes": b64(body), "expected": expected_request(req, forward_only)})

    # Supervised: cross_entropy with per-token weights, a prompt in two chunks, lists and numpy arrays.
    add(
        "cross_entropy",
        [
            types.Datum(
                model_input=text([151644, 872, 198], [9707, 11, 1879]),
                loss_fn_inputs={"target_tokens": [872, 198, 9707, 11, 1879, 151645], "weights": [0, 0, 0, 1, 1, 1]},
            ),
            types.Datum(
                model_input=text([1, 2, 3, 4]),
                loss_fn_inputs={
                    "target_tokens": np.array([2, 3, 4, 5], dtype=np.int64),
                    "weights": np.array([0.1, 0.25, 1 / 3, 1.0]),
                },
            ),
            types.Datum(
                model_input=types.ModelInput.from_ints([2**31 - 1, 0, 7]),
                loss_fn_inputs={"target_tokens": [0, 7, 2**40], "weights": [1.5, -2.0, 3.0e-8]},
            ),
        ],
        "cross_entropy",
        None,
        seq_id=1,
    )
    # RL: importance_sampling with sampler logprobs and advantages, float loss config kwargs.
    add(
        "importance_sampling",
        [
            types.Datum(
                model_input=text([10, 11, 12, 13, 14]),
                loss_fn_inputs={
                    "target_tokens": [11, 12, 13, 14, 15],
                    "logprobs": [-0.5, -1.25, -0.001, -7.75, -0.3],
                    "advantages": [0.0, 0.0, 0.7, 0.7, 0.7],
                },
            ),
            types.Datum(
                model_input=text([20, 21]),
                loss_fn_inputs={
                    "target_tokens": [21, 22],
                    "logprobs": np.array([-2.5, -0.125], dtype=np.float32),
                    "advantages": np.array([-1.2, -1.2], dtype=np.float32),
                },
            ),
        ],
        "importance_sampling",
        {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
        seq_id=7,
    )
    # A forward-only pass with a string kwarg (carried only by loss_fn_config_v2) and a 2-D int tensor.
    add(
        "forward_only_v2_text_config",
        [
            types.Datum(
                model_input=text([5, 6, 7]),
                loss_fn_inputs={
                    "target_tokens": types.TensorData.from_numpy(np.array([[6, 7, 8]], dtype=np.int64)),
                    "weights": types.TensorData(data=[1.0, 1.0, 0.5], dtype="float32", shape=[1, 3]),
                },
            )
        ],
        "ppo",
        {"clip_eps": 0.2, "reduction": "token_mean"},
        seq_id=42,
        forward_only=True,
    )
    # A sparse CSR weights/target_tokens tensor, as TensorData.from_torch_sparse makes of a 2-D one.
    add(
        "sparse_csr",
        [
            types.Datum(
                model_input=text([1, 2, 3]),
                loss_fn_inputs={
                    "target_tokens": types.TensorData(
                        data=[9, 8, 7], dtype="int64", shape=[3, 4], sparse_crow_indices=[0, 1, 1, 3], sparse_col_indices=[2, 0, 3]
                    ),
                    "weights": types.TensorData(
                        data=[0.5, 2.0], dtype="float32", shape=[2, 3], sparse_crow_indices=[0, 2, 2], sparse_col_indices=[0, 2]
                    ),
                },
            )
        ],
        "cross_entropy",
        None,
        seq_id=3,
    )
    # An empty batch member: no tokens, no inputs.
    add("empty_datum", [types.Datum(model_input=types.ModelInput.empty(), loss_fn_inputs={})], "cross_entropy", None, seq_id=2)
    return cases


def make_refusal_cases() -> list[dict[str, Any]]:
    ok = types.Datum(model_input=text([1, 2]), loss_fn_inputs={"target_tokens": [2, 3], "weights": [1, 1]})
    image = types.ImageChunk(data=b"\x89PNG\r\n\x1a\nfake", format="png", expected_tokens=4)
    dmel = types.DmelChunk.model_construct(dmel=b"\x00\x01\x02\x03", type="dmel")
    with_image = types.Datum(
        model_input=types.ModelInput(chunks=[types.EncodedTextChunk(tokens=[1]), image]),
        loss_fn_inputs={"target_tokens": [2, 3, 4, 5, 6]},
    )
    with_dmel = types.Datum(model_input=types.ModelInput.model_construct(chunks=[dmel]), loss_fn_inputs={})
    with_spans = ok.with_provenance(
        model_input=[types.PromptProvenanceSpan(sequence_id="s-1", length=2)],
        loss_fn_inputs=[types.SampledProvenanceSpan(sequence_id="s-1", length=2)],
    )
    cases = []
    for name, data, field, words in [
        ("image", [ok, ok, ok, with_image], "data[3].model_input[1]", "image chunks are not served"),
        ("dmel", [ok, with_dmel], "data[1].model_input[0]", "dmel"),
        ("provenance", [ok, with_spans], "data[1].model_input_spans", "provenance spans are not served"),
    ]:
        _, body = fwdbwd(data, "cross_entropy", None, seq_id=1)
        cases.append({"name": name, "bytes": b64(body), "field": field, "words": words})
    return cases


def dumped(request: Any) -> Any:
    return model_dump(request, exclude_unset=False, exclude_none=True, mode="json")


def make_bodies() -> dict[str, list[Any]]:
    """JSON bodies per route, as the SDK's resources (and the few raw posts in lib/) build them."""
    ts = datetime(2026, 12, 3, 9, 0, 0, tzinfo=timezone.utc)
    telemetry = types.TelemetrySendRequest(
        **types.TelemetryBatch(
            platform="Linux",
            sdk_version="0.38.0",
            session_id="sess-1",
            process_uuid="3f1c-uuid",
            events=[
                types.SessionStartEvent(event="SESSION_START", event_id="e1", event_session_index=0, severity="INFO", timestamp=ts),
                GenericEvent(
                    event="GENERIC_EVENT", event_id="e2", event_name="APIFuture.result_async.application_error",
                    event_session_index=1, severity="WARNING", timestamp=ts,
                    event_data={"request_id": "r1", "is_user_error": True, "iteration": 3, "nested": {"a": [1, 2]}},
                ),
                types.UnhandledExceptionEvent(
                    event="UNHANDLED_EXCEPTION", event_id="e3", event_session_index=2, severity="ERROR", timestamp=ts,
                    error_type="ValueError", error_message="boom", traceback="Traceback ...",
                ),
                types.SessionEndEvent(event="SESSION_END", event_id="e4", event_session_index=3, severity="INFO", timestamp=ts, duration="0:01:02.5"),
            ],
        ).model_dump()
    )
    prompt = types.ModelInput(chunks=[types.EncodedTextChunk(tokens=[151644, 872]), types.EncodedTextChunk(tokens=[198])])
    return {
        "client_config": [dumped(types.ClientConfigRequest(sdk_version=tinker.__version__))],
        "client_dynamic_config": [dumped(types.ClientConfigRequest(sdk_version=tinker.__version__))],
        "create_session": [
            dumped(types.CreateSessionRequest(tags=[], user_metadata={}, sdk_version="0.38.0")),
            dumped(
                types.CreateSessionRequest(
                    tags=["a", "b"], user_metadata={"run": "x", "n": 3}, sdk_version="0.38.0", project_id="proj-1", display_name="my run"
                )
            ),
        ],
        "session_heartbeat": [dumped(types.SessionHeartbeatRequest(session_id="sess-1"))],
        "create_model": [
            dumped(
                types.CreateModelRequest(
                    session_id="sess-1", model_seq_id=0, base_model="Qwen/Qwen3-8B",
                    lora_config=types.LoraConfig(rank=32, seed=None, train_mlp=True, train_attn=True, train_unembed=True),
                    user_metadata=None, optimizer_config=types.AdamOptimizerConfig(),
                )
            ),
            dumped(
                types.CreateModelRequest(
                    session_id="sess-1", model_seq_id=1, base_model="meta-llama/Llama-3.2-1B",
                    lora_config=types.LoraConfig(rank=8, seed=1234, train_mlp=False, train_attn=True, train_unembed=False),
                    user_metadata={"who": "me"},
                )
            ),
        ],
        "get_info": [dumped(types.GetInfoRequest(model_id="sess-1:train:0"))],
        "get_server_capabilities": [],
        "optim_step": [
            dumped(types.OptimStepRequest(adam_params=types.AdamParams(), model_id="sess-1:train:0", seq_id=2)),
            dumped(
                types.OptimStepRequest(
                    adam_params=types.AdamParams(learning_rate=4e-5, beta1=0.8, beta2=0.99, eps=1e-8, weight_decay=0.01, grad_clip_norm=1.0),
                    model_id="sess-1:train:0", seq_id=5,
                )
            ),
        ],
        "save_weights": [
            dumped(types.SaveWeightsRequest(model_id="sess-1:train:0", path="step-10", seq_id=3)),
            dumped(types.SaveWeightsRequest(model_id="sess-1:train:0", path="final", seq_id=9, ttl_seconds=3600, user_metadata={"k": "v"})),
        ],
        "save_weights_for_sampler": [
            dumped(types.SaveWeightsForSamplerRequest(model_id="sess-1:train:0", path="sampler-10", seq_id=4)),
            dumped(types.SaveWeightsForSamplerRequest(model_id="sess-1:train:0", seq_id=5, sampling_session_seq_id=0, kind="snapshot")),
            dumped(types.SaveWeightsForSamplerRequest(model_id="sess-1:train:0", seq_id=6, sampling_session_seq_id=1, kind="inflight")),
        ],
        "load_weights": [
            dumped(types.LoadWeightsRequest(model_id="sess-1:train:0", seq_id=6, path="tinker://sess-1:train:0/weights/step-10", optimizer=True)),
            dumped(
                types.LoadWeightsRequest(
                    session_id="sess-1", model_seq_id=1, path="tinker://sess-1:train:0/weights/final", optimizer=False,
                    optimizer_config=types.AdamOptimizerConfig(),
                )
            ),
        ],
        "create_sampling_session": [
            dumped(types.CreateSamplingSessionRequest(session_id="sess-1", sampling_session_seq_id=0, base_model="Qwen/Qwen3-8B")),
            dumped(
                types.CreateSamplingSessionRequest(
                    session_id="sess-1", sampling_session_seq_id=1, model_path="tinker://sess-1:train:0/sampler_weights/sampler-10"
                )
            ),
        ],
        "asample": [
            # As SamplingClient._send_asample_request builds it (sampling_session_id + seq_id, defaults elsewhere).
            dumped(
                types.SampleRequest(
                    sampling_session_id="sess-1:sample:0", seq_id=1_000_000_001, num_samples=4, prompt=prompt,
                    sampling_params=types.SamplingParams(max_tokens=64, temperature=0.7, stop=["\n\n", "</s>"]),
                    prompt_logprobs=False, topk_prompt_logprobs=0, topk_sample_logprobs=0, target_prompt_logprobs=None,
                    prompt_alt_tokens_k=0, prompt_logprobs_last_n=None, record_stability_info=False,
                )
            ),
            dumped(
                types.SampleRequest(
                    sampling_session_id="sess-1:sample:1", seq_id=3, num_samples=1, prompt=types.ModelInput.from_ints([1, 2, 3]),
                    sampling_params=types.SamplingParams(max_tokens=1, seed=12345, stop=[151645, 151643], top_k=50, top_p=0.95),
                    prompt_logprobs=True, topk_prompt_logprobs=0, record_stability_info=False,
                )
            ),
            dumped(
                types.SampleRequest(
                    sampling_session_id="sess-1:sample:1", seq_id=4, num_samples=1, prompt=types.ModelInput.from_ints([1]),
                    sampling_params=types.SamplingParams(stop="###"), prompt_logprobs=False,
                )
            ),
            dumped(
                types.SampleRequest(
                    base_model="Qwen/Qwen3-8B", num_samples=2, prompt=types.ModelInput.from_ints([4, 5]),
                    sampling_params=types.SamplingParams(max_tokens=8),
                )
            ),
        ],
        "retrieve_future": [
            dumped(types.FutureRetrieveRequest(request_id="req-1", allow_metadata_only=True)),
            dumped(types.FutureRetrieveRequest(request_id="req-2", allow_metadata_only=False)),
        ],
        "telemetry": [dumped(telemetry)],
        # Raw posts in lib/ (internal_client_holder._send_cancel_request, service_client._finish_session_async,
        # rest_client.get_weights_info_by_tinker_path) send these dicts as they are.
        "cancel_future": [{"request_id": "req-9"}],
        "session_finish": [
            {"reason": {"type": "success"}, "detail": None},
            {"reason": {"type": "errored"}, "detail": "ValueError: boom"},
            {"reason": {"type": "interrupted"}, "detail": None},
        ],
        "weights_info": [{"tinker_path": "tinker://sess-1:train:0/weights/final"}],
    }


def descriptor_shape() -> dict[str, Any]:
    """Every message's fields (number, type, label, proto3 optional, real oneof, map key/value), every enum's
    values: what the .proto transcription must reproduce, independent of how dump_proto prints it."""
    from google.protobuf import descriptor as d
    from tinker.proto import tinker_public_pb2 as pb

    def ftype(f: d.FieldDescriptor) -> str:
        if f.message_type is not None:
            return f.message_type.full_name
        if f.enum_type is not None:
            return f.enum_type.full_name
        names = {v: k for k, v in vars(d.FieldDescriptor).items() if k.startswith("TYPE_")}
        return names[f.type][5:].lower()

    messages: dict[str, Any] = {}
    for m in pb.DESCRIPTOR.message_types_by_name.values():
        fields: dict[str, Any] = {}
        for f in m.fields:
            entry = f.message_type if f.message_type is not None and f.message_type.GetOptions().map_entry else None
            oneof = f.containing_oneof
            fields[f.name] = {
                "id": f.number,
                "type": ftype(entry.fields_by_name["value"]) if entry else ftype(f),
                "repeated": bool(f.is_repeated and entry is None),
                "map_key": ftype(entry.fields_by_name["key"]) if entry else None,
                "optional": bool(oneof is not None and oneof.name == "_" + f.name and len(oneof.fields) == 1),
                "oneof": oneof.name if oneof is not None and not (oneof.name == "_" + f.name and len(oneof.fields) == 1) else None,
            }
        messages[m.full_name] = fields
    enums = {e.full_name: {v.name: v.number for v in e.values} for e in pb.DESCRIPTOR.enum_types_by_name.values()}
    return {"messages": messages, "enums": enums}


def cmd_make() -> dict[str, Any]:
    return {
        "sdk_version": tinker.__version__,
        "fwdbwd_cases": make_fwdbwd_cases(),
        "refusal_cases": make_refusal_cases(),
        "bodies": make_bodies(),
        "descriptor": descriptor_shape(),
        "proto_text": dump_proto.render(),
        "error_categories": [c.value for c in types.RequestErrorCategory],
    }


# ---------------------------------------------------------------------------------------------------------------


def tensor_json(td: types.TensorData) -> dict[str, Any]:
    return {"dtype": td.dtype, "shape": td.shape, "values": [num(v) for v in np.asarray(td.data).tolist()]}


def read_sample_response(data: bytes) -> dict[str, Any]:
    r = response_conv.deserialize_sample_response(data)
    return {
        "sequences": [
            {
                "tokens": [int(t) for t in s.tokens],
                "logprobs": None if s.logprobs is None else [num(v) for v in s.logprobs],
                "stop_reason": s.stop_reason,
            }
            for s in r.sequences
        ],
        "prompt_logprobs": None if r.prompt_logprobs is None else [None if v is None else num(v) for v in r.prompt_logprobs],
        "topk_prompt_logprobs": r.topk_prompt_logprobs,
        "prompt_cache_hit_tokens": r.prompt_cache_hit_tokens,
    }


def read_fwdbwd_output(data: bytes) -> dict[str, Any]:
    r = response_conv.deserialize_forward_backward_output(data)
    return {
        "loss_fn_output_type": r.loss_fn_output_type,
        "loss_fn_outputs": [{k: tensor_json(v) for k, v in o.items()} for o in r.loss_fn_outputs],
        "metrics": {k: num(v) for k, v in r.metrics.items()},
    }


def attempt(fn: Any, *args: Any) -> dict[str, Any]:
    try:
        return {"ok": fn(*args)}
    except Exception as e:  # the test asserts on which ones fail, and why
        return {"error": f"{type(e).__name__}: {e}"}


JSON_MODELS = {
    "CreateSessionResponse": types.CreateSessionResponse,
    "SessionHeartbeatResponse": types.SessionHeartbeatResponse,
    "ClientConfigResponse": types.ClientConfigResponse,
    "ClientDynamicConfigResponse": types.ClientDynamicConfigResponse,
    "GetServerCapabilitiesResponse": types.GetServerCapabilitiesResponse,
    "GetInfoResponse": types.GetInfoResponse,
    "CreateSamplingSessionResponse": types.CreateSamplingSessionResponse,
    "GetSamplerResponse": types.GetSamplerResponse,
    "UntypedAPIFuture": types.UntypedAPIFuture,
    "TelemetryResponse": types.TelemetryResponse,
    "WeightsInfoResponse": types.WeightsInfoResponse,
    "CreateModelResponse": types.CreateModelResponse,
    "OptimStepResponse": types.OptimStepResponse,
    "SaveWeightsResponse": types.SaveWeightsResponse,
    "SaveWeightsForSamplerResponseInternal": types.SaveWeightsForSamplerResponseInternal,
    "LoadWeightsResponse": types.LoadWeightsResponse,
    "TryAgainResponse": TryAgainResponse,
    "RequestFailedResponse": types.RequestFailedResponse,
}


def read_json(kind: str, value: Any) -> Any:
    model = JSON_MODELS[kind]
    # A direct answer goes through the client's strict validation; a future's result through
    # deserialize_json_response (api_future_impl); both end in the same pydantic model.
    validated = validate_type(type_=model, value=value)
    again = deserialize_json_response(value, model)
    assert validated == again
    return validated.model_dump(mode="json")


def read_status_error(status: int, body: Any) -> dict[str, Any]:
    client = AsyncTinker(api_key="tml-test", base_url="http://rollbook.test/api/tinker")
    request = httpx.Request("POST", "http://rollbook.test/api/tinker/api/v1/asample")
    response = httpx.Response(status, json=body, request=request)
    err = client._make_status_error_from_response(response)
    return {"class": type(err).__name__, "str": str(err), "body": err.body}


def cmd_read(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "sample_responses": [attempt(read_sample_response, base64.b64decode(b)) for b in spec.get("sample_responses", [])],
        "fwdbwd_outputs": [attempt(read_fwdbwd_output, base64.b64decode(b)) for b in spec.get("fwdbwd_outputs", [])],
        "json": [attempt(read_json, item["kind"], item["value"]) for item in spec.get("json", [])],
        "status_errors": [attempt(read_status_error, item["status"], item["body"]) for item in spec.get("status_errors", [])],
    }


if __name__ == "__main__":
    if sys.argv[1:] == ["make"]:
        out = cmd_make()
    elif sys.argv[1:] == ["read"]:
        out = cmd_read(json.load(sys.stdin))
    else:
        raise SystemExit("usage: sdk_probe.py make | read < spec.json")
    json.dump(out, sys.stdout)
