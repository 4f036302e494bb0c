"""The Go programs of the kind path: kruise's replace block carried into its wrapper."""

from __future__ import annotations

from mochaos.images.go_tools import KRUISE_PINS, _replace_block

GOMOD = """module github.com/openkruise/kruise

go 1.18

require (
\tk8s.io/api v0.22.6
)

// Replace to match K8s 1.22.6
replace (
\tk8s.io/api => k8s.io/api v0.22.6
\tk8s.io/kubernetes => k8s.io/kubernetes v1.22.6 // pinned
)

replace github.com/x/y => github.com/x/y v1.0.0
"""


def test_every_replace_directive_is_repeated_one_per_line() -> None:
    assert _replace_block(GOMOD) == [
        "replace k8s.io/api => k8s.io/api v0.22.6",
        "replace k8s.io/kubernetes => k8s.io/kubernetes v1.22.6",
        "replace github.com/x/y => github.com/x/y v1.0.0",
    ]


def test_reflect2_is_raised_to_the_fixed_release() -> None:
    assert "github.com/modern-go/reflect2@v1.0.2" in KRUISE_PINS
