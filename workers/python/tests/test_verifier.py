"""The Python worker's verifier against real verifier processes, with daemon/worker/verifier.ts's semantics:
the reward line, the messages of a verifier that fails, EX_TEMPFAIL as infrastructure, a stopped verifier
killed with its process group. Run: `python -m unittest discover -s workers/python/tests -t workers/python`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

from harness_rl_worker.verifier import (
    VerifierFailed,
    final_output,
    no_reward_text,
    parse_verdict,
    run_verifier,
)

# The texts daemon/worker/command.test.ts checks noRewardText against: one wording for both workers.
NO_REWARD = Path(__file__).resolve().parents[3] / "test" / "fixtures" / "no-reward.json"

INPUT = {
    "run_id": "run_1",
    "rollout_id": "rol_1",
    "attempt_id": "att_1",
    "task": {"a": 2},
    "output": "4",
    "stdout": "harness said hi\n",
    "harness_reward": 0.5,
}


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


class NoReward(unittest.TestCase):
    def test_a_harness_without_a_reward_is_told_what_to_print_and_where_as_the_daemon_tells_it(self):
        for case in json.loads(NO_REWARD.read_text()):
            with self.subTest(case["why"]):
                self.assertEqual(
                    no_reward_text(case["mode"], case["rollout_id"], case["stdout"]), case["text"]
                )


class VerdictLine(unittest.TestCase):
    def test_a_reward_object_a_bare_number_or_nothing(self):
        self.assertEqual(
            parse_verdict('noise\n{"reward": 1, "detail": {"passed": 3}}\n\n'),
            {"reward": 1, "detail": {"passed": 3}},
        )
        self.assertEqual(parse_verdict("0.25"), {"reward": 0.25})
        for bad in [
            "",
            "looks fine",
            '{"reward": "1"}',
            '{"reward": NaN}',
            "Infinity",
            "[1]",
            "true",
            '{"reward": true}',
        ]:
            self.assertIsNone(parse_verdict(bad), bad)


class FinalOutput(unittest.TestCase):
    def test_the_last_answered_call_of_the_attempt_without_side_calls(self):
        def chat(seq, text, **kw):
            response = {"choices": [{"message": {"content": text}}]}
            return {"seq": seq, "wire_api": "chat", "status": "ok", "response": response, "tags": [], **kw}

        calls = [
            chat(1, "first", attempt_id="att_1"),
            chat(2, "answer", attempt_id="att_1"),
            chat(3, "a title", attempt_id="att_1", tags=["side"]),
            chat(4, "failed", attempt_id="att_1", status="error"),
            chat(5, "other attempt", attempt_id="att_0"),
            {
                "seq": 6,
                "wire_api": "messages",
                "status": "ok",
                "attempt_id": "att_2",
                "tags": [],
                "response": {"content": [{"type": "text", "text": "from messages"}, {"type": "tool_use"}]},
            },
        ]
        self.assertEqual(final_output(calls, "att_1"), "answer")
        self.assertEqual(final_output(calls, "att_2"), "from messages")
        self.assertIsNone(final_output([], "att_1"))


class RunVerifier(unittest.TestCase):
    def run_it(self, code: str, stop: threading.Event | None = None) -> dict:
        return run_verifier(py(code), INPUT, os.getcwd(), stop or threading.Event())

    def test_it_reads_its_input_on_stdin_and_in_the_file_and_its_last_line_is_the_reward(self):
        code = (
            "import json, os, sys; i = json.load(sys.stdin); f = json.load(open(os.environ['HARNESS_RL_VERIFY_INPUT']));"
            "print('checking'); print(json.dumps({'reward': 1 + i['task']['a'], 'detail': {"
            "'same': i == f, 'task_env': json.loads(os.environ['HARNESS_RL_TASK']),"
            "'ids': [os.environ[k] for k in ('HARNESS_RL_ROLLOUT_ID', 'HARNESS_RL_ATTEMPT_ID', 'HARNESS_RL_RUN_ID')],"
            "'output': i['output'], 'stdout': i['stdout'], 'harness_reward': i['harness_reward']}}))"
        )
        self.assertEqual(
            self.run_it(code),
            {
                "reward": 3,
                "detail": {
                    "same": True,
                    "task_env": {"a": 2},
                    "ids": ["rol_1", "att_1", "run_1"],
                    "output": "4",
                    "stdout": "harness said hi\n",
                    "harness_reward": 0.5,
                },
            },
        )

    def test_it_does_not_get_the_workers_credentials(self):
        keep = {k: os.environ.get(k) for k in ("HARNESS_RL_WORKER_KEY", "HARNESS_RL_TOKEN")}
        os.environ.update(HARNESS_RL_WORKER_KEY="hrw_secret", HARNESS_RL_TOKEN="daemon-token")
        try:
            code = "import os, json; print(json.dumps({'reward': 1, 'detail': [os.environ.get('HARNESS_RL_WORKER_KEY'), os.environ.get('HARNESS_RL_TOKEN')]}))"
            self.assertEqual(self.run_it(code), {"reward": 1, "detail": [None, None]})
        finally:
            for k, v in keep.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_one_that_prints_no_reward_fails_as_the_verifier_naming_its_last_line(self):
        with self.assertRaises(VerifierFailed) as e:
            self.run_it("print('looks fine')")
        self.assertEqual(
            str(e.exception),
            'printed no reward: its last stdout line must be {"reward": x} or a number x, not "looks fine"',
        )
        self.assertEqual(e.exception.failure, {"kind": "harness", "reason": "verifier"})

    def test_one_that_exits_nonzero_fails_with_its_exit_code_and_stderr(self):
        with self.assertRaises(VerifierFailed) as e:
            self.run_it("import sys; print('pytest: 2 failed', file=sys.stderr); sys.exit(2)")
        self.assertEqual(str(e.exception), "exit code 2: pytest: 2 failed")
        self.assertEqual(e.exception.failure, {"kind": "harness", "reason": "verifier"})

    def test_exit_75_is_an_infrastructure_failure(self):
        with self.assertRaises(VerifierFailed) as e:
            self.run_it("import sys; print('judge unreachable', file=sys.stderr); sys.exit(75)")
        self.assertEqual(e.exception.failure, {"kind": "infrastructure", "reason": "reported"})
        self.assertIn(
            "verifier reported an infrastructure failure (exit code 75: judge unreachable)", str(e.exception)
        )

    def test_a_stopped_verifier_is_killed_with_its_children(self):
        with tempfile.TemporaryDirectory() as d:
            pidfile = os.path.join(d, "pid")
            code = (
                "import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
                f"open({pidfile!r}, 'w').write(str(c.pid)); time.sleep(60)"
            )
            stop = threading.Event()
            threading.Timer(1.5, stop.set).start()
            started = time.monotonic()
            with self.assertRaises(VerifierFailed):
                self.run_it(code, stop)
            self.assertLess(time.monotonic() - started, 10)
            with open(pidfile) as f:
                child = int(f.read())
            for _ in range(50):
                try:
                    os.kill(child, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                self.fail("the verifier's child outlived it")

    def test_no_command_is_a_verifier_failure(self):
        with self.assertRaises(VerifierFailed):
            run_verifier([], INPUT, None, threading.Event())
        with self.assertRaises(VerifierFailed) as e:
            run_verifier(["/nonexistent/verify"], INPUT, None, threading.Event())
        self.assertIn("could not start /nonexistent/verify", str(e.exception))


if __name__ == "__main__":
    unittest.main()
