"""The numeric engine: argument checks, the backend table, the kernels written once against it,
and NumPy's accurate table builder. Nothing here knows a convention or a model; everything
above builds on it. Internal: its names may change between versions."""
