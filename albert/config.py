"""Typed stage configuration: pydantic models loadable from YAML and overridable by CLI flags.

Every stage defines one `StageConfig` subclass; the same object is the stage's Python API argument,
its CLI (one `--field-name` flag per field) and its Prefect flow parameter.
"""

from __future__ import annotations

import argparse
import codecs
import json
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from albert.errors import ConfigError

C = TypeVar("C", bound="StageConfig")

JsonDict = Annotated[
    dict[str, Any],
    BeforeValidator(lambda value: json.loads(value) if isinstance(value, str) else value),
]
"""A mapping field: a dict in YAML or Python, a JSON object on the command line."""


def _split_commas(value: Any) -> Any:
    """Each string item split at its commas and stripped, empty parts dropped; an item that is no
    string (a YAML number, list or null) is left to the field's type to take or refuse."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        return value
    return [
        part.strip() if isinstance(part, str) else part
        for item in items
        for part in (item.split(",") if isinstance(item, str) else [item])
        if not isinstance(part, str) or part.strip()
    ]


CommaList = BeforeValidator(_split_commas)
"""List-field metadata: `--flag a,b` (or a repeated flag, or a YAML list) gives ['a', 'b']."""


def _known_encoding(value: str) -> str:
    try:
        codecs.lookup(value)
    except LookupError:
        raise ValueError(f"unknown encoding {value!r}") from None
    return value


Encoding = Annotated[str, AfterValidator(_known_encoding)]
"""A text encoding field: a name Python's codecs know (utf-8, latin-1 ...)."""


def _factory_defaults(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """The defaults that factories make (`[]`, `{}`, the ablation's grid) in the JSON schema, which
    pydantic leaves out: a flow deployment's parameter form shows them (flows/deploy.py)."""
    properties = schema.get("properties", {})
    for name, field in cls.model_fields.items():
        key = field.alias or name
        if field.default_factory is not None and key in properties:
            properties[key].setdefault("default", field.default_factory())


class StageConfig(BaseModel):
    """Base of every stage config: unknown fields are errors, values are validated on assignment,
    and float fields reject inf and NaN (a non-finite learning rate or probability is never
    meant). Its JSON schema (a flow's parameter form) shows every default."""

    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        frozen=False,
        allow_inf_nan=False,
        json_schema_extra=_factory_defaults,
    )


def format_validation_error(cls: type[BaseModel], error: ValidationError) -> str:
    """One line: `Config.field: reason (got value)` for each bad field, joined by `; `."""
    lines = []
    for item in error.errors():
        if not item["loc"]:  # a check across fields: its message names them
            lines.append(f"{cls.__name__}: {item['msg']}")
            continue
        field = ".".join(str(part) for part in item["loc"])
        got = f" (got {item['input']!r})" if "input" in item and item["type"] != "missing" else ""
        lines.append(f"{cls.__name__}.{field}: {item['msg']}{got}")
    return " ".join("; ".join(lines).split())


def build_config(cls: type[C], values: dict[str, Any]) -> C:
    """Validate `values` into `cls`, raising ConfigError that names each bad field."""
    try:
        return cls.model_validate(values)
    except ValidationError as error:
        raise ConfigError(format_validation_error(cls, error)) from None


def read_yaml(path: str | Path) -> Any:
    """The plain data of the YAML file `path` (safe_load: no tag builds a Python object).

    A missing or unreadable file, text that is not UTF-8 or YAML, and a tag such as
    `!!python/object` raise ConfigError `PATH: REASON` (one line).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: {_yaml_reason(error)}") from None


def _yaml_reason(error: yaml.YAMLError) -> str:
    """`line L, column C: problem (context)` of a YAML error, on one line."""
    if not isinstance(error, yaml.MarkedYAMLError):
        return " ".join(str(error).split())
    problem = error.problem or "invalid YAML"
    if "tag:yaml.org,2002:python/" in problem:
        tag = problem.split("tag:yaml.org,2002:", 1)[1].rstrip("'")
        problem = (
            f"the tag !!{tag} would build a Python object; configuration files hold plain values"
        )
    elif error.context:
        problem = f"{problem} ({error.context})"
    mark = error.problem_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return " ".join(f"{where}{problem}".split())


def load_config(
    cls: type[C], path: str | Path | None = None, overrides: dict[str, Any] | None = None
) -> C:
    """Load a YAML mapping of field values (if given), apply `overrides`, validate."""
    values: dict[str, Any] = {}
    if path is not None:
        loaded = read_yaml(path) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a YAML mapping of {cls.__name__} fields")
        values.update(loaded)
    values.update(overrides or {})
    return build_config(cls, values)


def _unwrap_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def field_help(field: FieldInfo) -> str:
    """A flag's help: the field's description and its default, said once: the description's own
    words where it states it (`default: the stage's`, `task default`), else the value (a default
    factory's made: `[]`, `{}`); a required field has none."""
    text = field.description or ""
    if field.is_required() or "default" in text.lower():
        return text
    return f"{text} (default: {field.get_default(call_default_factory=True)!r})".lstrip()


def add_config_arguments(parser: argparse.ArgumentParser, cls: type[StageConfig]) -> None:
    """Add `--config FILE` and one flag per field of `cls` (list fields repeat, bools are
    --x/--no-x), with the field's other spellings (`json_schema_extra={"flags": [...]}`)."""
    parser.add_argument("--config", help="YAML file of field values; flags override it")
    for name, field in cls.model_fields.items():
        flag = "--" + name.replace("_", "-")
        annotation = _unwrap_optional(field.annotation)
        origin = typing.get_origin(annotation)
        help_text = field_help(field)
        kwargs: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS, "help": help_text}
        if annotation is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif origin in (list, tuple, Sequence):
            kwargs["action"] = "append"
        elif origin is Literal:
            kwargs["choices"] = [str(choice) for choice in typing.get_args(annotation)]
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        parser.add_argument(flag, *extra.get("flags", []), **kwargs)


def config_from_namespace(cls: type[C], namespace: argparse.Namespace) -> C:
    """Build the config from parsed flags layered over the optional --config YAML file."""
    values = {
        name: getattr(namespace, name) for name in cls.model_fields if hasattr(namespace, name)
    }
    return load_config(cls, getattr(namespace, "config", None), values)
