"""The numeric engine: argument checks, the registry behind the preset tables, the backend
table, the kernels written once against it, and NumPy's accurate table builder. Nothing here
knows a convention or a model; everything above builds on it. Internal: its names may change
between versions, and each module's ``__all__`` is its interface to the layers above."""

__all__ = ["backends", "checks", "kernels", "registry", "rotation"]
