"""``python -m baselines.trainers``: train one run from a config file (``cli.main``)."""

from baselines.trainers.cli import main

raise SystemExit(main())
