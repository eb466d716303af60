"""``python -m toolkit.cli``: the ``systolic`` command."""
import sys

from . import main

sys.exit(main())
