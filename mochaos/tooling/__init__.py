"""Bottom-layer tooling shared by every layer: run CLIs, wait on conditions, apply manifests.

Nothing here knows about clusters, operators or claims; ``mochaos.cluster`` and
``mochaos.operator`` build on it.
"""
