"""A small cache keyed by an object's identity, for the planners' repeated questions about one model.

A ModelSpec is frozen but hashing it hashes every tensor, and a search asks about the same object dozens of
times; keyed by id() (the object held, so its id cannot be reused while cached) a lookup costs nothing.
Pure, thread-safe (the API plans on several threads), bounded (least recently used entries dropped).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class IdMemo:
    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._data: OrderedDict[tuple[int, Hashable], tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, obj: Any, key: Hashable, make: Callable[[], T]) -> T:
        """make() once per (obj, key); an exception is not cached."""
        k = (id(obj), key)
        with self._lock:
            hit = self._data.get(k)
            if hit is not None and hit[0] is obj:
                self._data.move_to_end(k)
                return hit[1]
        value = make()
        with self._lock:
            self._data[k] = (obj, value)
            self._data.move_to_end(k)
            while len(self._data) > self._size:
                self._data.popitem(last=False)
        return value

    def has(self, obj: Any, key: Hashable) -> bool:
        """Whether (obj, key) is cached now, without making it or changing its place in the order."""
        with self._lock:
            hit = self._data.get((id(obj), key))
        return hit is not None and hit[0] is obj

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def per_model(fn: Callable[[Any], T]) -> Callable[[Any], T]:
    """fn(model) computed once per model object (a pure function of a frozen ModelSpec, e.g. a sum over its
    tensors that every plan of `best` would otherwise repeat)."""
    memo = IdMemo(256)

    def wrapper(model: Any) -> T:
        return memo.get(model, None, lambda: fn(model))
    wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ = fn.__name__, fn.__doc__, fn  # type: ignore[attr-defined]
    return wrapper
