"""The Python worker's persistent harness against real harness processes, with daemon/worker/persistent.ts's
semantics: rollouts one after another in one process, its other lines as output, a crash failing the
held rollout as harness_crashed and a new process for the next, an aborted rollout killing its process,
the harness's error answers, the container argv of a process that takes rollouts on stdin, and a real
run of one in a Podman and a Docker container (scripts/setup-sandbox-image.sh's image), its proxy reached
through the sandbox's forward.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness_rl_worker.persistent import AttemptFailed, PersistentHarness, answer_of
from harness_rl_worker.sandbox import bubblewrap_argv, container_argv

# Answers each rollout line; task "crash" exits, "hang" never answers, "error"/"infra" answer an error.
HARNESS = r"""
import json, os, sys, time
if os.environ.get("HARNESS_RL_PERSISTENT") != "1":
    sys.exit(9)
print("started", os.getpid(), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    task, rid = m["task"], m["rollout_id"]
    print("working on", rid, m["env"]["OPENAI_API_KEY"], flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    time.sleep(0.2)  # stderr is another pipe: let it be read while the rollout is held
    if task == "crash":
        print("segfault, or so", file=sys.stderr, flush=True)
        os._exit(139)
    if task == "hang":
        time.sleep(600)
    if task == "error":
        print(json.dumps({"rollout_id": rid, "error": "no answer found"}), flush=True)
    elif task == "infra":
        print(json.dumps({"rollout_id": rid, "error": "the tool server is down", "infrastructure": True}), flush=True)
    elif task == "posted":
        print(json.dumps({"rollout_id": rid}), flush=True)
    else:
        print(json.dumps({"rollout_id": "someone-else", "reward": 9}), flush=True)
        print(json.dumps({"rollout_id": rid, "reward": len(task) / 10, "pid": os.getpid()}), flush=True)
        print(json.dumps({"rollout_id": rid, "reward": len(task) / 10}), flush=True)
"""


def claim(n: int, task, timeout_s: float = 30) -> dict:
    return {
        "rollout": {"id": f"rol_{n}"},
        "attempt": {"id": f"att_{n}"},
        "input": task,
        "model": "m",
        "timeout_s": timeout_s,
        "sandbox": "none",
    }


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class PersistentRollouts(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        with open(os.path.join(self.dir, "harness.py"), "w") as f:
            f.write(HARNESS)
        self.harness = PersistentHarness([sys.executable, "harness.py"], self.dir, "http://127.0.0.1:1")
        self.addCleanup(self.harness.close)

    def rollout(self, n: int, task, over: threading.Event | None = None):
        out: list[str] = []
        reward, stdout = self.harness.rollout(
            claim(n, task), {"OPENAI_API_KEY": f"key{n}"}, over or threading.Event(), out.append
        )
        return reward, stdout, "".join(out)

    def pids(self) -> list[int]:
        return [p.child.pid for p in self.harness.all]

    def test_rollouts_one_after_another_in_one_process_with_their_output(self):
        reward, stdout, streamed = self.rollout(1, "abc")
        self.assertEqual(reward, 0.3)
        self.assertIn("working on rol_1 key1\n", stdout)
        self.assertIn('"rollout_id": "someone-else"', stdout)  # not this rollout's answer: output
        self.assertIn("to stderr", streamed)
        self.assertEqual(self.rollout(2, "abcde")[0], 0.5)
        self.assertEqual(self.harness.started, 1)
        self.assertEqual(self.rollout(3, "posted")[0], None)  # no reward: it posted it itself

    def test_a_crash_fails_the_held_rollout_as_harness_crashed_and_the_next_starts_a_new_process(self):
        self.rollout(1, "ab")
        first = self.pids()[0]
        with self.assertRaises(AttemptFailed) as e:
            self.rollout(2, "crash")
        self.assertEqual(e.exception.failure, {"kind": "infrastructure", "reason": "harness_crashed"})
        self.assertRegex(str(e.exception), r"(?s)ended \(exit code 139\).*started again: .*segfault, or so")
        self.assertEqual(self.rollout(3, "abcd")[0], 0.4)
        self.assertEqual(self.harness.started, 2)
        self.assertNotIn(first, [p.child.pid for p in self.harness.idle])

    def test_an_aborted_rollout_kills_its_process_and_the_next_runs_on_a_new_one(self):
        self.rollout(1, "ab")
        pid = self.pids()[0]
        over = threading.Event()
        threading.Timer(0.5, over.set).start()
        t0 = time.monotonic()
        with self.assertRaises(AttemptFailed):
            self.rollout(2, "hang", over)
        self.assertLess(time.monotonic() - t0, 5)
        until = time.monotonic() + 5
        while alive(pid) and time.monotonic() < until:
            time.sleep(0.05)
        self.assertFalse(alive(pid))
        self.assertEqual(self.rollout(3, "abc")[0], 0.3)
        self.assertEqual(self.harness.started, 2)

    def test_error_answers_fail_the_attempt_as_the_harness_or_as_infrastructure(self):
        with self.assertRaises(AttemptFailed) as e:
            self.rollout(1, "error")
        self.assertEqual(
            (str(e.exception), e.exception.failure["kind"]), ("harness: no answer found", "harness")
        )
        with self.assertRaises(AttemptFailed) as e:
            self.rollout(2, "infra")
        self.assertEqual(e.exception.failure, {"kind": "infrastructure", "reason": "reported"})
        self.assertEqual(self.harness.started, 1)  # an answered error keeps the process

    def test_close_ends_every_process(self):
        self.rollout(1, "a")
        pid = self.pids()[0]
        self.harness.close()
        self.assertFalse(alive(pid))
        with self.assertRaises(AttemptFailed) as e:
            self.rollout(2, "a")
        self.assertEqual(e.exception.failure["reason"], "worker_stopped")


def bubblewrap_runs() -> bool:
    try:
        return subprocess.run(bubblewrap_argv(["true"]), capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@unittest.skipUnless(bubblewrap_runs(), "bubblewrap does not run here")
class PersistentBubblewrap(unittest.TestCase):
    def test_the_process_runs_in_the_sandbox_for_all_its_rollouts(self):
        work = tempfile.mkdtemp(dir="/tmp")
        # A file in the host's /tmp: the sandbox's private /tmp must not show it (it may hold the paths
        # bound again into it, such as a checkout under /tmp, so its entries are not counted).
        fd, marker = tempfile.mkstemp(dir="/tmp")
        os.close(fd)
        self.addCleanup(os.unlink, marker)
        code = (
            "import json, os, sys\n"
            "for line in sys.stdin:\n"
            "    m = json.loads(line)\n"
            "    try:\n"
            "        open('written', 'w').close(); ok = 0\n"
            "    except OSError:\n"
            "        ok = 1\n"
            f"    seen = 10 if os.path.exists({marker!r}) else 0\n"
            "    print(json.dumps({'rollout_id': m['rollout_id'], 'reward': ok + seen}), flush=True)\n"
        )
        harness = PersistentHarness([sys.executable, "-c", code], work, "http://127.0.0.1:1")
        self.addCleanup(harness.close)
        for n in (1, 2):
            c = {**claim(n, "x"), "sandbox": "bubblewrap"}
            # Its folder read-only, and a /tmp of its own.
            self.assertEqual(harness.rollout(c, {}, threading.Event()), (1, ""))
        self.assertEqual(harness.started, 1)
        self.assertFalse(os.path.exists(os.path.join(work, "written")))


IMAGE = "localhost/harness-rl-sandbox:1"
# Hybrid cgroups on these machines: runc with cgroupfs runs where crun refuses (shared/notes/containers.md).
ENGINE = (
    {"runtime": "/usr/sbin/runc", "cgroup_manager": "cgroupfs"} if os.path.exists("/usr/sbin/runc") else {}
)


def engine_runs(engine: str) -> bool:
    """Whether `engine` runs the sandbox image here (as root, with socat for the proxy forward)."""
    if not shutil.which(engine) or os.geteuid() != 0 or not shutil.which("socat"):
        return False
    if engine == "docker" and not os.path.exists("/bin/busybox"):
        return False  # Docker's network holder runs the host's static busybox
    inspect = ["image", "exists", IMAGE] if engine == "podman" else ["image", "inspect", IMAGE]
    try:
        return subprocess.run([engine, *inspect], capture_output=True, timeout=10).returncode == 0
    except subprocess.TimeoutExpired:
        return False


class _Backend(http.server.BaseHTTPRequestHandler):
    """The daemon's proxy, as far as the harness sees it: answers a chat call with its key."""

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"choices": [{"message": {"content": self.headers["authorization"]}}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


# Per rollout: one chat call through the proxy with the rollout's key, and what it sees of its box.
BOXED = r"""
import json, os, sys, urllib.request
boot = os.urandom(4).hex()
for line in sys.stdin:
    m = json.loads(line)
    try:
        open("written", "w").close(); write = "wrote"
    except OSError as e:
        write = e.strerror
    req = urllib.request.Request(m["env"]["OPENAI_BASE_URL"] + "/chat/completions", data=b"{}",
                                 headers={"authorization": "Bearer " + m["env"]["OPENAI_API_KEY"]})
    said = json.load(urllib.request.urlopen(req, timeout=10))["choices"][0]["message"]["content"]
    print("SEEN " + json.dumps({"boot": boot, "write": write, "said": said, "uid": os.getuid()}), flush=True)
    print(json.dumps({"rollout_id": m["rollout_id"], "reward": 1}), flush=True)
"""


class PersistentInAContainer(unittest.TestCase):
    def run_boxed(self, box: dict) -> None:
        backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Backend)
        threading.Thread(target=backend.serve_forever, daemon=True).start()
        self.addCleanup(backend.server_close)
        self.addCleanup(backend.shutdown)
        url = f"http://127.0.0.1:{backend.server_address[1]}"
        work = tempfile.mkdtemp()
        with open(os.path.join(work, "harness.py"), "w") as f:
            f.write(BOXED)
        harness = PersistentHarness(["/usr/bin/python3", "harness.py"], work, url)
        self.addCleanup(harness.close)
        sandbox = {"container": {"image": IMAGE, "memory_mb": 256, "mounts": ["/usr"], **box}}
        seen = []
        for n in (1, 2):
            c = {**claim(n, "x"), "sandbox": sandbox}
            env = {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": f"key{n}"}
            reward, stdout = harness.rollout(c, env, threading.Event())
            self.assertEqual(reward, 1, stdout)
            seen.append(json.loads(stdout.split("SEEN ", 1)[1].splitlines()[0]))
        # One process, one container, for both rollouts; each rollout's own key reached the proxy.
        self.assertEqual(harness.started, 1)
        self.assertEqual(seen[0]["boot"], seen[1]["boot"])
        self.assertEqual([s["said"] for s in seen], ["Bearer key1", "Bearer key2"])
        # The run's folder is read-only in the container.
        self.assertEqual(seen[0]["write"], "Read-only file system")
        self.assertFalse(os.path.exists(os.path.join(work, "written")))
        engine = box.get("engine", "podman")
        (name,) = [p.box.argv[p.box.argv.index("--name") + 1] for p in harness.all]

        def containers(*flags: str) -> str:
            ps = [engine, "ps", *flags, "-q", "--filter", f"name={name}"]
            return subprocess.run(ps, capture_output=True, text=True, timeout=30).stdout.strip()

        self.assertNotEqual(containers(), "")
        harness.close()
        self.assertEqual(containers("-a"), "")

    @unittest.skipUnless(
        engine_runs("podman"), "podman (as root, with socat) or the sandbox image is not here"
    )
    def test_podman_one_container_takes_its_process_rollouts_reaches_the_proxy_and_goes_with_it(self):
        # Hybrid cgroups on these machines: runc with cgroupfs runs where crun refuses
        # (shared/notes/containers.md); elsewhere Podman's defaults.
        runc = os.path.exists("/usr/sbin/runc")
        self.run_boxed({"runtime": "/usr/sbin/runc", "cgroup_manager": "cgroupfs"} if runc else {})

    @unittest.skipUnless(
        engine_runs("docker"), "docker (scripts/start-docker.sh) or the sandbox image is not here"
    )
    def test_docker_one_container_takes_its_process_rollouts_reaches_the_proxy_and_goes_with_it(self):
        self.run_boxed({"engine": "docker"})


class AnswerLine(unittest.TestCase):
    def test_only_a_valid_answer_naming_the_rollout(self):
        self.assertEqual(answer_of('{"rollout_id": "r", "reward": 1}', "r"), {"rollout_id": "r", "reward": 1})
        self.assertEqual(answer_of('{"rollout_id": "r"}', "r"), {"rollout_id": "r"})
        for line in [
            '{"rollout_id": "q", "reward": 1}',
            '{"rollout_id": "r", "reward": "1"}',
            '{"rollout_id": "r", "reward": null}',
            '{"rollout_id": "r", "reward": 1, "more": 2}',
            '{"rollout_id": "r", "error": 3}',
            "r said hello",
        ]:
            self.assertIsNone(answer_of(line, "r"), line)


class PersistentContainer(unittest.TestCase):
    def test_takes_stdin_and_has_no_time_limit_unless_the_container_names_one(self):
        box = {"image": "img", "network": "none"}
        args = ("att", ["h"], "/w", ["HARNESS_RL_PERSISTENT"], "http://127.0.0.1:1", 30)
        argv = container_argv(box, *args, persistent=True)
        self.assertIn("-i", argv)
        self.assertNotIn("--timeout", argv)
        self.assertIn("--timeout", container_argv({**box, "timeout_s": 600}, *args, persistent=True))
        spawned = container_argv(box, *args)
        self.assertNotIn("-i", spawned)
        self.assertEqual(spawned[spawned.index("--timeout") + 1], "30")


if __name__ == "__main__":
    unittest.main()
