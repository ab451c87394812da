"""Frozen dataclasses that are quick to make: the simulator makes one cost per launched op.

A ``@dataclass(frozen=True)`` instance is made by an ``__init__`` that sets each field with
``object.__setattr__`` (its own ``__setattr__`` refuses): 3.2 µs for a dozen fields on this
machine, against 0.55 µs for a plain class. :func:`quick_init` gives a frozen, slotted
dataclass an ``__init__`` that sets its slots through their descriptors instead; everything
else (refusing assignment, equality, hashing, ``dataclasses.replace``) stays the dataclass's
own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Replace the ``__init__`` of ``cls`` (a ``@dataclass(frozen=True, slots=True)`` whose
    fields have plain defaults, no factories, no ``__post_init__``) with one that sets the slots
    directly, same signature, same result."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not getattr(cls, "__dataclass_params__").frozen or "__slots__" not in cls.__dict__:  # noqa: B009
        raise TypeError(f"{cls.__name__}: quick_init wants a frozen, slotted dataclass")
    if hasattr(cls, "__post_init__") or any(f.default_factory is not dataclasses.MISSING for f in fields):
        raise TypeError(f"{cls.__name__}: quick_init cannot run __post_init__ or default factories")
    scope: dict[str, Any] = {}
    params, body = [], []
    for f in fields:
        scope[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        body.append(f"    _set_{f.name}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"]), scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls
