"""The binaries mo-chaos obtains, cached by version in ``~/.cache/mochaos/bin``.

A :class:`~.component.Component` is one cached group of binaries with a stamp saying how it
was obtained; :func:`.obtain.obtain` puts components into the cache, downloading official
release binaries where ``MOCHAOS_BINARIES`` allows (:mod:`.download`) and building the rest
from Go modules (:mod:`.go`) with each component's recipe. :mod:`.control_plane` holds the
local cluster's components and recipes; the MatrixOne double and kruise-manager keep theirs
in their own units (``doubles/matrixone/build.py``, ``kruise/kruise_build.py``), the kind path in
``images/go_tools.py``.
"""
