"""Load the mo-chaos pytest plugin for suites/ and tests/."""

pytest_plugins = ["chaos.plugin"]
