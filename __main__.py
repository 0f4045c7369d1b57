"""`python -m ruler ...` is the `ruler` command."""

import sys

from ruler.cli import main

sys.exit(main())
