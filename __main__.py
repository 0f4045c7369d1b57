"""`python -m ruler ...` is the `ruler` command."""

import sys

from ruler.commands.main import main

sys.exit(main())
