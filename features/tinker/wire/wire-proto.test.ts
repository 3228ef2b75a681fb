/**
 * The protobuf wire against the real Tinker SDK (0.38.0, in the venv scripts/tinker-venv.sh builds):
 *  - tinker_public.proto is what dump_proto.py transcribes from the SDK's descriptor, the JSON descriptor is
 *    what gen-descriptor.ts makes of it, and protobufjs's reading of it has the SDK's fields, numbers and types;
 *  - ForwardBackwardRequest bodies the SDK serializes (request_conv) decode to the numbers it was given;
 *  - SampleResponse / ForwardBackwardOutput bytes encoded here read back through the SDK's response_conv;
 *  - image / dmel chunks and provenance spans are refused naming the field; hostile bytes (truncated,
 *    flipped, mis-sized tensors, oversized shapes) end in a TinkerWireError naming the field, never a crash.
 */
import fs from "node:fs";
import path from "node:path";
import protobuf from "protobufjs/light";
import { beforeAll, describe, expect, test } from "vitest";
import { descriptorJsonFromProto } from "./gen-descriptor";
import { SDK_SETUP_TIMEOUT_MS, fromJsonNumber, probeMake, probeRead, type ProbeMake, type ProbeRead } from "./sdk-probe.testkit";
import {
  DType,
  TinkerWireError,
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  tinkerPublic,
  type ForwardBackwardOutputInput,
  type SampleResponseInput,
} from "./wire-proto";

const HERE = import.meta.dirname;
let made: ProbeMake;

beforeAll(async () => {
  made = await probeMake();
}, SDK_SETUP_TIMEOUT_MS);

const bytesOf = (b64: string) => new Uint8Array(Buffer.from(b64, "base64"));

function wireError(fn: () => unknown): TinkerWireError {
  try {
    fn();
  } catch (e) {
    if (e instanceof TinkerWireError) return e;
    throw new Error(`expected a TinkerWireError, got ${String(e)}`);
  }
  throw new Error("expected a TinkerWireError, got none");
}

describe("the .proto transcription", () => {
  test("tinker_public.proto is what dump_proto.py prints from the SDK's descriptor", () => {
    expect(made.sdk_version).toBe("0.38.0");
    expect(fs.readFileSync(path.join(HERE, "tinker_public.proto"), "utf8")).toBe(made.proto_text);
  });

  test("tinker_public.descriptor.json is what gen-descriptor.ts makes of the .proto", () => {
    const proto = fs.readFileSync(path.join(HERE, "tinker_public.proto"), "utf8");
    expect(fs.readFileSync(path.join(HERE, "tinker_public.descriptor.json"), "utf8")).toBe(descriptorJsonFromProto(proto));
  });

  test("protobufjs reads every message's fields as the SDK's descriptor has them", () => {
    const ns = tinkerPublic.SampleResponse.parent as protobuf.Namespace;
    ns.resolveAll();
    const messages: Record<string, Record<string, unknown>> = {};
    const enums: Record<string, Record<string, number>> = {};
    const typeName = (f: protobuf.Field) => (f.resolvedType ? f.resolvedType.fullName.replace(/^\./, "") : f.type);
    for (const obj of ns.nestedArray) {
      if (obj instanceof protobuf.Type) {
        const fields: Record<string, unknown> = {};
        for (const f of obj.fieldsArray) {
          const synthetic = f.partOf !== null && f.partOf.name === `_${f.name}` && f.partOf.oneof.length === 1;
          fields[f.name] = {
            id: f.id,
            type: typeName(f),
            repeated: f.repeated,
            map_key: f instanceof protobuf.MapField ? f.keyType : null,
            optional: synthetic,
            oneof: f.partOf !== null && !synthetic ? f.partOf.name : null,
          };
        }
        messages[obj.fullName.replace(/^\./, "")] = fields;
      } else if (obj instanceof protobuf.Enum) {
        enums[obj.fullName.replace(/^\./, "")] = { ...obj.values };
      }
    }
    expect(messages).toEqual(made.descriptor.messages);
    expect(enums).toEqual(made.descriptor.enums);
  });
});

describe("decodeForwardBackwardRequest on the SDK's own bodies", () => {
  test("every case decodes to the numbers the SDK was given", () => {
    expect(made.fwdbwd_cases.map((c) => c.name)).toEqual([
      "cross_entropy",
      "importance_sampling",
      "forward_only_v2_text_config",
      "sparse_csr",
      "empty_datum",
    ]);
    for (const c of made.fwdbwd_cases) {
      expect(decodeForwardBackwardRequest(bytesOf(c.bytes)), c.name).toEqual(c.expected);
    }
  });

  test("image and dmel chunks and provenance spans are refused, naming the field", () => {
    expect(made.refusal_cases).toHaveLength(3);
    for (const c of made.refusal_cases) {
      const err = wireError(() => decodeForwardBackwardRequest(bytesOf(c.bytes)));
      expect(err.field, c.name).toBe(c.field);
      expect(err.message, c.name).toContain(c.words);
      expect(err.message.startsWith(`${c.field}: `), c.name).toBe(true);
    }
    const image = made.refusal_cases.find((c) => c.name === "image")!;
    expect(wireError(() => decodeForwardBackwardRequest(bytesOf(image.bytes))).message).toBe(
      "data[3].model_input[1]: image chunks are not served",
    );
  });
});

// Bodies built here, for what the SDK would never send.
const encodeRequest = (msg: Record<string, unknown>) => tinkerPublic.ForwardBackwardRequest.encode(msg).finish();
const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
const i64 = (values: number[]) => new Uint8Array(new BigInt64Array(values.map(BigInt)).buffer);
const i32 = (values: number[]) => new Uint8Array(new Int32Array(values).buffer);
const oneDatum = (loss_fn_inputs: Record<string, unknown>, model_input: unknown[] = [{ encoded_text: { tokens: i32([1, 2]) } }]) =>
  encodeRequest({ model_id: "m", seq_id: 1, loss_fn: "cross_entropy", data: [{ model_input, loss_fn_inputs }] });

describe("decodeForwardBackwardRequest on hostile bytes", () => {
  test("truncated at every length, or with bytes flipped: a result or a TinkerWireError, nothing else", () => {
    const body = bytesOf(made.fwdbwd_cases[1]!.bytes);
    for (let n = 0; n < body.length; n++) {
      try {
        decodeForwardBackwardRequest(body.subarray(0, n));
      } catch (e) {
        expect(e).toBeInstanceOf(TinkerWireError);
      }
    }
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let k = 0; k < 1500; k++) {
      const copy = body.slice();
      for (let j = 0; j < 3; j++) copy[Math.floor(rand() * copy.length)] = Math.floor(rand() * 256);
      try {
        decodeForwardBackwardRequest(copy);
      } catch (e) {
        expect(e).toBeInstanceOf(TinkerWireError);
      }
    }
  });

  test("a body cut inside a field, or not protobuf at all, names the body", () => {
    const body = bytesOf(made.fwdbwd_cases[0]!.bytes);
    const cut = wireError(() => decodeForwardBackwardRequest(body.subarray(0, body.length - 3)));
    expect(cut.field).toBe("body");
    expect(cut.message).toMatch(/^body: not a ForwardBackwardRequest protobuf/);
    expect(wireError(() => decodeForwardBackwardRequest(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))).field).toBe("body");
  });

  test("a tensor whose bytes are not a multiple of its dtype", () => {
    const err = wireError(() => decodeForwardBackwardRequest(oneDatum({ weights: { dtype: DType.FLOAT32, dense: new Uint8Array(7) } })));
    expect(err.field).toBe("data[0].loss_fn_inputs.weights.dense");
    expect(err.message).toContain("7 bytes of float32 (not a multiple of 4)");
    const tokens = wireError(() => decodeForwardBackwardRequest(oneDatum({}, [{ encoded_text: { tokens: new Uint8Array(6) } }])));
    expect(tokens.field).toBe("data[0].model_input[0].encoded_text.tokens");
  });

  test("a shape whose product is not the number of values", () => {
    const err = wireError(() =>
      decodeForwardBackwardRequest(oneDatum({ target_tokens: { dtype: DType.INT64, shape: [2, 3], dense: i64([1, 2, 3, 4, 5]) } })),
    );
    expect(err.field).toBe("data[0].loss_fn_inputs.target_tokens.shape");
    expect(err.message).toContain("shape [2, 3] holds 6 values, the tensor has 5");
    const neg = wireError(() => decodeForwardBackwardRequest(oneDatum({ w: { dtype: DType.FLOAT32, shape: [-1], dense: f32([1]) } })));
    expect(neg.field).toBe("data[0].loss_fn_inputs.w.shape[0]");
  });

  test("over 1e7 values: refused from the shape, before anything is allocated", () => {
    // A sparse tensor of 1e10 cells in a body of a few dozen bytes.
    const huge = oneDatum({
      weights: { dtype: DType.FLOAT32, shape: [100_000, 100_000], sparse_csr: { values: f32([1]), crow_indices: i64([0, 1]), col_indices: i64([0]) } },
    });
    expect(huge.length).toBeLessThan(100);
    const err = wireError(() => decodeForwardBackwardRequest(huge));
    expect(err.field).toBe("data[0].loss_fn_inputs.weights.shape");
    expect(err.message).toContain("over 10000000 values");
    // A shape whose product overflows a double is refused just the same.
    const overflow = oneDatum({ w: { dtype: DType.FLOAT32, shape: [2 ** 40, 2 ** 40, 2 ** 40], dense: f32([]) } });
    expect(wireError(() => decodeForwardBackwardRequest(overflow)).field).toBe("data[0].loss_fn_inputs.w.shape");
    // Dense values and the request's total, at lowered limits.
    const four = oneDatum({ a: { dtype: DType.FLOAT32, dense: f32([1, 2, 3, 4]) }, b: { dtype: DType.FLOAT32, dense: f32([1, 2, 3, 4]) } });
    expect(wireError(() => decodeForwardBackwardRequest(four, { maxTensorValues: 3, maxTotalValues: 100 })).message).toContain("4 values, over 3");
    expect(wireError(() => decodeForwardBackwardRequest(four, { maxTensorValues: 10, maxTotalValues: 8 })).message).toContain(
      "more than 8 values in all",
    );
    expect(decodeForwardBackwardRequest(four, { maxTensorValues: 10, maxTotalValues: 10 }).data[0]!.loss_fn_inputs.a!.values).toEqual([1, 2, 3, 4]);
  });

  test("a sparse CSR tensor that breaks the CSR invariants", () => {
    const sparse = (crow: number[], col: number[], values: number[], shape = [2, 3]) =>
      oneDatum({ w: { dtype: DType.FLOAT32, shape, sparse_csr: { values: f32(values), crow_indices: i64(crow), col_indices: i64(col) } } });
    const cases: [Uint8Array, string, string][] = [
      [sparse([0, 1], [0], [1]), "data[0].loss_fn_inputs.w.sparse_csr.crow_indices", "2 row pointers for 2 rows"],
      [sparse([0, 1, 2], [0], [1, 2]), "data[0].loss_fn_inputs.w.sparse_csr.col_indices", "1 column indices for 2 values"],
      [sparse([1, 1, 2], [0, 1], [1, 2]), "data[0].loss_fn_inputs.w.sparse_csr.crow_indices", "first row pointer is not 0"],
      [sparse([0, 2, 1], [0, 1], [1, 2]), "data[0].loss_fn_inputs.w.sparse_csr.crow_indices", "the last row pointer is 1"],
      [sparse([0, 1, 2], [0, 3], [1, 2]), "data[0].loss_fn_inputs.w.sparse_csr.col_indices[1]", "column 3 outside [0, 3)"],
      [sparse([0, 2, 2], [1, 1], [1, 2]), "data[0].loss_fn_inputs.w.sparse_csr.col_indices[1]", "not strictly increasing"],
      [sparse([0, 1], [0], [1], [3]), "data[0].loss_fn_inputs.w.sparse_csr", "needs a 2-D shape"],
    ];
    for (const [body, field, words] of cases) {
      const err = wireError(() => decodeForwardBackwardRequest(body));
      expect(err.field, words).toBe(field);
      expect(err.message, field).toContain(words);
    }
    expect(decodeForwardBackwardRequest(sparse([0, 1, 2], [2, 0], [5, 6])).data[0]!.loss_fn_inputs.w).toEqual({
      dtype: "float32",
      shape: [2, 3],
      values: [0, 0, 5, 6, 0, 0],
    });
  });

  test("dtypes, 64-bit integers, empty chunks and the legacy loss config", () => {
    expect(wireError(() => decodeForwardBackwardRequest(oneDatum({ w: { dense: f32([1]) } }))).field).toBe("data[0].loss_fn_inputs.w.dtype");
    expect(wireError(() => decodeForwardBackwardRequest(oneDatum({ w: { dtype: 9, dense: f32([1]) } }))).message).toContain("dtype 9");
    const big = wireError(() => decodeForwardBackwardRequest(oneDatum({ t: { dtype: DType.INT64, dense: i64([2 ** 53 + 2]) } })));
    expect(big.field).toBe("data[0].loss_fn_inputs.t.dense");
    expect(big.message).toContain("does not fit a 53-bit integer");
    expect(wireError(() => decodeForwardBackwardRequest(oneDatum({}, [{}]))).field).toBe("data[0].model_input[0]");
    // int32 and bfloat16 tensors read as the SDK's response_conv reads them.
    const bf16 = new Uint8Array(new Uint16Array([0x3fc0, 0xc000]).buffer); // 1.5, -2
    const widened = decodeForwardBackwardRequest(
      oneDatum({ a: { dtype: DType.INT32, dense: i32([-3, 7]) }, b: { dtype: DType.BFLOAT16, dense: bf16 } }),
    ).data[0]!.loss_fn_inputs;
    expect(widened).toEqual({ a: { dtype: "int64", shape: null, values: [-3, 7] }, b: { dtype: "float32", shape: null, values: [1.5, -2] } });
    // An older client's float-only map is read when loss_fn_config_v2 is empty.
    const legacy = encodeRequest({ model_id: "m", seq_id: 2, loss_fn: "ppo", loss_fn_config: { clip: 0.25 }, data: [] });
    expect(decodeForwardBackwardRequest(legacy)).toEqual({
      model_id: "m",
      seq_id: 2,
      forward_only: false,
      loss_fn: "ppo",
      loss_fn_config: { clip: 0.25 },
      data: [],
    });
    const blank = encodeRequest({ model_id: "m", seq_id: 2, loss_fn: "ppo", loss_fn_config_v2: { k: {} }, data: [] });
    expect(wireError(() => decodeForwardBackwardRequest(blank)).field).toBe("loss_fn_config_v2.k");
  });
});

describe("encoders, read back by the SDK's response_conv", () => {
  const samples: SampleResponseInput[] = [
    {
      sequences: [
        { tokens: [151644, 872, 0, 2147483647], logprobs: [-0.1, -2.5, -0.003, -11.25], stop_reason: "stop" },
        { tokens: [5], logprobs: [-0.7], stop_reason: "length" },
        { tokens: [], logprobs: [], stop_reason: "length" },
      ],
      prompt_logprobs: [null, -1.5, -0.25, -3.1],
      prompt_cache_hit_tokens: 12,
    },
    { sequences: [{ tokens: [9, 8, 7], stop_reason: "stop" }], prompt_logprobs: null, topk_prompt_logprobs: null },
    { sequences: [] },
  ];
  const outputs: ForwardBackwardOutputInput[] = [
    {
      // cross_entropy over three datums of different lengths: one ArrayRecord.
      loss_fn_output_type: "ArrayRecord",
      loss_fn_outputs: [
        { logprobs: { dtype: "float32", values: [-0.5, -1.25, -0.1] }, elementwise_loss: { dtype: "float32", values: [0, 1.25, 0.1] } },
        { logprobs: { dtype: "float32", values: [-2] }, elementwise_loss: { dtype: "float32", values: [2] } },
        { logprobs: { dtype: "float32", values: [] }, elementwise_loss: { dtype: "float32", values: [] } },
      ],
      metrics: { "loss:sum": 4.6, "num_tokens:sum": 4, "clip_fraction:mean": 0 },
    },
    {
      // A ragged trailing dimension and an int64 field: split into runs of agreeing datums.
      loss_fn_output_type: "tinker.losses:TopK",
      loss_fn_outputs: [
        { ids: { dtype: "int64", shape: [2, 2], values: [1, 2, 3, 2 ** 40] }, p: { dtype: "float32", shape: [2], values: [0.5, 0.25] } },
        { ids: { dtype: "int64", shape: [1, 2], values: [4, 5] }, p: { dtype: "float32", shape: [1], values: [1] } },
        { ids: { dtype: "int64", shape: [1, 3], values: [6, 7, 8] }, p: { dtype: "float32", shape: [1], values: [0.125] } },
      ],
      metrics: {},
    },
    { loss_fn_output_type: "ArrayRecord", loss_fn_outputs: [], metrics: { loss: 0 } },
    { loss_fn_output_type: "ArrayRecord", loss_fn_outputs: [{}, {}], metrics: {} },
  ];
  let read: ProbeRead;
  beforeAll(async () => {
    read = await probeRead({ sample_responses: samples.map(encodeSampleResponse), fwdbwd_outputs: outputs.map(encodeForwardBackwardOutput) });
  }, SDK_SETUP_TIMEOUT_MS);

  const round = (v: readonly number[]) => v.map((x) => Math.fround(x));

  test("SampleResponse: sequences, logprobs, stop reasons, prompt logprobs", () => {
    const [a, b, c] = read.sample_responses;
    expect(a!.error).toBeUndefined();
    expect(a!.ok!.sequences).toEqual([
      { tokens: [151644, 872, 0, 2147483647], logprobs: round([-0.1, -2.5, -0.003, -11.25]), stop_reason: "stop" },
      { tokens: [5], logprobs: round([-0.7]), stop_reason: "length" },
      // Empty logprobs bytes read as None, as the SDK reads a sequence sent without any.
      { tokens: [], logprobs: null, stop_reason: "length" },
    ]);
    expect(a!.ok!.prompt_logprobs!.map(fromJsonNumber)).toEqual([null, ...round([-1.5, -0.25, -3.1])]);
    expect(a!.ok!.prompt_cache_hit_tokens).toBe(12);
    expect(b!.ok).toEqual({
      sequences: [{ tokens: [9, 8, 7], logprobs: null, stop_reason: "stop" }],
      prompt_logprobs: null,
      topk_prompt_logprobs: null,
      prompt_cache_hit_tokens: 0,
    });
    expect(c!.ok!.sequences).toEqual([]);
  });

  test("ForwardBackwardOutput: tensors per datum, shapes, dtypes, metrics", () => {
    const [ce, ragged, empty, fieldless] = read.fwdbwd_outputs;
    expect(ce!.error).toBeUndefined();
    expect(ce!.ok).toEqual({
      loss_fn_output_type: "ArrayRecord",
      loss_fn_outputs: [
        { logprobs: { dtype: "float32", shape: [3], values: round([-0.5, -1.25, -0.1]) }, elementwise_loss: { dtype: "float32", shape: [3], values: round([0, 1.25, 0.1]) } },
        { logprobs: { dtype: "float32", shape: [1], values: [-2] }, elementwise_loss: { dtype: "float32", shape: [1], values: [2] } },
        { logprobs: { dtype: "float32", shape: [0], values: [] }, elementwise_loss: { dtype: "float32", shape: [0], values: [] } },
      ],
      metrics: { "loss:sum": 4.6, "num_tokens:sum": 4, "clip_fraction:mean": 0 },
    });
    expect(ragged!.error).toBeUndefined();
    expect(ragged!.ok).toEqual({
      loss_fn_output_type: "TopK",
      loss_fn_outputs: [
        { ids: { dtype: "int64", shape: [2, 2], values: [1, 2, 3, 2 ** 40] }, p: { dtype: "float32", shape: [2], values: [0.5, 0.25] } },
        { ids: { dtype: "int64", shape: [1, 2], values: [4, 5] }, p: { dtype: "float32", shape: [1], values: [1] } },
        { ids: { dtype: "int64", shape: [1, 3], values: [6, 7, 8] }, p: { dtype: "float32", shape: [1], values: [0.125] } },
      ],
      metrics: {},
    });
    expect(empty!.ok).toEqual({ loss_fn_output_type: "ArrayRecord", loss_fn_outputs: [], metrics: { loss: 0 } });
    expect(fieldless!.ok).toEqual({ loss_fn_output_type: "ArrayRecord", loss_fn_outputs: [{}, {}], metrics: {} });
  });

  test("the ragged output travels as two ArrayRecords (datums 0-1, then 2), one for the even one", () => {
    const records = (b: Uint8Array) => (tinkerPublic.ForwardBackwardOutput.toObject(tinkerPublic.ForwardBackwardOutput.decode(b), { longs: Number }) as {
      loss_fn_outputs: { num_datums: number }[];
    }).loss_fn_outputs.map((r) => r.num_datums);
    expect(records(encodeForwardBackwardOutput(outputs[1]!))).toEqual([2, 1]);
    expect(records(encodeForwardBackwardOutput(outputs[0]!))).toEqual([3]);
  });

  test("what the encoders refuse, naming the field", () => {
    const cases: [() => unknown, string][] = [
      [() => encodeSampleResponse({ sequences: [{ tokens: [1], stop_reason: "eos" as "stop" }] }), "sequences[0].stop_reason"],
      [() => encodeSampleResponse({ sequences: [{ tokens: [1, 2], logprobs: [0], stop_reason: "stop" }] }), "sequences[0].logprobs"],
      [() => encodeSampleResponse({ sequences: [{ tokens: [1, 2 ** 31], stop_reason: "stop" }] }), "sequences[0].tokens[1]"],
      [() => encodeSampleResponse({ sequences: [], topk_prompt_logprobs: [] as unknown as null }), "topk_prompt_logprobs"],
      [
        () => encodeForwardBackwardOutput({ loss_fn_output_type: "A", loss_fn_outputs: [{ a: { dtype: "float32", values: [1] } }, {}], metrics: {} }),
        "loss_fn_outputs[1]",
      ],
      [
        () => encodeForwardBackwardOutput({ loss_fn_output_type: "A", loss_fn_outputs: [{ a: { dtype: "float32", shape: [2], values: [1] } }], metrics: {} }),
        "loss_fn_outputs[0].a.shape",
      ],
      [
        () => encodeForwardBackwardOutput({ loss_fn_output_type: "A", loss_fn_outputs: [{ a: { dtype: "int64", values: [0.5] } }], metrics: {} }),
        "loss_fn_outputs[0].a.values[0]",
      ],
    ];
    for (const [fn, field] of cases) expect(wireError(fn).field).toBe(field);
  });
});
