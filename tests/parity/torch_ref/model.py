"""The PyTorch reference model lives in the package (python/grassflow/torch_model.py), one copy for the
parity tests and for grassflow.torch.load; this name keeps the tests' `from model import ...`. The tests' own
block kind (block_parallel.py) is registered here."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))

from grassflow.torch_model import *  # noqa: E402,F401,F403
import block_parallel  # noqa: E402,F401  (the test-only block kind, as every test program of the C side has it)
