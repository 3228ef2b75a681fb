/** `judgeChat`: one call to the experiment's judge model (never the policy; counted by the runner). */
import type * as Sdk from "../../../contracts/sdk/rollbook";
import { host, unwrap } from "./host";

export const judgeChat: typeof Sdk.judgeChat = (messages, options = {}) => unwrap(host().judge(messages, { ...options }));
