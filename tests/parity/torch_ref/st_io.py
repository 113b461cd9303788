"""The safetensors reader/writer lives in the package (python/grassflow/st_io.py); this name keeps the
tests' `import st_io`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))

from grassflow.st_io import *  # noqa: E402,F401,F403
