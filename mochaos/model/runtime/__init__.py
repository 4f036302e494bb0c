"""The controller runtime the model's reconcilers run on: informers, work queues, the loop."""
