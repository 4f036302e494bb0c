"""The controller runtime the model's reconcilers run on: the client over the caches, the loop
(the informers, the REST client and the work queue come from mochaos.ctrl)."""
