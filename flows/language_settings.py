"""What `--language CODE` sets in a flow's per-stage settings, from the language's profile
(`albert.languages`): each a default that the stage's own dict (`--segment`, `--vocab`,
`--tfrecords`) overrides."""

from __future__ import annotations

import json
from typing import Any

from albert.languages import language_profile


def language_settings(language: str) -> dict[str, dict[str, Any]]:
    """Per stage, the config values `language` sets: segment's cleaning target, the vocabulary's
    profile (its `language` field), tfrecords' check of the vocabulary's record."""
    profile = language_profile(language)
    return {
        "segment": {"language": [profile.cleaning_language]},
        "vocab": {"language": language},
        "tfrecords": {"language": language},
    }


def with_language(values: Any) -> Any:
    """A flow config's raw values with `language`'s settings put under each stage's dict, the
    values the dict already holds winning (a pydantic before-validator); values without a
    language unchanged. A bad code is the config's one-line error."""
    if not isinstance(values, dict) or values.get("language") is None:
        return values
    merged = dict(values)
    for stage, settings in language_settings(values["language"]).items():
        given = values.get(stage) or {}
        if isinstance(given, str):  # a JSON object on the command line
            given = json.loads(given)
        merged[stage] = {**settings, **given} if isinstance(given, dict) else given
    return merged
