"""``python -m ace.cli ...`` (as ``accelerate launch -m ace.cli train grpo ...`` runs it)."""

import sys

from ace.cli import main

sys.exit(main())
