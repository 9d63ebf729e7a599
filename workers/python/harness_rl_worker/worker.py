"""The rollout worker: claims rollouts of a run, keeps each attempt alive with heartbeats, runs the run's
harness command in its sandbox, streams the output back and finishes the attempt with the reward. A run
with `harness.mode: persistent` has its command started once per concurrency slot and fed its rollouts
on stdin (persistent.py, as daemon/worker/persistent.ts does).

The same protocol as `harness-rl worker` (daemon/cluster/worker.ts), its bodies checked against the
schema generated from daemon/protocol/worker.ts. A run with `harness.reward: verifier` has its verifier
run after the harness (verifier.py, as daemon/worker/worker.ts does).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from .persistent import AttemptFailed, PersistentHarness
from .protocol import ProtocolError, check, fields
from .sandbox import _die_with_parent, child_environ, kill_group, open_sandbox
from .verifier import VerifierFailed, final_output, no_reward_text, run_verifier

FINISH_FIELDS = fields("FinishBody")

STDOUT_TAIL = 64 * 1024


def _failure_of(why: str | None, phase: str, err: Exception) -> dict | None:
    """The failure an attempt ended with, as the daemon's FinishBody names it."""
    if why in ("timed_out", "verifier_timed_out"):
        return {"kind": "infrastructure", "reason": "deadline"}
    if why == "stopped":
        return {"kind": "infrastructure", "reason": "worker_stopped"}
    if why == "cancelled":
        return None
    if isinstance(err, (AttemptFailed, VerifierFailed)):
        return err.failure
    return {"kind": "harness", "reason": "verifier" if phase == "verifier" else "error"}


class DaemonError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Daemon:
    def __init__(self, url: str, token: str, tls_ca: str | None = None):
        self.url = url.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cafile=tls_ca) if url.startswith("https:") else None

    def post(self, path: str, body: dict, timeout: float = 40) -> tuple[int, dict | None]:
        return self.call("POST", path, body, timeout=timeout)

    def call(
        self, method: str, path: str, body: dict | None = None, key: str | None = None, timeout: float = 40
    ) -> tuple[int, dict | None]:
        """`key`: another bearer than the worker's (a rollout's key, to read that rollout back)."""
        headers = {"authorization": f"Bearer {key or self.token}"}
        if body is not None:
            headers["content-type"] = "application/json"
        req = urllib.request.Request(
            self.url + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers=headers,
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.context) as r:
                text = r.read()
                return r.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                message = json.loads(text)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = f"HTTP {e.code} {text[:200]}"
            raise DaemonError(e.code, message) from None


def reward_from_stdout(stdout: str) -> float | None:
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    try:
        value = json.loads(lines[-1]).get("reward")
    except (ValueError, AttributeError):
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def rollout_env(claim: dict, daemon_url: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": claim["openai_base_url"],
        "OPENAI_API_KEY": claim["key"],
        "ANTHROPIC_BASE_URL": claim["anthropic_base_url"],
        "ANTHROPIC_API_KEY": claim["key"],
        "HARNESS_RL_URL": daemon_url,
        "HARNESS_RL_ROLLOUT_ID": claim["rollout"]["id"],
        "HARNESS_RL_KEY": claim["key"],
        "HARNESS_RL_TASK": json.dumps(claim.get("input")),
        "HARNESS_RL_MODEL": claim["model"],
    }


@dataclass
class Summary:
    succeeded: int = 0
    failed: int = 0
    timed_out: int = 0
    cancelled: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, status: str) -> None:
        with self.lock:
            setattr(self, status, getattr(self, status) + 1)


class Worker:
    def __init__(self, daemon: Daemon, run_id: str, name: str, cwd: str | None = None, log=print):
        self.daemon = daemon
        self.run_id = run_id
        self.name = name
        self.cwd = cwd or os.getcwd()
        self.log = log
        self.stop = threading.Event()
        self.summary = Summary()
        self.persistent: PersistentHarness | None = None
        self._persistent_lock = threading.Lock()

    def run(self, concurrency: int) -> Summary:
        """Claims and runs rollouts on `concurrency` threads until the run ends or `stop` is set."""
        slots = [threading.Thread(target=self._slot, daemon=True) for _ in range(max(1, concurrency))]
        for t in slots:
            t.start()
        for t in slots:
            t.join()
        if self.persistent:
            self.persistent.close()
        return self.summary

    def _persistent_harness(self, argv: list[str]) -> PersistentHarness:
        with self._persistent_lock:
            if self.persistent is None:
                self.persistent = PersistentHarness(argv, self.cwd, self.daemon.url)
            return self.persistent

    def _slot(self) -> None:
        backoff = 0.2
        while not self.stop.is_set():
            body = check("ClaimBody", {"worker": self.name, "wait_ms": 2000})
            try:
                status, claim = self.daemon.post(f"/api/runs/{self.run_id}/claim", body)
                backoff = 0.2
            except DaemonError as e:
                if e.status in (404, 410):
                    self.log(f"run {self.run_id}: {e}")
                    self.stop.set()
                    return
                if e.status == 401:
                    # A wrong token, or the run's worker credential was revoked (the run ended).
                    self.log(f"run {self.run_id}: {e}")
                    self.stop.set()
                    return
                self.log(f"claim failed: {e}")
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 5)
                continue
            except (OSError, ValueError) as e:
                self.log(f"claim failed: {e}")
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 5)
                continue
            if status == 200 and claim:
                try:
                    checked = check("Claimed", claim)
                except ProtocolError as e:
                    self._refuse_claim(claim, e)
                    return
                self._run_one(checked)

    def _refuse_claim(self, claim: dict, err: ProtocolError) -> None:
        """A claim this worker cannot read (a daemon of another version): hand the attempt back as
        infrastructure (retried, never a reward), say why, and stop, rather than end the slot silently."""
        self.log(
            f"run {self.run_id}: the daemon's claim does not match this worker's protocol ({err}); "
            "install the harness-rl-worker package of the daemon's version. Stopping."
        )
        try:
            self._finish(
                claim,
                "failed",
                f"the worker could not read its claim: {err}",
                None,
                None,
                {"kind": "infrastructure", "reason": "worker_stopped"},
            )
        except (KeyError, TypeError, ProtocolError):
            pass
        self.stop.set()

    def _heartbeat(self, claim: dict, over: threading.Event, end) -> None:
        """Beats every heartbeat_s until `over`; wakes twice a second to notice the worker stopping."""
        attempt, rollout = claim["attempt"]["id"], claim["rollout"]["id"]
        due = time.monotonic() + max(0.2, claim["heartbeat_s"])
        while not over.wait(0.5):
            if self.stop.is_set():
                end("stopped")
                return
            if time.monotonic() < due:
                continue
            due = time.monotonic() + max(0.2, claim["heartbeat_s"])
            try:
                _, reply = self.daemon.post(f"/api/attempts/{attempt}/heartbeat", {"rollout_id": rollout})
                if check("HeartbeatReply", reply or {})["cancel"]:
                    end("cancelled")
            except DaemonError as e:
                if e.status in (404, 409):
                    end("cancelled")
            except (OSError, ValueError):
                pass

    def _run_one(self, claim: dict) -> None:
        over = threading.Event()
        why: list[str] = []

        def end(reason: str) -> None:
            if not why:
                why.append(reason)
            over.set()

        def timer(reason: str) -> threading.Timer:
            t = threading.Timer(claim["timeout_s"], lambda: end(reason))
            t.daemon = True
            t.start()
            return t

        threading.Thread(target=self._heartbeat, args=(claim, over, end), daemon=True).start()
        timers = [timer("timed_out")]
        verify = claim.get("verifier") if claim.get("reward") == "verifier" else None
        status, error, reward, verdict, phase, failure = "succeeded", None, None, None, "harness", None
        try:
            reward, stdout = self._harness(claim, over)
            if why:
                raise RuntimeError(why[0])
            # A harness may post its reward itself; one that neither printed nor posted one fails its
            # attempt (a missing reward is never taken as 0).
            if not verify and reward is None and self._read_rollout(claim)["reward"] is None:
                raise AttemptFailed(
                    no_reward_text(claim.get("mode"), claim["rollout"]["id"], stdout),
                    "harness",
                    "no_reward",
                )
            if verify:
                # The verifier gets a timeout of its own (harness.timeout_s), after the harness's.
                phase = "verifier"
                timers[0].cancel()
                timers.append(timer("verifier_timed_out"))
                verdict = run_verifier(verify, self._verifier_input(claim, reward, stdout), self.cwd, over)
                if why:
                    raise RuntimeError(why[0])
                reward = verdict["reward"]
        except Exception as e:  # noqa: BLE001 - any failure fails the attempt, with its message
            reason = why[0] if why else None
            failure = _failure_of(reason, phase, e)
            status = {"timed_out": "timed_out", "cancelled": "cancelled"}.get(reason or "", "failed")
            error = str(e)
            if status == "timed_out":
                error = f"timed out after {claim['timeout_s']}s"
            elif reason == "verifier_timed_out":
                error = f"verifier timed out after {claim['timeout_s']}s"
            elif phase == "verifier" and not reason:
                error = f"verifier failed: {e}"
            if reason == "stopped" or (self.stop.is_set() and not reason):
                error = "the worker stopped"
            reward, verdict = None, None
        finally:
            for t in timers:
                t.cancel()
            over.set()
        self.summary.add(status)
        self.log(
            f"rollout {claim['rollout']['id']} {status}"
            + (f" reward={reward}{' (verifier)' if verdict else ''}" if reward is not None else "")
            + (f": {error}" if error else "")
        )
        if status != "cancelled":  # a cancelled attempt was ended by the daemon already
            self._finish(claim, status, error, reward, verdict, failure)

    def _finish(
        self, claim: dict, status: str, error: str | None, reward, verdict: dict | None, failure: dict | None
    ) -> None:
        attempt = claim["attempt"]["id"]
        body = {"status": status, "rollout_id": claim["rollout"]["id"]}
        if error:
            body["error"] = error[-10_000:]
        if reward is not None:
            body["reward"] = reward
        if verdict is not None:
            body["reward_source"] = "verifier"
            if "detail" in verdict:
                body["reward_detail"] = verdict["detail"]
        # The failure's kind and reason, where this daemon's protocol has them (infrastructure ones are
        # retried and never count as a reward).
        if failure and "failure" in FINISH_FIELDS:
            body["failure"] = failure
        try:
            self.daemon.post(f"/api/attempts/{attempt}/finish", check("FinishBody", body))
        except DaemonError as e:
            if e.status != 409:
                self.log(f"finish {attempt}: {e}")
        except (OSError, ValueError) as e:
            self.log(f"finish {attempt}: {e}")

    def _read_rollout(self, claim: dict) -> dict:
        """The claimed rollout as the daemon has it now, read with the rollout's own key."""
        rid = claim["rollout"]["id"]
        try:
            _, detail = self.daemon.call("GET", f"/api/rollouts/{rid}", key=claim["key"])
        except (DaemonError, OSError, ValueError) as e:
            raise RuntimeError(f"could not read rollout {rid} back: {e}") from None
        return detail or {}

    def _verifier_input(self, claim: dict, reward: float | None, stdout: str) -> dict:
        """What the verifier is given (the rollout's llm calls read back for the harness's final output)."""
        detail = self._read_rollout(claim)
        return {
            "run_id": claim["rollout"].get("run_id"),
            "rollout_id": claim["rollout"]["id"],
            "attempt_id": claim["attempt"]["id"],
            "task": claim.get("input"),
            "output": final_output(detail.get("llm_calls") or [], claim["attempt"]["id"]),
            "stdout": stdout,
            "harness_reward": reward if reward is not None else detail.get("reward"),
        }

    def _harness(self, claim: dict, over: threading.Event) -> tuple[float | None, str]:
        argv = claim.get("command") or []
        if not argv:
            raise RuntimeError("the run names no harness.command")
        env = rollout_env(claim, self.daemon.url)
        if claim.get("mode") == "persistent":
            stream = OutputStream(self.daemon, claim)
            try:
                return self._persistent_harness(argv).rollout(claim, env, over, stream.add)
            finally:
                stream.close()
        try:
            box = open_sandbox(
                claim.get("sandbox", "none"),
                claim["attempt"]["id"],
                argv,
                self.cwd,
                list(env),
                self.daemon.url,
                claim["timeout_s"],
            )
        except Exception as e:  # noqa: BLE001 - whatever stopped the sandbox, the harness is not to blame
            raise AttemptFailed(f"sandbox did not start: {e}", "infrastructure", "sandbox_start") from e
        try:
            return self._process(claim, box.argv, env, over)
        finally:
            box.close()

    def _process(
        self, claim: dict, argv: list[str], env: dict, over: threading.Event
    ) -> tuple[float | None, str]:
        child = subprocess.Popen(
            argv,
            cwd=self.cwd,
            env={**child_environ(), **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        stream = OutputStream(self.daemon, claim)
        stdout = []

        def kill() -> None:
            over.wait()
            if child.poll() is None:
                kill_group(child)

        threading.Thread(target=kill, daemon=True).start()
        for line in iter(child.stdout.readline, b""):
            text = line.decode(errors="replace")
            stdout.append(text)
            stream.add(text)
        code = child.wait()
        stream.close()
        out = "".join(stdout)[-STDOUT_TAIL:]
        if code != 0:
            tail = "\n".join(out.strip().splitlines()[-20:])
            message = f"harness exit code {code}" + (f": {tail}" if tail else "")
            # 75 is EX_TEMPFAIL: something around the harness failed, not the harness.
            if code == 75:
                raise AttemptFailed(message, "infrastructure", "reported")
            raise AttemptFailed(message, "harness", "exit")
        return reward_from_stdout(out), out


class OutputStream:
    """Sends a harness's output to the daemon as it comes, at most every half second."""

    def __init__(self, daemon: Daemon, claim: dict):
        self.daemon = daemon
        self.path = f"/api/attempts/{claim['attempt']['id']}/output"
        self.rollout = claim["rollout"]["id"]
        self.pending: list[str] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def add(self, text: str) -> None:
        with self.lock:
            self.pending.append(text)

    def _send(self) -> None:
        with self.lock:
            chunk, self.pending = "".join(self.pending), []
        if chunk:
            try:
                self.daemon.post(
                    self.path, check("OutputBody", {"rollout_id": self.rollout, "chunk": chunk[-1_000_000:]})
                )
            except (DaemonError, OSError, ValueError):
                pass

    def _loop(self) -> None:
        while not self.done.wait(0.5):
            self._send()
        self._send()

    def close(self) -> None:
        self.done.set()
        self.thread.join()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="harness-rl-worker", description=__doc__)
    p.add_argument("--url", required=True, help="the daemon's URL")
    p.add_argument("--run", required=True)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--cwd", help="the folder the harness command runs in")
    p.add_argument("--tls-ca", help="PEM file with the CA of the daemon's certificate")
    p.add_argument("--name", default=f"{socket.gethostname()}:{os.getpid()}")
    a = p.parse_args(argv)
    # The run's worker credential (what a Ray job gets), or the daemon token.
    token = os.environ.get("HARNESS_RL_WORKER_KEY") or os.environ.get("HARNESS_RL_TOKEN", "")
    worker = Worker(Daemon(a.url, token, a.tls_ca), a.run, a.name, a.cwd)
    signal.signal(signal.SIGTERM, lambda *_: worker.stop.set())
    s = worker.run(a.concurrency)
    print(json.dumps({k: getattr(s, k) for k in ("succeeded", "failed", "timed_out", "cancelled")}))
    return 0
