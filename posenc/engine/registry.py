"""Named entries of one kind (conventions, grid conventions, rope types, model families), in
the order they were registered: the one mechanism behind every preset table."""

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, overload

from . import checks

__all__ = ["Registry"]

E = TypeVar("E")
_MISSING: Any = object()


class Registry(Mapping[str, E], Generic[E]):
    """A read-only mapping ``name -> entry``, filled by :meth:`register`.

    ``kind`` names what an entry is and is the argument named when :meth:`lookup` refuses a
    name ("convention", "rope_type"). Indexing an unknown name raises ``KeyError``, as a dict.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, E] = {}

    @overload
    def register(self, name: str) -> Callable[[E], E]: ...
    @overload
    def register(self, name: str, entry: E) -> E: ...
    def register(self, name: str, entry: Any = _MISSING) -> Any:
        """Add ``entry`` under ``name`` and return it; without ``entry``, a decorator that does."""
        if entry is _MISSING:
            return lambda decorated: self.register(name, decorated)
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered already")
        self._entries[name] = entry
        return entry

    def check(self, name: str, argument: str | None = None) -> str:
        """``name`` if it is registered, else a ValueError "ARGUMENT must be one of ...; got X"
        (``checks.check_choice``; ARGUMENT is ``kind`` unless given)."""
        return checks.check_choice(name, self.names(), argument or self.kind)

    def lookup(self, name: str, argument: str | None = None) -> E:
        """The entry ``name``, checked as :meth:`check` does."""
        return self._entries[self.check(name, argument)]

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)

    def __getitem__(self, name: str) -> E:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self._entries!r})"
