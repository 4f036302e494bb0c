"""Where a real operator comes from: a checkout (``checkout``) or a git URL mirrored in the
cache (``git_source``), the manager built from it (``manager_build``), the chart taken from
it (``chart_source``) and installed with Helm (``helm``)."""
