"""A columnar table: one numpy array per column, all of one length."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from .schema import TableSchema


class Table:
    """Columns of one schema; ``table.start_ns`` or ``table["start_ns"]`` gives a column."""

    __slots__ = ("_cols", "schema")

    def __init__(self, schema: TableSchema, columns: Mapping[str, np.ndarray] | None = None) -> None:
        self.schema = schema
        cols: dict[str, np.ndarray] = {}
        columns = columns or {}
        n = None
        for name, dtype in schema.columns:
            arr = np.asarray(columns.get(name, np.empty(0, dtype)), dtype=dtype)
            if arr.ndim != 1:
                raise ValueError(f"{schema.name}.{name} must be one-dimensional")
            if n is None:
                n = len(arr)
            elif len(arr) != n:
                raise ValueError(f"{schema.name}.{name} has {len(arr)} rows, expected {n}")
            cols[name] = arr
        self._cols = cols

    @classmethod
    def empty(cls, schema: TableSchema) -> Table:
        """A table of no rows."""
        return cls(schema)

    def __getitem__(self, column: str) -> np.ndarray:
        return self._cols[column]

    def __getattr__(self, column: str) -> np.ndarray:
        try:
            return self._cols[column]
        except KeyError:
            raise AttributeError(column) from None

    def __len__(self) -> int:
        return len(next(iter(self._cols.values()))) if self._cols else 0

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    def columns(self) -> dict[str, np.ndarray]:
        """The column arrays by name (the dict is a copy; the arrays are not)."""
        return dict(self._cols)

    def take(self, rows: np.ndarray | slice) -> Table:
        """A new table of the given rows (an index array or a slice)."""
        return Table(self.schema, {k: v[rows] for k, v in self._cols.items()})

    @property
    def nbytes(self) -> int:
        """Bytes held by the column arrays."""
        return sum(v.nbytes for v in self._cols.values())

    def equals(self, other: Table) -> bool:
        """True when both tables have the same schema and identical columns."""
        return self.schema == other.schema and all(
            np.array_equal(self._cols[k], other._cols[k]) for k in self._cols
        )

    def __repr__(self) -> str:
        return f"<Table {self.schema.name}: {len(self)} rows>"
