"""Container images mo-chaos builds on this machine when no registry can serve them.

Each image is assembled from Go modules (the module proxy), Debian packages
(debootstrap) and the operator's checkout, at build time; nothing of those
projects is kept in this repository.
"""
