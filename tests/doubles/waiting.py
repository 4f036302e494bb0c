"""The doubles' tests wait up to 20 s by default (a reconcile, a watch round trip and a
kwok pod transition on a loaded machine)."""

from __future__ import annotations

from functools import partial

from support.polling import wait_until

wait_for = partial(wait_until, timeout=20.0)
