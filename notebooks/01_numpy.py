# %% [markdown]
# # 01 · Positional encoding in NumPy
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/posenc-org/posenc/blob/main/notebooks/01_numpy.ipynb)

# %%
# On Colab, install posenc from GitHub; elsewhere `make lab` has already installed it.
import sys

if "google.colab" in sys.modules:
    # %pip install --quiet "posenc @ git+https://github.com/posenc-org/posenc@main"

# %%
import numpy as np
import posenc

np.set_printoptions(precision=8, suppress=True)
posenc.positional_encoding(3, 4)
