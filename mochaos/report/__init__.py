"""The report layer: run folders, JUnit properties, incident timelines, artifacts, summaries.

Every function here is a pure transformation of recorded data (History, Verdicts,
ScenarioResult) into files; nothing talks to a cluster.
"""
