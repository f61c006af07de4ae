"""Which params differ from the profile's file: what ``dvc exp run -S`` (or a hand edit) changed in
``params.yaml`` since ``spanft profile NAME`` copied ``profiles/NAME.yaml``. The reports name them in their
header (``changed: dict_size=100000``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from spanft.params.load import load_params, parse_params
from spanft.params.plan import Plan
from spanft.params.profiles import PROFILES_DIR, packaged_names

_MISSING = object()


def with_changes(plan: Plan) -> Plan:
    """The plan, knowing which params differ from its profile's file (its ``profile_label`` names them)."""
    return dataclasses.replace(plan, changed=tuple(changed_from_profile(plan.origin)))


def changed_from_profile(params_file: str | Path) -> list[str]:
    """``key=value`` for every leaf of ``params_file`` that differs from ``profiles/<its profile>.yaml`` beside
    it (``key removed`` for one the profile has and it lacks); [] when that profile file is absent."""
    params_file = Path(params_file)
    tree = load_params(params_file)
    source = params_file.parent / PROFILES_DIR / f"{tree.get('profile')}.yaml"
    if not source.is_file():
        return []
    text = source.read_text(encoding="utf-8")
    text = packaged_names(text)  # as `spanft profile` wrote it into params.yaml
    profile = parse_params(text, source)
    ours, theirs = _leaves(tree), _leaves(profile if isinstance(profile, dict) else {})
    changed = [f"{key}={_shown(value)}" for key, value in ours.items() if theirs.get(key, _MISSING) != value]
    return changed + [f"{key} removed" for key in theirs if key not in ours]


def _leaves(tree: dict, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> value of every leaf (a list is one leaf; an empty mapping is one)."""
    leaves = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            leaves |= _leaves(value, f"{dotted}.")
        else:
            leaves[dotted] = value
    return leaves


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_shown(item)}" for key, item in value.items()) + "}"
    return "''" if value == "" else str(value)
