"""harness-rl's rollout worker for Ray nodes (the protocol of `harness-rl worker`, in Python)."""
