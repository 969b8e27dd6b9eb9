"""The hook as the agents run it: ``python -I -S <this file> <agent>``.

``-I -S`` start the interpreter isolated and without the ``site`` module: no scan of
site-packages and its ``.pth`` files (a virtual environment's run code at every start), no user
site, no ``PYTHON*`` variables. The hook needs only the standard library and the pure modules
of this package, so the directory holding ``engram`` is put on the path by hand, after the
standard library (nothing installed can shadow a standard module).
"""

import os
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from engram.hooks.client import main

if __name__ == "__main__":
    sys.exit(main())
