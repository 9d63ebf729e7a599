"""Node-protocol headers, checked against the JSON Schema generated from daemon/protocol/node.ts.

Regenerate protocol.schema.json with `npx tsx daemon/cli/main.ts schema --node` when node.ts changes.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema

NODE_PROTOCOL_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("protocol.schema.json")


class ProtocolError(Exception):
    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@cache
def _validators() -> dict[str, jsonschema.protocols.Validator]:
    schema = json.loads(SCHEMA_PATH.read_text())
    out = {}
    for branch in schema["oneOf"]:
        t = branch["properties"]["t"]["const"]
        cls = jsonschema.validators.validator_for(schema)
        out[t] = cls({**branch, "$schema": schema["$schema"]})
    return out


def message_types() -> list[str]:
    return sorted(_validators())


def validate(header: dict) -> dict:
    """Returns the header when it is a valid node message; raises ProtocolError naming the field."""
    t = header.get("t")
    validators = _validators()
    if not isinstance(t, str) or t not in validators:
        raise ProtocolError(f"unknown message type {t!r}", field="t")
    errors = sorted(validators[t].iter_errors(header), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        field = ".".join(str(p) for p in e.absolute_path) or None
        if e.validator == "required" and not field:
            missing = e.message.split("'")[1] if "'" in e.message else None
            field = missing
        where = f" at {field}" if field else ""
        raise ProtocolError(f'bad "{t}" message{where}: {e.message}', field=field)
    return header
