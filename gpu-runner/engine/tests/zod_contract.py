"""The one check of a pydantic mirror against the zod schema it mirrors, shared by every contract test.

Both sides are read as JSON Schema: zod's from `z.toJSONSchema` (emit_zod_schemas.ts, run by Node with tsx),
pydantic's from `model_json_schema()`. Both are normalised (references resolved, `X | None` and zod's
nullable written alike, zod's safe-integer range on `.int()` dropped, a union of literals read as one enum)
and compared field by field, recursively: field names, which are required, types, enum values, numeric
bounds (minimum, maximum, exclusiveMinimum, exclusiveMaximum), string and array lengths, defaults, null
allowed on required fields, and whether unknown keys are refused. A drift on either side is a problem named
by its path, e.g. `TrainRequest.config.lora_rank: maximum zod 256 vs pydantic 512`.

Requests compare zod's input view (a default makes a field optional) with pydantic's validation schema.
Responses compare zod's output view, where every field the engine always writes (a pydantic default other
than None) counts as required; unknown keys and defaults are a parser's business, so only requests compare them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import core_schema

REPO = Path(__file__).resolve().parents[3]
CONTRACTS = REPO / "contracts"
EMIT = Path(__file__).with_name("emit_zod_schemas.ts")
INT_RANGE = 9007199254740991  # zod's .int() bounds: no bound of the field's own
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength")
_MISSING = object()

Side = Literal["input", "output"]


def zod_schemas(wanted: dict[str, list[str]]) -> dict[str, dict[str, dict]]:
    """{contracts module ("chat.ts"): [export, ...]} → {module: {export: {"input": schema, "output": schema}}},
    from one Node process."""
    node = shutil.which("node")
    if node is None or not (REPO / "node_modules" / "tsx").exists():
        pytest.fail("node and the repo's node_modules (tsx, zod) are needed to read the zod contracts")
    paths = {module: str(CONTRACTS / module) for module in wanted}
    out = subprocess.run(
        [node, "--import", "tsx", str(EMIT), json.dumps({paths[m]: names for m, names in wanted.items()})],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    emitted = json.loads(out.stdout)
    return {module: emitted[path] for module, path in paths.items()}


class _FactoryDefaults(GenerateJsonSchema):
    """pydantic leaves `default_factory` defaults out of the schema; zod writes them, so they are compared too."""

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            return factory()  # type: ignore[call-arg]
        return super().get_default_value(schema)


def pydantic_schema(model: Any) -> dict:
    """The JSON Schema of a pydantic model, or of any type pydantic validates (a discriminated union)."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_json_schema(schema_generator=_FactoryDefaults)
    return TypeAdapter(model).json_schema(schema_generator=_FactoryDefaults)


def schema_problems(zod: dict, pyd: dict, side: Side, name: str) -> list[str]:
    """Every difference between a zod export's JSON Schema and its pydantic mirror's; [] when they agree."""
    problems: list[str] = []
    _Compare(zod, pyd, side, problems).schemas(zod, pyd, name)
    return problems


def _resolve(schema: Any, root: dict) -> dict:
    if schema is True or schema is None:
        return {}
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _alternatives(schema: Any, root: dict) -> list[dict]:
    """A schema's alternatives, null included: pydantic writes X | None as anyOf, zod as type [X, "null"]."""
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [v for alt in schema[key] for v in _alternatives(alt, root)]
    if isinstance(schema.get("type"), list):
        return [{**schema, "type": t} for t in schema["type"]]
    return [schema]


def _nullable(schema: Any, root: dict) -> bool:
    return any(v.get("type") == "null" for v in _alternatives(schema, root))


def _kind(schema: dict) -> str:
    if "enum" in schema or "const" in schema:
        return "enum"  # literals: their values carry their types (zod's 0 is a "number", pydantic's an "integer")
    if "properties" in schema or schema.get("type") == "object":
        return "object"
    return schema.get("type", "any")


def _variants(schema: Any, root: dict) -> list[dict]:
    """The non-null alternatives, every literal among them gathered into one enum."""
    alts = [v for v in _alternatives(schema, root) if v.get("type") != "null"]
    values = [x for v in alts if _kind(v) == "enum" for x in v.get("enum", [v.get("const")])]
    rest = [v for v in alts if _kind(v) != "enum"]
    return rest + ([{"enum": values}] if values else [])


def _signature(schema: dict) -> tuple:
    """What pairs the object alternatives of a union across the two sides: their field names and the value of
    a discriminating `type` field."""
    kind = schema.get("properties", {}).get("type", {})
    return tuple(sorted(schema.get("properties", {}))), kind.get("const", kind.get("enum"))


def _pairs(zs: list[dict], ps: list[dict]) -> list[tuple[dict, dict]]:
    left = list(ps)
    out = []
    for z in zs:
        same = [p for p in left if _kind(p) == _kind(z)]
        p = next((p for p in same if _signature(p) == _signature(z)), same[0])
        left.remove(p)
        out.append((z, p))
    return out


def _bound(schema: dict, key: str) -> Any:
    value = schema.get(key)
    return None if value is not None and abs(value) == INT_RANGE else value


class _Compare:
    def __init__(self, zroot: dict, proot: dict, side: Side, problems: list[str]) -> None:
        self.zroot, self.proot, self.side, self.problems = zroot, proot, side, problems

    def schemas(self, z: Any, p: Any, path: str) -> None:
        zs, ps = _variants(z, self.zroot), _variants(p, self.proot)
        if sorted(map(_kind, zs)) != sorted(map(_kind, ps)):
            self.problems.append(f"{path}: types zod {sorted(map(_kind, zs))} vs pydantic {sorted(map(_kind, ps))}")
            return
        for zv, pv in _pairs(zs, ps):
            kind = _kind(zv)
            if kind == "object":
                self.objects(zv, pv, path)
            elif kind == "array":
                self.lengths(zv, pv, ("minItems", "maxItems"), path)
                self.schemas(zv.get("items", {}), pv.get("items", {}), f"{path}[]")
            elif kind == "enum":
                if sorted(zv["enum"], key=repr) != sorted(pv["enum"], key=repr):
                    self.problems.append(f"{path}: values zod {zv['enum']} vs pydantic {pv['enum']}")
            else:
                self.lengths(zv, pv, BOUNDS, path)

    def lengths(self, z: dict, p: dict, keys: tuple[str, ...], path: str) -> None:
        for key in keys:
            if _bound(z, key) != _bound(p, key):
                self.problems.append(f"{path}: {key} zod {_bound(z, key)} vs pydantic {_bound(p, key)}")

    def objects(self, z: dict, p: dict, path: str) -> None:
        zprops, pprops = z.get("properties", {}), p.get("properties", {})
        if set(zprops) != set(pprops):
            self.problems.append(f"{path}: fields zod-only {sorted(set(zprops) - set(pprops))}, "
                                 f"pydantic-only {sorted(set(pprops) - set(zprops))}")
        zreq, preq = set(z.get("required", [])), set(p.get("required", []))
        if self.side == "output":
            preq |= {k for k, v in pprops.items() if v.get("default") is not None}
        if zreq != preq:
            self.problems.append(f"{path}: required zod {sorted(zreq)} vs pydantic {sorted(preq)}")
        if self.side == "input" and (z.get("additionalProperties") is False) != (p.get("additionalProperties") is False):
            self.problems.append(f"{path}: unknown keys refused zod {z.get('additionalProperties') is False} "
                                 f"vs pydantic {p.get('additionalProperties') is False}")
        # A record (dict[str, X]): its values' schema.
        zextra, pextra = z.get("additionalProperties"), p.get("additionalProperties")
        if isinstance(zextra, dict) or isinstance(pextra, dict):
            self.schemas(zextra if isinstance(zextra, dict) else {}, pextra if isinstance(pextra, dict) else {},
                         f"{path}{{}}")
        for k in sorted(set(zprops) & set(pprops)):
            self.field(zprops[k], pprops[k], k in zreq and k in preq, f"{path}.{k}")

    def field(self, z: dict, p: dict, required: bool, path: str) -> None:
        if self.side == "input":
            # pydantic's `= None` is how an optional field is written, not a default zod has.
            zd, pd = z.get("default", _MISSING), p.get("default", _MISSING)
            if not (zd is _MISSING and pd in (_MISSING, None)) and zd != pd:
                self.problems.append(f"{path}: default zod {_shown(zd)} vs pydantic {_shown(pd)}")
        if required and _nullable(z, self.zroot) != _nullable(p, self.proot):
            self.problems.append(f"{path}: null allowed zod {_nullable(z, self.zroot)} "
                                 f"vs pydantic {_nullable(p, self.proot)}")
        self.schemas(z, p, path)


def _shown(value: Any) -> str:
    return "none" if value is _MISSING else json.dumps(value)

