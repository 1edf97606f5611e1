"""Pictures of the positional encoding, with matplotlib (imported with this module only).

Every function takes an optional ``ax`` (a new figure is made when it is ``None``), labels
its axes, adds a colorbar where colours carry values, and returns the ``Axes`` it drew on;
``grid`` draws many small panels and returns the ``Figure``. Nothing is shown: call
``plt.show()`` (or save the figure) yourself.

    import posenc, posenc.plot
    posenc.plot.heatmap(posenc.positional_encoding(100, 64))
"""

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .engine import checks
from .sinusoidal.geometry import wavelengths as _wavelengths
from .sinusoidal.tables import column_order, encode, positional_encoding

__all__ = ["columns", "dot_by_offset", "grid", "heatmap", "similarity", "wavelengths"]

DIVERGING = "RdBu_r"
# Each entry drawn as a flat square (no smoothing between neighbouring entries).
PIXELS = "nearest"


def _axes(ax, figsize):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    elif not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {checks.shown(ax)}")
    return ax


def _table(table):
    table = checks.as_array(table, "table", "a 2-D array of real numbers")
    if table.dtype.kind not in "biuf":
        raise TypeError(f"table must hold real numbers, got an array of {table.dtype}")
    if table.ndim != 2:
        raise ValueError(f"table must be 2-D (positions, d_model), got shape {table.shape}")
    return table


def _rows(values, name, count, what):
    """``values`` as a list of ints in ``0 .. count - 1`` (``what`` names them in the message)."""
    if isinstance(values, str) or not isinstance(values, Sequence | np.ndarray):
        raise TypeError(f"{name} must be a sequence of {what}, got {checks.shown(values)}")
    for value in values:
        if checks.check_int_at_least(value, name, 0) >= count:
            raise ValueError(f"{name} must be {what} (0 .. {count - 1}), got {value!r}")
    return [int(value) for value in values]


def heatmap(table: Any, ax: Axes | None = None, *, cmap: str = DIVERGING, vmin: float | None = None,
            vmax: float | None = None, colorbar: bool = True,
            xlabel: str = "dimension (column)", ylabel: str = "position", clabel: str = "value",
            title: str | None = None) -> Axes:
    """The table as an image: row ``p`` (position) downwards, column ``c`` across.

    ``vmin``/``vmax`` default to ``-m, m`` with ``m`` the largest absolute value (at least
    1e-12), so zero sits in the middle of the diverging colormap. Returns the ``Axes``;
    the image is ``ax.images[0]`` and the colorbar, if any, ``ax.images[0].colorbar``.
    """
    table = _table(table)
    colorbar = checks.check_bool(colorbar, "colorbar")
    ax = _axes(ax, (8, 4))
    if vmin is None or vmax is None:
        largest = max(float(np.max(np.abs(table))) if table.size else 1.0, 1e-12)
        vmin = -largest if vmin is None else vmin
        vmax = largest if vmax is None else vmax
    image = ax.imshow(table, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto",
                      interpolation=PIXELS)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, label=clabel)
    return ax


def columns(table: Any, cols: Sequence[int], ax: Axes | None = None, *, positions: Any = None,
            title: str | None = None) -> Axes:
    """Curves of the chosen columns of ``table`` against position, one labelled line each.

    ``positions`` (default ``0 .. len(table) - 1``) is the x value of each row.
    """
    table = _table(table)
    cols = _rows(cols, "cols", table.shape[1], "columns of the table")
    x = np.arange(len(table)) if positions is None else np.asarray(positions)
    if x.shape != (len(table),):
        raise ValueError(f"positions must be one value per row of the table, shape ({len(table)},); "
                         f"got shape {x.shape}")
    ax = _axes(ax, (8, 3.5))
    for col in cols:
        ax.plot(x, table[:, col], label=f"column {col}")
    ax.set_xlabel("position")
    ax.set_ylabel("PE(position, column)")
    ax.legend(loc="upper right", fontsize="small")
    if title is not None:
        ax.set_title(title)
    return ax


def wavelengths(d_model: int, base: float = 10000.0, ax: Axes | None = None, *, layout: str = "interleaved",
                title: str | None = None) -> Axes:
    """The wavelength of every column (log scale), sines and cosines marked apart.

    Dashed lines mark ``2*pi`` and ``base * 2*pi``, the two ends of the progression.
    """
    order = column_order(d_model, layout)
    lengths = _wavelengths(d_model, base)
    half = len(lengths)
    base = checks.check_base(base)
    ax = _axes(ax, (8, 3.5))
    col = np.arange(d_model)
    sine = order < half
    ax.plot(col[sine], lengths[order[sine] % half], "o", ms=4, label="sine columns")
    ax.plot(col[~sine], lengths[order[~sine] % half], "s", ms=4, fillstyle="none", label="cosine columns")
    ax.axhline(2 * np.pi, color="0.5", ls="--", lw=1)
    ax.axhline(2 * np.pi * base, color="0.5", ls="--", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("dimension (column)")
    ax.set_ylabel("wavelength (positions)")
    ax.legend(loc="upper left", fontsize="small")
    ax.set_title(title if title is not None else f"d_model={d_model}, base={base:g}, {layout}")
    return ax


def similarity(table: Any, ax: Axes | None = None, *, cmap: str = "viridis", colorbar: bool = True,
               title: str | None = None) -> Axes:
    """The matrix of dot products ``table @ table.T`` between positions, with a colorbar.

    For the sinusoidal table entry ``(p, q)`` depends only on ``q - p``: bands parallel to
    the diagonal.
    """
    table = _table(table)
    colorbar = checks.check_bool(colorbar, "colorbar")
    ax = _axes(ax, (5, 4.2))
    dots = table @ table.T
    image = ax.imshow(dots, cmap=cmap, aspect="equal",
                      interpolation=PIXELS)
    ax.set_xlabel("position q")
    ax.set_ylabel("position p")
    if colorbar:
        ax.figure.colorbar(image, label="PE(p) · PE(q)")
    if title is not None:
        ax.set_title(title)
    return ax


def dot_by_offset(table: Any, ax: Axes | None = None, *, positions: Sequence[int] = (0,),
                  title: str | None = None) -> Axes:
    """``PE(p) · PE(p + k)`` against the offset ``k``, one line per ``p`` in ``positions``.

    Each line covers the offsets that stay inside the table, ``-p .. len(table) - 1 - p``;
    for the sinusoidal table the lines lie on top of each other.
    """
    table = _table(table)
    positions = _rows(positions, "positions", len(table), "rows of the table")
    ax = _axes(ax, (8, 3.5))
    for p in positions:
        offsets = np.arange(len(table)) - p
        ax.plot(offsets, table @ table[p], lw=1, label=f"p = {p}")
    ax.axhline(0, color="0.5", lw=0.5)
    ax.set_xlabel("offset k")
    ax.set_ylabel("PE(p) · PE(p + k)")
    if len(positions) > 1:
        ax.legend(loc="upper right", fontsize="small")
    if title is not None:
        ax.set_title(title)
    return ax


def grid(length: int, d_models: Sequence[int], bases: Sequence[float], *, kind: str = "table",
         max_offset: int | None = None, figsize: tuple[float, float] | None = None) -> Figure:
    """Small multiples: one panel per ``(base, d_model)``, bases down, widths across.

    ``kind="table"`` draws each table as a heatmap (one shared colorbar, -1 .. 1);
    ``kind="offset"`` draws ``PE(0) · PE(k) / PE(0) · PE(0)`` for ``k = 0 .. max_offset``
    (default ``length - 1``), normalised so panels share a y axis. Returns the ``Figure``;
    ``fig.axes`` holds the panels row by row (then the colorbar, for tables).
    """
    checks.check_choice(kind, ("table", "offset"), "kind")
    length = checks.check_length(length)
    if max_offset is not None:
        if kind == "table":
            raise ValueError(f"max_offset is for kind='offset' only, got max_offset={max_offset!r} "
                             "with kind='table'")
        max_offset = checks.check_length(max_offset, "max_offset")
    for name, values in (("d_models", d_models), ("bases", bases)):
        if isinstance(values, str) or not isinstance(values, Sequence | np.ndarray):
            raise TypeError(f"{name} must be a sequence, got {checks.shown(values)}")
        if not len(values):
            raise ValueError(f"{name} must name at least one panel, got {checks.shown(values)}")
    rows, cols = len(bases), len(d_models)
    figsize = figsize or (2.6 * cols + 1, 2.1 * rows + 0.4)
    fig, axes = plt.subplots(rows, cols, figsize=figsize, layout="constrained", sharex=True, sharey=True,
                             squeeze=False)  # pragma: no mutate (squeeze=None is as false)
    image = None
    for r, base in enumerate(bases):
        for c, d_model in enumerate(d_models):
            ax = axes[r, c]
            if kind == "table":
                table = positional_encoding(length, d_model, base=base)
                image = ax.imshow(table, cmap=DIVERGING, vmin=-1, vmax=1, aspect="auto",
                                  interpolation=PIXELS, extent=(0, 1, length, 0))
                ax.set_xticks([0, 1], ["0", "d"])
            else:
                k = np.arange(length if max_offset is None else max_offset + 1)
                pe = encode(k, d_model, base=base, dtype=np.float64)
                ax.plot(k, pe @ pe[0] / (pe[0] @ pe[0]), lw=1)
                ax.axhline(0, color="0.5", lw=0.5)
            ax.set_title(f"d={d_model}, base={base:g}", fontsize="small")
            if c == 0:
                ax.set_ylabel("position" if kind == "table" else "PE(0)·PE(k) / PE(0)·PE(0)",
                              fontsize="small")
            if r == rows - 1:
                ax.set_xlabel("dimension (fraction of d)" if kind == "table" else "offset k",
                              fontsize="small")
    if image is not None:
        fig.colorbar(image, ax=axes, label="value", shrink=0.8)
    return fig
