"""The backbones params defines: ``backbones.build`` (trained here on the corpus), ``backbones.hub``
(downloaded) and ``backbones.local`` (copied from disk), each a mapping of name -> settings.

Grouping them by source lets the graph give each group exactly the inputs it reads: only built backbones
depend on the corpus, only local ones on a path outside the project.
"""

from __future__ import annotations

from typing import Any

from spanft.errors import SpanftError
from spanft.params.load import lookup

SOURCES = ("build", "hub", "local")


def backbone_specs(params: dict, source: str = "params") -> dict[str, tuple[str, dict[str, Any]]]:
    """``{name: (source, settings)}`` of every backbone; a name defined under two sources is an error."""
    specs: dict[str, tuple[str, dict[str, Any]]] = {}
    for kind in SOURCES:
        group = lookup(params, f"backbones.{kind}", source) or {}
        if not isinstance(group, dict):
            raise SpanftError(f"{source}: backbones.{kind} must be a mapping of name -> settings, found {group!r}")
        for name, spec in group.items():
            if name in specs:
                raise SpanftError(f"{source}: backbone {name!r} is defined under both backbones.{specs[name][0]} "
                                  f"and backbones.{kind}")
            specs[name] = (kind, dict(spec or {}))
    return specs


def backbone_spec(params: dict, name: str, source: str = "params") -> tuple[str, dict[str, Any]]:
    """``(source, settings)`` of backbone ``name``."""
    specs = backbone_specs(params, source)
    if name not in specs:
        raise SpanftError(f"{source}: backbone {name!r} is not defined under backbones "
                          f"(defined: {', '.join(specs) or 'none'})")
    return specs[name]
