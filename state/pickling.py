"""The pickle form of the input contract's dataclasses (state.events): `cls(*field values)`, for the
Spark source's events and for the group states that hold events (held, parked or in flight).

Slotted dataclasses otherwise pickle as their class and a dict of their slots' values, object by object:
twice the bytes, and unpickling an event took about three times as long. The result is plain pickle, read
with `pickle.loads`.
"""

from __future__ import annotations

import dataclasses
import io
import operator
import pickle
from typing import Any, Callable


class ValuesPickler(pickle.Pickler):
    """A pickler that writes state.events' dataclasses as their constructor call, anything else as usual."""

    _values: dict[type, Callable[[Any], tuple] | None] = {}

    def reducer_override(self, obj):
        cls = type(obj)
        try:
            values = self._values[cls]
        except KeyError:
            names = _constructor_fields(cls)
            values = self._values[cls] = None if names is None else _values_getter(names)
        if values is None:
            return NotImplemented
        return cls, values(obj)

    @classmethod
    def dumper(cls) -> Callable[[Any], bytes]:
        """A `dumps(obj) -> bytes` that reuses one pickler and buffer (each result is a complete pickle)."""
        buffer = io.BytesIO()
        pickler = cls(buffer, protocol=5)

        def dumps(obj) -> bytes:
            buffer.seek(0)
            buffer.truncate()
            pickler.clear_memo()
            pickler.dump(obj)
            return buffer.getvalue()

        return dumps


def dumps(obj) -> bytes:
    """`pickle.dumps(obj, protocol=5)`, with state.events' dataclasses as their constructor call."""
    buffer = io.BytesIO()
    ValuesPickler(buffer, protocol=5).dump(obj)
    return buffer.getvalue()


def _constructor_fields(cls: type) -> tuple[str, ...] | None:
    """The fields `cls(*values)` rebuilds an object from, if `cls` is a dataclass of `state.events` that
    its constructor rebuilds exactly (every field an init field, no __post_init__)."""
    if not dataclasses.is_dataclass(cls) or cls.__module__ != "state.events" or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields):
        return None
    return tuple(f.name for f in fields)


def _values_getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """obj -> the tuple of its `names` attributes, read in C (every input event goes through it)."""
    if len(names) == 1:
        return lambda obj, get=operator.attrgetter(names[0]): (get(obj),)
    return operator.attrgetter(*names) if names else lambda obj: ()
