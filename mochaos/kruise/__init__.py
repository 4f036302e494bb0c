"""OpenKruise for real on the local cluster: kruise-manager built from its Go module.

The operator under test turns its CNSets, LogSets and DNSets into OpenKruise CloneSets
and Advanced StatefulSets; on the local cluster the real kruise-manager, of the version
the operator pins (:mod:`.pin`), turns those into kwok pods. :mod:`.module` knows the Go
module (the wrapper that builds it, its CRDs and webhook configurations); :mod:`.manager`
runs it as a supervised process of the cluster. See docs/kruise.md.
"""
