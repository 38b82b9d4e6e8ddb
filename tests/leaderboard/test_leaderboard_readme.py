"""The leaderboard page's schema table is SUBMISSION_SCHEMA's, field by field."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_schema_script():
    spec = importlib.util.spec_from_file_location("bundle_schema", ROOT / "scripts" / "bundle_schema.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCHEMA = load_schema_script()


def test_the_leaderboard_page_schema_table_is_the_schema_s():
    assert SCHEMA.BLOCK.current() == SCHEMA.schema_table(), "run: python scripts/bundle_schema.py --write"


def test_every_field_of_the_schema_has_a_row():
    table = SCHEMA.schema_table()
    for field in ("metadata.settings.envs.*.stop[]", "summary.overall.score.high", "episodes[].end_reason"):
        assert f"| `{field}` |" in table


def test_the_rows_read_objects_maps_arrays_enums_and_nullable_types():
    schema = {
        "type": "object",
        "required": ["a"],
        "additionalProperties": False,
        "properties": {
            "a": {"type": ["integer", "null"], "minimum": 0, "maximum": 2**53 - 1},
            "b": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"enum": ["x", "y|z"]}},
            },
            "c": {"const": "v/1"},
        },
    }
    assert SCHEMA.schema_table(schema).splitlines()[2:] == [
        "| `a` | yes | integer or null | ≥ 0; ≤ 9,007,199,254,740,991 |",
        "| `b` |  | object |  |",
        "| `b.*` |  | array |  |",
        "| `b.*[]` |  | string | one of `x`, `y\\|z` |",
        "| `c` |  | string | = `v/1` |",
    ]
