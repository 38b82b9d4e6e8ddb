"""``python -m agentenvs.cli``: the same as the ``agentenvs`` command."""

import sys

from agentenvs.cli import main

sys.exit(main())
