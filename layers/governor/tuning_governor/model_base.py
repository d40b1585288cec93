"""The base of the governor's pydantic models: each model's schema is built on its first use.

``defer_build``: a class's validator and serializer are made the first time it validates or dumps
(pydantic's mock validator rebuilds it), not when its module is imported. A handler's cold start
imports about 75 models and its first event uses a fraction of them (a trial starting none of a
tuning job's summary models), so the schemas no path uses are never built. Subclasses' own
``model_config`` is merged with this one (pydantic merges a class's config with its bases').

pydantic's ``model_rebuild`` is not thread-safe (two first uses at once may rebuild one class at the
same time, and one may see it half-built); every build of a governor model holds one lock.

``from_fields`` makes an instance of values already of their fields' types (read from the governor's own
items), as ``model_construct`` does but without its walk over every field's aliases and defaults.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Self, cast

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from pydantic._internal._namespace_utils import MappingNamespace

_BUILD = threading.RLock()


class GovernorModel(BaseModel):
    model_config = ConfigDict(defer_build=True)

    @classmethod
    def model_rebuild(
        cls,
        *,
        force: bool = False,
        raise_errors: bool = True,
        _parent_namespace_depth: int = 2,
        _types_namespace: MappingNamespace | None = None,
    ) -> bool | None:
        """pydantic's, one build at a time (the second first use waits, then finds the class built)."""
        depth = _parent_namespace_depth + 1 if _parent_namespace_depth > 0 else 0  # this frame
        with _BUILD:
            return super().model_rebuild(
                force=force, raise_errors=raise_errors, _parent_namespace_depth=depth, _types_namespace=_types_namespace
            )

    @classmethod
    def from_fields(cls, values: dict[str, Any]) -> Self:
        """The instance ``model_construct(**values)`` makes, for ``values`` naming every field and nothing
        else (any other case, or a model with private attributes or a post-init: model_construct)."""
        if (
            values.keys() != cls.__pydantic_fields__.keys()
            or cls.__private_attributes__
            or cls.__pydantic_post_init__
            or cls.model_config.get("extra") == "allow"
        ):
            return cast("Self", cls.model_construct(None, **values))  # pydantic's stub types it as the base
        model = cls.__new__(cls)
        object.__setattr__(model, "__dict__", values)
        object.__setattr__(model, "__pydantic_fields_set__", set(values))
        object.__setattr__(model, "__pydantic_extra__", None)
        object.__setattr__(model, "__pydantic_private__", None)
        return model
