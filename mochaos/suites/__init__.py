"""The packaged suites (``pytest --pyargs mochaos.suites``; ``suites/`` in a checkout)."""

SEED = "test_scalein_during_migration and not race and not sweep and not held"
"""The ``-k`` expression that selects the seed scenario alone (the production incident as it
happened) among the suites' scalein_during_migration variants."""
