"""A claim the worker cannot read (a daemon of another version sends a field this worker's schema does
not know): the attempt goes back as infrastructure, the worker says why and stops, instead of the slot
thread dying without a word and the attempt waiting for the heartbeat sweeper.
"""

from __future__ import annotations

import threading
import unittest

from harness_rl_worker.worker import Worker


class FakeDaemon:
    url = "http://127.0.0.1:1"

    def __init__(self, claim: dict):
        self.claim = claim
        self.posts: list[tuple[str, dict]] = []
        self.lock = threading.Lock()

    def post(self, path: str, body: dict, timeout: float = 40):
        with self.lock:
            self.posts.append((path, body))
        if path.endswith("/claim"):
            return 200, self.claim
        return 200, {}


class UnreadableClaimTest(unittest.TestCase):
    def test_hands_the_attempt_back_as_infrastructure_and_stops(self):
        claim = {
            "rollout": {"id": "ro_1"},
            "attempt": {"id": "at_1"},
            "a_field_from_a_newer_daemon": True,
        }
        daemon = FakeDaemon(claim)
        logs: list[str] = []
        worker = Worker(daemon, "run_1", "w", log=logs.append)  # type: ignore[arg-type]
        done = threading.Event()
        threading.Thread(target=lambda: (worker.run(1), done.set()), daemon=True).start()
        self.assertTrue(done.wait(10), "the worker kept claiming after a claim it cannot read")
        finishes = [body for path, body in daemon.posts if path == "/api/attempts/at_1/finish"]
        self.assertEqual(len(finishes), 1)
        self.assertEqual(finishes[0]["status"], "failed")
        self.assertEqual(finishes[0]["rollout_id"], "ro_1")
        self.assertEqual(finishes[0]["failure"], {"kind": "infrastructure", "reason": "worker_stopped"})
        self.assertIn("could not read its claim", finishes[0]["error"])
        self.assertTrue(any("does not match this worker's protocol" in line for line in logs), logs)


if __name__ == "__main__":
    unittest.main()
