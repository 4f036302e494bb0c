"""The interposer: a reverse proxy between the operator under test and the apiserver.

One per running operator (per test namespace): the operator talks to the apiserver through it
(its kubeconfig is the interposer's), everything else of mo-chaos talks to the apiserver
directly. The scenario controls it through rules — hold or fail a write, crash the operator
right after one, freeze or coalesce what its watches deliver, answer its first list from an
earlier state (docs/interleaving.md) — and the recorder reads its journal into the history.
The program is a Go module of its own (``go/interposer``), built like the other Go programs
mo-chaos builds (:mod:`.interposer_build`); :mod:`.proxy` runs it, :mod:`.rules` says what
a rule is.
"""
