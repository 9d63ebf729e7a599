"""The worker protocol's bodies, checked against the JSON Schema generated from daemon/protocol/worker.ts.

Regenerate protocol.schema.json with `npx tsx daemon/cli/main.ts schema --worker` when wire.ts changes.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema

SCHEMA_PATH = Path(__file__).with_name("protocol.schema.json")


class ProtocolError(Exception):
    pass


@cache
def _validators() -> dict[str, jsonschema.protocols.Validator]:
    out = {}
    for name, schema in json.loads(SCHEMA_PATH.read_text()).items():
        cls = jsonschema.validators.validator_for(schema)
        out[name] = cls(schema)
    return out


def names() -> list[str]:
    return sorted(_validators())


def check(name: str, body: dict) -> dict:
    """Returns `body` when it is a valid `name` (ClaimBody, Claimed…); raises ProtocolError naming the field."""
    errors = sorted(_validators()[name].iter_errors(body), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        field = ".".join(str(p) for p in e.absolute_path)
        raise ProtocolError(f"bad {name}{' at ' + field if field else ''}: {e.message}")
    return body


def fields(name: str) -> set[str]:
    """The properties a body of `name` may have (a newer daemon's protocol may have more)."""
    return set(_validators()[name].schema.get("properties", {}))
