/**
 * The two protobuf bodies of the Tinker wire (tinker SDK 0.38.0): the ForwardBackwardRequest the SDK POSTs to
 * /api/v1/forward_backward (Content-Type: application/x-protobuf; tinker/proto/request_conv.py writes it),
 * and the two future results the SDK only accepts as protobuf when it polls /api/v1/retrieve_future with
 * `Accept: application/x-protobuf`: SampleResponse and ForwardBackwardOutput (tinker/proto/response_conv.py
 * reads them; a JSON answer for either is an error in this SDK version).
 *
 * The messages come from tinker_public.descriptor.json (generated from tinker_public.proto, itself transcribed
 * from the SDK's descriptor), loaded with protobufjs's Root.fromJSON: no .proto is read at run time.
 *
 * Tensors travel as raw little-endian bytes (numpy's `tobytes()` on the SDK side), read here with a DataView
 * (alignment-free, endian-explicit). Every size is checked before anything is allocated: a body of a few bytes
 * cannot make the server build a huge array (a sparse tensor's dense size is capped before it is expanded).
 */
import protobuf from "protobufjs/light";
import descriptor from "./tinker_public.descriptor.json";

/** A malformed or refused wire body. `field` is the path inside the message (`data[3].model_input[1]`), or
 *  `body` for the message as a whole; `message` starts with it, so a log line or an HTTP error names it. */
export class TinkerWireError extends Error {
  readonly field: string;
  /** The message without the field prefix. */
  readonly detail: string;
  constructor(message: string, field: string) {
    super(field ? `${field}: ${message}` : message);
    this.name = "TinkerWireError";
    this.field = field;
    this.detail = message;
  }
}

export type TensorDtype = "float32" | "int64";

/** A loss_fn_inputs tensor, dense. `shape` is null when the SDK sent none (a 1-D tensor of `values.length`; a
 *  0-d shape, [], travels the same way and reads as null too). */
export interface DecodedTensor {
  dtype: TensorDtype;
  shape: number[] | null;
  values: number[];
}

export interface DecodedDatum {
  /** The datum's model input: its text chunks' tokens, joined in order. */
  tokens: number[];
  loss_fn_inputs: Record<string, DecodedTensor>;
}

export interface DecodedForwardBackwardRequest {
  model_id: string;
  seq_id: number;
  forward_only: boolean;
  loss_fn: string;
  /** loss_fn_config_v2 when the SDK set it (0.38.0 always mirrors floats there and puts strings only there),
   *  else the legacy float-only loss_fn_config. Empty when the SDK sent no config. */
  loss_fn_config: Record<string, number | string>;
  data: DecodedDatum[];
}

export interface DecodeLimits {
  /** Most values one tensor may hold (dense size, after a sparse tensor is expanded). */
  maxTensorValues: number;
  /** Most values (tokens and tensor values) one request may decode to in all. */
  maxTotalValues: number;
}

export const DEFAULT_DECODE_LIMITS: DecodeLimits = { maxTensorValues: 10_000_000, maxTotalValues: 20_000_000 };

// ---------------------------------------------------------------------------------------------------------------
// The messages

const root = protobuf.Root.fromJSON(descriptor as unknown as protobuf.INamespace);
const lookup = (name: string): protobuf.Type => root.lookupType(`tinker_public.${name}`);

/** The protobufjs message types (for tests and for callers that need a message this module does not wrap). */
export const tinkerPublic = {
  ForwardBackwardRequest: lookup("ForwardBackwardRequest"),
  ForwardBackwardOutput: lookup("ForwardBackwardOutput"),
  SampleResponse: lookup("SampleResponse"),
  Tensor: lookup("Tensor"),
  Datum: lookup("Datum"),
  Chunk: lookup("Chunk"),
} as const;

/** proto DType values (tinker_public.DType). */
export const DType = { UNSPECIFIED: 0, FLOAT32: 1, INT64: 2, INT32: 3, BFLOAT16: 4 } as const;
/** proto StopReason values (tinker_public.StopReason). */
export const StopReasonEnum = { stop: 0, length: 1 } as const;

// toObject options: only the fields present on the wire (defaults: false), 64-bit integers as decimal strings
// (exact; converted with a range check below), bytes as the Uint8Array views protobufjs decoded (no copy),
// oneofs named by a virtual property (`encoding: "dense"`).
const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: Number, defaults: false, arrays: true, objects: true, oneofs: true };

// ---------------------------------------------------------------------------------------------------------------
// Decoding ForwardBackwardRequest

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !(v instanceof Uint8Array);
const asBytes = (v: unknown): Uint8Array => (v instanceof Uint8Array ? v : new Uint8Array(0));
const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const asEntries = (v: unknown): [string, unknown][] => (isObj(v) ? Object.entries(v) : []);

function int64(v: unknown, field: string): number {
  let big: bigint;
  if (typeof v === "number") big = BigInt(Math.trunc(v));
  else if (typeof v === "string" && /^-?\d+$/.test(v)) big = BigInt(v);
  else throw new TinkerWireError(`not an integer (${String(v)})`, field);
  if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new TinkerWireError(`${big} does not fit a 53-bit integer`, field);
  }
  return Number(big);
}

/** Decode a ForwardBackwardRequest body (already un-zstd'ed, if the client compressed it). Throws
 *  TinkerWireError naming the field for a truncated or malformed body, a tensor whose bytes do not match
 *  its dtype or shape, a tensor over the size limits, and the inputs this server does not serve (image and
 *  dmel chunks, provenance spans). */
export function decodeForwardBackwardRequest(
  bytes: Uint8Array,
  limits: DecodeLimits = DEFAULT_DECODE_LIMITS,
): DecodedForwardBackwardRequest {
  if (!(bytes instanceof Uint8Array)) throw new TinkerWireError("expected the request's bytes", "body");
  let msg: Obj;
  try {
    const decoded = tinkerPublic.ForwardBackwardRequest.decode(bytes);
    msg = tinkerPublic.ForwardBackwardRequest.toObject(decoded, TO_OBJECT) as Obj;
  } catch (e) {
    throw new TinkerWireError(`not a ForwardBackwardRequest protobuf (${e instanceof Error ? e.message : String(e)})`, "body");
  }
  const budget = { left: limits.maxTotalValues };
  const data = asArray(msg.data).map((d, i) => decodeDatum(isObj(d) ? d : {}, `data[${i}]`, limits, budget));
  return {
    model_id: typeof msg.model_id === "string" ? msg.model_id : "",
    seq_id: typeof msg.seq_id === "number" ? msg.seq_id : 0,
    forward_only: msg.forward_only === true,
    loss_fn: typeof msg.loss_fn === "string" ? msg.loss_fn : "",
    loss_fn_config: decodeLossFnConfig(msg),
    data,
  };
}

function decodeLossFnConfig(msg: Obj): Record<string, number | string> {
  const v2 = asEntries(msg.loss_fn_config_v2);
  if (v2.length > 0) {
    return Object.fromEntries(
      v2.map(([key, value]): [string, number | string] => {
        const v = isObj(value) ? value : {};
        if (v.value === "number" && typeof v.number === "number") return [key, v.number];
        if (v.value === "text" && typeof v.text === "string") return [key, v.text];
        throw new TinkerWireError("a loss config value with neither a number nor a text", `loss_fn_config_v2.${key}`);
      }),
    );
  }
  return Object.fromEntries(
    asEntries(msg.loss_fn_config).map(([key, value]): [string, number] => {
      if (typeof value !== "number") throw new TinkerWireError("not a number", `loss_fn_config.${key}`);
      return [key, value];
    }),
  );
}

function spend(budget: { left: number }, n: number, field: string, limits: DecodeLimits): void {
  budget.left -= n;
  if (budget.left < 0) {
    throw new TinkerWireError(`the request holds more than ${limits.maxTotalValues} values in all`, field);
  }
}

function decodeDatum(datum: Obj, path: string, limits: DecodeLimits, budget: { left: number }): DecodedDatum {
  if (asArray(datum.model_input_spans).length > 0) {
    throw new TinkerWireError("provenance spans are not served", `${path}.model_input_spans`);
  }
  if (asArray(datum.loss_fn_input_spans).length > 0) {
    throw new TinkerWireError("provenance spans are not served", `${path}.loss_fn_input_spans`);
  }
  const parts: Uint8Array[] = [];
  let tokenBytes = 0;
  asArray(datum.model_input).forEach((c, j) => {
    const chunk = isObj(c) ? c : {};
    const field = `${path}.model_input[${j}]`;
    if (chunk.chunk === "image") throw new TinkerWireError("image chunks are not served", field);
    if (chunk.chunk === "dmel") throw new TinkerWireError("dmel (audio) chunks are not served", field);
    if (chunk.chunk !== "encoded_text" || !isObj(chunk.encoded_text)) {
      throw new TinkerWireError("an empty chunk (none of encoded_text, image, dmel)", field);
    }
    const b = asBytes(chunk.encoded_text.tokens);
    if (b.byteLength % 4 !== 0) {
      throw new TinkerWireError(`${b.byteLength} bytes of int32 tokens (not a multiple of 4)`, `${field}.encoded_text.tokens`);
    }
    spend(budget, b.byteLength / 4, `${field}.encoded_text.tokens`, limits);
    parts.push(b);
    tokenBytes += b.byteLength;
  });
  const tokens = new Array<number>(tokenBytes / 4);
  let t = 0;
  for (const b of parts) {
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    for (let o = 0; o < b.byteLength; o += 4) tokens[t++] = view.getInt32(o, true);
  }
  const loss_fn_inputs = Object.fromEntries(
    asEntries(datum.loss_fn_inputs).map(([name, tensor]): [string, DecodedTensor] => [
      name,
      decodeTensor(isObj(tensor) ? tensor : {}, `${path}.loss_fn_inputs.${name}`, limits, budget),
    ]),
  );
  return { tokens, loss_fn_inputs };
}

interface DtypeReader {
  dtype: TensorDtype;
  size: number;
  read: (view: DataView, offset: number, field: string) => number;
}

const READERS: Record<number, DtypeReader> = {
  [DType.FLOAT32]: { dtype: "float32", size: 4, read: (v, o) => v.getFloat32(o, true) },
  [DType.INT64]: {
    dtype: "int64",
    size: 8,
    read: (v, o, field) => {
      const big = v.getBigInt64(o, true);
      if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER)) {
        throw new TinkerWireError(`int64 value ${big} at element ${o / 8} does not fit a 53-bit integer`, field);
      }
      return Number(big);
    },
  },
  // The SDK's request_conv writes only float32 and int64; int32 and bfloat16 are read as its response_conv
  // reads them (widened to the public int64 / float32).
  [DType.INT32]: { dtype: "int64", size: 4, read: (v, o) => v.getInt32(o, true) },
  [DType.BFLOAT16]: {
    dtype: "float32",
    size: 2,
    read: (v, o) => {
      const f = new DataView(new ArrayBuffer(4));
      f.setUint32(0, v.getUint16(o, true) << 16, true);
      return f.getFloat32(0, true);
    },
  },
};

function readAll(bytes: Uint8Array, reader: DtypeReader, field: string): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.byteLength / reader.size;
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = reader.read(view, i * reader.size, field);
  return out;
}

function readInt64s(bytes: Uint8Array, field: string): number[] {
  if (bytes.byteLength % 8 !== 0) {
    throw new TinkerWireError(`${bytes.byteLength} bytes of int64 indices (not a multiple of 8)`, field);
  }
  return readAll(bytes, READERS[DType.INT64]!, field);
}

function decodeTensor(tensor: Obj, path: string, limits: DecodeLimits, budget: { left: number }): DecodedTensor {
  const dtypeNum = typeof tensor.dtype === "number" ? tensor.dtype : 0;
  const reader = READERS[dtypeNum];
  if (!reader) throw new TinkerWireError(`dtype ${dtypeNum} is not a tensor dtype (float32 or int64)`, `${path}.dtype`);

  const rawShape = asArray(tensor.shape);
  const shape = rawShape.map((d, k) => {
    const dim = int64(d, `${path}.shape[${k}]`);
    if (dim < 0) throw new TinkerWireError(`a negative dimension (${dim})`, `${path}.shape[${k}]`);
    return dim;
  });
  // The product, capped as it grows: a shape like [1e9, 1e9] is refused before any multiplication overflows.
  let size = 1;
  for (const dim of shape) {
    size *= dim;
    if (size > limits.maxTensorValues) {
      throw new TinkerWireError(`shape [${shape.join(", ")}] is over ${limits.maxTensorValues} values`, `${path}.shape`);
    }
  }

  if (tensor.encoding === "sparse_csr") {
    const values = decodeSparseCsr(isObj(tensor.sparse_csr) ? tensor.sparse_csr : {}, shape, reader, `${path}.sparse_csr`, limits, budget);
    return { dtype: reader.dtype, shape, values };
  }
  const dense = asBytes(tensor.dense);
  if (dense.byteLength % reader.size !== 0) {
    throw new TinkerWireError(`${dense.byteLength} bytes of ${reader.dtype} (not a multiple of ${reader.size})`, `${path}.dense`);
  }
  const n = dense.byteLength / reader.size;
  if (n > limits.maxTensorValues) throw new TinkerWireError(`${n} values, over ${limits.maxTensorValues}`, `${path}.dense`);
  if (shape.length > 0 && size !== n) {
    throw new TinkerWireError(`shape [${shape.join(", ")}] holds ${size} values, the tensor has ${n}`, `${path}.shape`);
  }
  spend(budget, n, `${path}.dense`, limits);
  return { dtype: reader.dtype, shape: shape.length > 0 ? shape : null, values: readAll(dense, reader, `${path}.dense`) };
}

/** A 2-D CSR tensor (what the SDK's TensorData.from_torch_sparse makes of a 2-D target_tokens or weights),
 *  expanded to dense row-major values with 0 in the unlisted cells (the SDK's default pad value, and the only
 *  one the wire can carry). The CSR invariants torch checks are checked here. */
function decodeSparseCsr(
  csr: Obj,
  shape: number[],
  reader: DtypeReader,
  path: string,
  limits: DecodeLimits,
  budget: { left: number },
): number[] {
  if (shape.length !== 2) {
    throw new TinkerWireError(`a sparse CSR tensor needs a 2-D shape, got [${shape.join(", ")}]`, path);
  }
  const [rows, cols] = shape as [number, number];
  const valueBytes = asBytes(csr.values);
  if (valueBytes.byteLength % reader.size !== 0) {
    throw new TinkerWireError(`${valueBytes.byteLength} bytes of ${reader.dtype} (not a multiple of ${reader.size})`, `${path}.values`);
  }
  const crowBytes = asBytes(csr.crow_indices);
  const colBytes = asBytes(csr.col_indices);
  const nnz = valueBytes.byteLength / reader.size;
  if (crowBytes.byteLength !== (rows + 1) * 8) {
    throw new TinkerWireError(`${crowBytes.byteLength / 8} row pointers for ${rows} rows (needs ${rows + 1})`, `${path}.crow_indices`);
  }
  if (colBytes.byteLength !== nnz * 8) {
    throw new TinkerWireError(`${colBytes.byteLength / 8} column indices for ${nnz} values`, `${path}.col_indices`);
  }
  const size = rows * cols; // ≤ maxTensorValues: decodeTensor checked the shape's product
  spend(budget, size, path, limits);
  const crow = readInt64s(crowBytes, `${path}.crow_indices`);
  const col = readInt64s(colBytes, `${path}.col_indices`);
  const values = readAll(valueBytes, reader, `${path}.values`);
  if (crow[0] !== 0) throw new TinkerWireError("the first row pointer is not 0", `${path}.crow_indices`);
  if (crow[rows] !== nnz) {
    throw new TinkerWireError(`the last row pointer is ${crow[rows]}, not the ${nnz} values`, `${path}.crow_indices`);
  }
  const dense = new Array<number>(size).fill(0);
  for (let r = 0; r < rows; r++) {
    const start = crow[r]!;
    const end = crow[r + 1]!;
    if (end < start) throw new TinkerWireError(`row pointers decrease at row ${r}`, `${path}.crow_indices`);
    let last = -1;
    for (let k = start; k < end; k++) {
      const c = col[k]!;
      if (c < 0 || c >= cols) throw new TinkerWireError(`column ${c} outside [0, ${cols})`, `${path}.col_indices[${k}]`);
      if (c <= last) throw new TinkerWireError(`columns of row ${r} are not strictly increasing`, `${path}.col_indices[${k}]`);
      last = c;
      dense[r * cols + c] = values[k]!;
    }
  }
  return dense;
}

// ---------------------------------------------------------------------------------------------------------------
// Encoding the two protobuf future results

function littleEndian(values: readonly number[], dtype: TensorDtype | "int32", field: string): Uint8Array {
  const size = dtype === "int64" ? 8 : 4;
  const out = new Uint8Array(values.length * size);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => {
    if (typeof v !== "number") throw new TinkerWireError(`not a number (${String(v)})`, `${field}[${i}]`);
    if (dtype === "float32") {
      view.setFloat32(i * 4, v, true);
    } else if (dtype === "int32") {
      if (!Number.isInteger(v) || v < -2147483648 || v > 2147483647) {
        throw new TinkerWireError(`${v} is not an int32`, `${field}[${i}]`);
      }
      view.setInt32(i * 4, v, true);
    } else {
      if (!Number.isSafeInteger(v)) throw new TinkerWireError(`${v} is not a (53-bit) integer`, `${field}[${i}]`);
      view.setBigInt64(i * 8, BigInt(v), true);
    }
  });
  return out;
}

export type StopReason = "stop" | "length";

export interface SampledSequenceInput {
  tokens: readonly number[];
  /** One per token; null or absent when none were computed (the SDK then reads `logprobs` as None). */
  logprobs?: readonly number[] | null;
  stop_reason: StopReason;
}

export interface SampleResponseInput {
  sequences: readonly SampledSequenceInput[];
  /** One per prompt token, null where none was computed (the first token): sent as NaN, which the SDK
   *  reads back as None. Null or absent when prompt logprobs were not requested. */
  prompt_logprobs?: readonly (number | null)[] | null;
  /** Top-k prompt logprobs are not served. */
  topk_prompt_logprobs?: null;
  prompt_cache_hit_tokens?: number;
}

/** The SampleResponse protobuf a sample's future resolves to (tinker.proto.response_conv.deserialize_sample_response
 *  reads it). The SDK stamps each sequence's sequence_id from the asample promise's `sample_sequence_ids`, so the
 *  promise must carry one id per sequence encoded here. */
export function encodeSampleResponse(input: SampleResponseInput): Uint8Array {
  if (input.topk_prompt_logprobs != null) throw new TinkerWireError("top-k prompt logprobs are not served", "topk_prompt_logprobs");
  const sequences = input.sequences.map((seq, i) => {
    const field = `sequences[${i}]`;
    if (!(seq.stop_reason in StopReasonEnum)) {
      throw new TinkerWireError(`stop_reason ${JSON.stringify(seq.stop_reason)} is not "stop" or "length"`, `${field}.stop_reason`);
    }
    const out: Obj = {
      stop_reason: StopReasonEnum[seq.stop_reason],
      tokens: littleEndian(seq.tokens, "int32", `${field}.tokens`),
    };
    if (seq.logprobs != null) {
      if (seq.logprobs.length !== seq.tokens.length) {
        throw new TinkerWireError(`${seq.logprobs.length} logprobs for ${seq.tokens.length} tokens`, `${field}.logprobs`);
      }
      out.logprobs = littleEndian(seq.logprobs, "float32", `${field}.logprobs`);
    }
    return out;
  });
  const msg: Obj = { sequences };
  if (input.prompt_logprobs != null) {
    msg.prompt_logprobs = littleEndian(input.prompt_logprobs.map((v) => (v === null ? Number.NaN : v)), "float32", "prompt_logprobs");
  }
  if (input.prompt_cache_hit_tokens !== undefined) {
    const n = input.prompt_cache_hit_tokens;
    if (!Number.isInteger(n) || n < 0 || n > 2147483647) throw new TinkerWireError(`${n} is not a count`, "prompt_cache_hit_tokens");
    msg.prompt_cache_hit_tokens = n;
  }
  return tinkerPublic.SampleResponse.encode(msg).finish();
}

export interface OutputTensorInput {
  dtype: TensorDtype;
  /** Defaults to [values.length]. A 0-d shape ([]) comes back to the SDK as [1]: its reader rebuilds every
   *  shape as [leading, ...trailing]. */
  shape?: readonly number[];
  values: readonly number[];
}

export interface ForwardBackwardOutputInput {
  /** The loss output class name the SDK shows (e.g. "ArrayRecord"); it keeps what follows the last ':'. */
  loss_fn_output_type: string;
  /** One record per datum, in the request's datum order; every datum names the same fields. */
  loss_fn_outputs: readonly Record<string, OutputTensorInput>[];
  metrics: Record<string, number>;
}

/** The ForwardBackwardOutput protobuf a forward(_backward)'s future resolves to
 *  (tinker.proto.response_conv.deserialize_forward_backward_output reads it). Each field becomes a BatchedTensor
 *  per run of consecutive datums whose fields agree on dtype and trailing shape (usually one ArrayRecord for the
 *  whole batch; a ragged field splits it, as the SDK's reader expects). */
export function encodeForwardBackwardOutput(input: ForwardBackwardOutputInput): Uint8Array {
  const outputs = input.loss_fn_outputs;
  const names = outputs.length > 0 ? Object.keys(outputs[0]!).sort() : [];
  const normalized = outputs.map((datum, i) => {
    const keys = Object.keys(datum).sort();
    if (keys.join("\u0000") !== names.join("\u0000")) {
      throw new TinkerWireError(`fields [${keys.join(", ")}] differ from datum 0's [${names.join(", ")}]`, `loss_fn_outputs[${i}]`);
    }
    return names.map((name) => {
      const t = datum[name]!;
      const field = `loss_fn_outputs[${i}].${name}`;
      if (t.dtype !== "float32" && t.dtype !== "int64") {
        throw new TinkerWireError(`dtype ${JSON.stringify(t.dtype)} is not float32 or int64`, `${field}.dtype`);
      }
      const shape = t.shape ?? [t.values.length];
      for (const d of shape) {
        if (!Number.isSafeInteger(d) || d < 0) throw new TinkerWireError(`shape [${shape.join(", ")}] is not a shape`, `${field}.shape`);
      }
      const size = shape.reduce((a, b) => a * b, 1);
      if (size !== t.values.length) {
        throw new TinkerWireError(`shape [${shape.join(", ")}] holds ${size} values, the tensor has ${t.values.length}`, `${field}.shape`);
      }
      return { name, dtype: t.dtype, trailing: shape.slice(1), values: t.values, field };
    });
  });

  // Runs of consecutive datums with the same per-field (dtype, trailing shape): one ArrayRecord each.
  const records: Obj[] = [];
  let start = 0;
  const signature = (i: number) => normalized[i]!.map((f) => `${f.dtype}:${f.trailing.join("x")}`).join("|");
  for (let i = 1; i <= normalized.length; i++) {
    if (i < normalized.length && signature(i) === signature(start)) continue;
    const run = normalized.slice(start, i);
    const fields: Record<string, Obj> = {};
    names.forEach((name, k) => {
      const parts = run.map((d) => littleEndian(d[k]!.values, d[k]!.dtype, `${d[k]!.field}.values`));
      const total = parts.reduce((a, p) => a + p.byteLength, 0);
      const data = new Uint8Array(total);
      const offsets: number[] = [0];
      let at = 0;
      for (const p of parts) {
        data.set(p, at);
        at += p.byteLength;
        offsets.push(at);
      }
      const first = run[0]![k]!;
      fields[name] = {
        data,
        offsets: littleEndian(offsets, "int64", `${name}.offsets`),
        dtype: first.dtype === "float32" ? DType.FLOAT32 : DType.INT64,
        trailing_shape: first.trailing,
      };
    });
    records.push({ fields, num_datums: run.length });
    start = i;
  }

  const metrics: Record<string, number> = {};
  for (const [key, value] of Object.entries(input.metrics)) {
    if (typeof value !== "number") throw new TinkerWireError(`not a number (${String(value)})`, `metrics.${key}`);
    Object.defineProperty(metrics, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return tinkerPublic.ForwardBackwardOutput.encode({
    loss_fn_output_type: input.loss_fn_output_type,
    loss_fn_outputs: records,
    metrics,
  }).finish();
}
