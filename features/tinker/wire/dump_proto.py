"""Print tinker_public.proto, transcribed from the descriptor the pinned tinker SDK ships.

The SDK publishes no .proto file, only the compiled module `tinker/proto/tinker_public_pb2.py`; its
descriptor (a FileDescriptorProto) is the wire contract. This script writes it back out as proto3 text:
field names, numbers, types, labels, `optional` (proto3 presence), oneofs, maps and enums, in the
descriptor's own order. Run with the tinker venv's python (scripts/tinker-venv.sh prints it):

    "$(bash scripts/tinker-venv.sh | tail -1)" features/tinker/wire/dump_proto.py > features/tinker/wire/tinker_public.proto

wire-proto.test.ts runs it and compares its output with the committed file, byte for byte.
"""

from __future__ import annotations

import sys

from google.protobuf import descriptor_pb2
from tinker._version import __version__ as tinker_version
from tinker.proto import tinker_public_pb2

F = descriptor_pb2.FieldDescriptorProto

SCALAR = {
    F.TYPE_DOUBLE: "double",
    F.TYPE_FLOAT: "float",
    F.TYPE_INT64: "int64",
    F.TYPE_UINT64: "uint64",
    F.TYPE_INT32: "int32",
    F.TYPE_FIXED64: "fixed64",
    F.TYPE_FIXED32: "fixed32",
    F.TYPE_BOOL: "bool",
    F.TYPE_STRING: "string",
    F.TYPE_BYTES: "bytes",
    F.TYPE_UINT32: "uint32",
    F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64",
    F.TYPE_SINT32: "sint32",
    F.TYPE_SINT64: "sint64",
}


def type_name(field: descriptor_pb2.FieldDescriptorProto, package: str) -> str:
    if field.type in (F.TYPE_MESSAGE, F.TYPE_ENUM):
        name = field.type_name
        prefix = f".{package}."
        return name[len(prefix) :] if name.startswith(prefix) else name
    if field.type not in SCALAR:
        raise SystemExit(f"unsupported field type {field.type} on {field.name}")
    return SCALAR[field.type]


def emit_enum(enum: descriptor_pb2.EnumDescriptorProto, indent: str, out: list[str]) -> None:
    out.append(f"{indent}enum {enum.name} {{")
    for value in enum.value:
        out.append(f"{indent}  {value.name} = {value.number};")
    out.append(f"{indent}}}")


def emit_message(
    msg: descriptor_pb2.DescriptorProto, package: str, indent: str, out: list[str]
) -> None:
    maps = {
        nested.name: nested for nested in msg.nested_type if nested.options.map_entry
    }
    out.append(f"{indent}message {msg.name} {{")
    for enum in msg.enum_type:
        emit_enum(enum, indent + "  ", out)
    for nested in msg.nested_type:
        if not nested.options.map_entry:
            emit_message(nested, package, indent + "  ", out)

    def field_line(field: descriptor_pb2.FieldDescriptorProto, pad: str) -> str:
        entry_name = field.type_name.rsplit(".", 1)[-1]
        if field.label == F.LABEL_REPEATED and field.type == F.TYPE_MESSAGE and entry_name in maps:
            entry = maps[entry_name]
            key = next(f for f in entry.field if f.number == 1)
            value = next(f for f in entry.field if f.number == 2)
            decl = f"map<{type_name(key, package)}, {type_name(value, package)}>"
        else:
            decl = type_name(field, package)
            if field.label == F.LABEL_REPEATED:
                decl = f"repeated {decl}"
            elif field.proto3_optional:
                decl = f"optional {decl}"
            elif field.label == F.LABEL_REQUIRED:
                raise SystemExit(f"proto2 required field {field.name} in a proto3 file")
        options = ""
        if field.options.HasField("packed"):
            options = f" [packed = {'true' if field.options.packed else 'false'}]"
        return f"{pad}{decl} {field.name} = {field.number}{options};"

    # Real oneofs (not the synthetic ones proto3 `optional` makes) group their fields; a field is
    # printed where its oneof's first field sits, so the order of the descriptor is kept.
    synthetic = {
        f.oneof_index for f in msg.field if f.HasField("oneof_index") and f.proto3_optional
    }
    printed_oneofs: set[int] = set()
    for field in msg.field:
        if field.HasField("oneof_index") and field.oneof_index not in synthetic:
            idx = field.oneof_index
            if idx in printed_oneofs:
                continue
            printed_oneofs.add(idx)
            out.append(f"{indent}  oneof {msg.oneof_decl[idx].name} {{")
            for member in msg.field:
                if member.HasField("oneof_index") and member.oneof_index == idx:
                    out.append(field_line(member, indent + "    "))
            out.append(f"{indent}  }}")
        else:
            out.append(field_line(field, indent + "  "))
    out.append(f"{indent}}}")


def render() -> str:
    fd = descriptor_pb2.FileDescriptorProto()
    tinker_public_pb2.DESCRIPTOR.CopyToProto(fd)
    if fd.syntax != "proto3":
        raise SystemExit(f"expected a proto3 descriptor, got {fd.syntax!r}")
    out = [
        f"// Transcribed from the descriptor of tinker=={tinker_version}'s tinker/proto/tinker_public_pb2.py",
        "// (the Tinker SDK ships no .proto). Regenerate, do not edit:",
        "//   python features/tinker/wire/dump_proto.py > features/tinker/wire/tinker_public.proto",
        "// with the venv scripts/tinker-venv.sh builds; then `node --import tsx",
        "// features/tinker/wire/gen-descriptor.ts` rewrites tinker_public.descriptor.json from it.",
        "",
        'syntax = "proto3";',
        "",
        f"package {fd.package};",
    ]
    for dep in fd.dependency:
        out.append(f'import "{dep}";')
    for enum in fd.enum_type:
        out.append("")
        emit_enum(enum, "", out)
    for msg in fd.message_type:
        out.append("")
        emit_message(msg, fd.package, "", out)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
