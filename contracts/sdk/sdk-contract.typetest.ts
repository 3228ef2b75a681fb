/**
 * A type test (checked by `npm run check`, no runtime): the SDK's declarations (rollbook.d.ts, the one
 * source of the types user code sees) must equal the runtime contracts the runner validates with
 * (contracts/chat.ts). If a field is renamed, retyped or added on one side only, this file
 * stops compiling.
 */
import type { z } from "zod";
import type { ChatChoice, ChatCompletionRequest, ChatMessage, ToolCall, ToolChoice, ToolSpec } from "..";
import type * as Sdk from "./rollbook";

/** Exact type equality (not mere assignability). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

type RequestOptions = Pick<z.output<typeof ChatCompletionRequest>, "temperature" | "top_p" | "max_tokens" | "stop" | "seed" | "tool_choice">;
type MalformedContract = NonNullable<ChatChoice["malformed_tool_calls"]>[number];

export type SdkMatchesContracts = [
  Assert<Equal<Sdk.ToolCall, ToolCall>>,
  Assert<Equal<Sdk.ChatMessage, ChatMessage>>,
  Assert<Equal<Sdk.ToolSpec, ToolSpec>>,
  Assert<Equal<Sdk.ToolChoice, ToolChoice>>,
  // ctx.chat's sampling options are the request's (tools differ on purpose: the SDK also takes tool(...) objects).
  Assert<Equal<Required<Omit<Sdk.ChatOptions, "tools">>, Required<RequestOptions>>>,
  Assert<Equal<Sdk.MalformedToolCall, MalformedContract>>,
  Assert<Equal<Sdk.ChatResult["finishReason"], ChatChoice["finish_reason"]>>,
];
