/**
 * Rewrites tinker_public.descriptor.json (what wire-proto.ts loads with protobufjs's Root.fromJSON, so the
 * server reads no .proto at run time) from tinker_public.proto (what dump_proto.py transcribes from the
 * pinned SDK's descriptor). Field names keep their snake_case (`keepCase`), as the SDK's messages spell them.
 *
 *   node --import tsx features/tinker/wire/gen-descriptor.ts
 *
 * wire-proto.test.ts checks that the committed JSON is what this prints for the committed .proto.
 */
import fs from "node:fs";
import path from "node:path";
import protobuf from "protobufjs";

export function descriptorJsonFromProto(protoText: string): string {
  const { root } = protobuf.parse(protoText, { keepCase: true, alternateCommentMode: false });
  return JSON.stringify(root.toJSON({ keepComments: false }), null, 2) + "\n";
}

const here = import.meta.dirname;
if (process.argv[1] && path.resolve(process.argv[1]) === path.join(here, "gen-descriptor.ts")) {
  const proto = fs.readFileSync(path.join(here, "tinker_public.proto"), "utf8");
  fs.writeFileSync(path.join(here, "tinker_public.descriptor.json"), descriptorJsonFromProto(proto));
}
