"""A persistent harness (`harness.mode: persistent`), as daemon/worker/persistent.ts runs it.

The command starts once per concurrency slot with HARNESS_RL_PERSISTENT=1 and takes rollouts one after
another: one JSON line per rollout on its stdin ({rollout_id, attempt_id, task, model, env}), answered by
one stdout line {"rollout_id", "reward"} or {"rollout_id", "error", "infrastructure"?}
(daemon/protocol/persistent.ts); every other line is the rollout's output. A process that dies while it
holds a rollout fails that attempt as infrastructure (harness_crashed) and the next rollout starts a new
one; one whose rollout is aborted (deadline, cancel, the worker stopping) is killed. Each process runs in
the run's sandbox (bubblewrap, or a container of its own that lives as long as the process).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import threading
from collections.abc import Callable

from .sandbox import OpenSandbox, _die_with_parent, child_environ, kill_group, open_sandbox

PERSISTENT_ENV = "HARNESS_RL_PERSISTENT"
STDOUT_TAIL = 64 * 1024
STDERR_TAIL = 4000
# How long a killed process may take to close its output before its rollout is given up on anyway.
KILL_GRACE_S = 5.0


class AttemptFailed(Exception):
    """A rollout's failure with its kind and reason (daemon/protocol/failures.ts)."""

    def __init__(self, message: str, kind: str, reason: str):
        super().__init__(message)
        self.failure = {"kind": kind, "reason": reason}


def answer_of(line: str, rollout_id: str) -> dict | None:
    """The harness's answer in a stdout line, when the line is a valid one for this rollout."""
    if rollout_id not in line:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("rollout_id") != rollout_id:
        return None
    keys = set(value) - {"rollout_id"}
    if keys <= {"reward"}:
        reward = value.get("reward")
        if reward is None and "reward" not in value:
            return value
        finite = isinstance(reward, (int, float)) and not isinstance(reward, bool) and math.isfinite(reward)
        return value if finite else None
    if "error" in keys and keys <= {"error", "infrastructure"}:
        ok = isinstance(value["error"], str) and isinstance(value.get("infrastructure", False), bool)
        return value if ok else None
    return None


class _Pending:
    def __init__(self, rollout_id: str, on_output: Callable[[str], None] | None):
        self.rollout_id = rollout_id
        self.on_output = on_output
        self.stdout: list[str] = []
        self.size = 0
        self.done = threading.Event()
        self.answer: dict | None = None
        self.error: Exception | None = None

    def add(self, text: str) -> None:
        self.stdout.append(text)
        self.size += len(text)
        while self.size > STDOUT_TAIL and len(self.stdout) > 1:
            self.size -= len(self.stdout.pop(0))
        if self.on_output:
            self.on_output(text)


class HarnessProcess:
    """One running harness process: the rollout it holds, and its stdout cut into lines."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], box: OpenSandbox):
        self.box = box
        self.lock = threading.Lock()
        self.pending: _Pending | None = None
        self.exited = threading.Event()
        # Set once its sandbox is closed too (its container removed): close() waits for it.
        self.box_closed = threading.Event()
        self.stderr = ""
        self.child = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stderr(self) -> None:
        for raw in iter(lambda: self.child.stderr.readline(STDOUT_TAIL), b""):
            text = raw.decode(errors="replace")
            with self.lock:
                self.stderr = (self.stderr + text)[-STDERR_TAIL:]
                pending = self.pending
            if pending:
                pending.add(text)

    def _read_stdout(self) -> None:
        for raw in iter(lambda: self.child.stdout.readline(STDOUT_TAIL), b""):
            self._line(raw.decode(errors="replace").rstrip("\r\n"))
        code = self.child.wait()
        self._stderr_thread.join(1)
        for pipe in (self.child.stdin, self.child.stdout, self.child.stderr):
            try:
                pipe.close()
            except OSError:
                pass
        how = f"exit code {code}" if code >= 0 else f"signal {signal.Signals(-code).name}"
        tail = "\n".join(self.stderr.strip().splitlines()[-20:])
        self._die(
            AttemptFailed(
                f"the persistent harness process ended ({how}) while it ran the rollout; it is started again"
                + (f": {tail}" if tail else ""),
                "infrastructure",
                "harness_crashed",
            )
        )
        try:
            self.box.close()
        finally:
            self.box_closed.set()

    def _line(self, line: str) -> None:
        with self.lock:
            pending = self.pending
            answer = answer_of(line, pending.rollout_id) if pending else None
            if pending and answer:
                self.pending = None
        if not pending:
            return
        if answer:
            pending.answer = answer
            pending.done.set()
        else:
            pending.add(line + "\n")

    def _die(self, err: Exception) -> None:
        with self.lock:
            self.exited.set()
            pending, self.pending = self.pending, None
        if pending:
            pending.error = err
            pending.done.set()

    def run(
        self, message: dict, over: threading.Event, on_output: Callable[[str], None] | None = None
    ) -> tuple[dict, str]:
        """The answer to one rollout and the output it printed; `over` set: the process is killed."""
        pending = _Pending(message["rollout_id"], on_output)
        with self.lock:
            if self.exited.is_set():
                raise AttemptFailed(
                    "the persistent harness process had ended", "infrastructure", "harness_crashed"
                )
            self.pending = pending
        try:
            self.child.stdin.write((json.dumps(message) + "\n").encode())
            self.child.stdin.flush()
        except (OSError, ValueError):
            pass  # it ended: its stdout reader fails the rollout as harness_crashed
        while not pending.done.wait(0.2):
            if over.is_set():
                self.kill()
                if not pending.done.wait(KILL_GRACE_S):
                    self._die(AttemptFailed("the harness was killed", "infrastructure", "harness_crashed"))
                break
        if pending.error:
            raise pending.error
        return pending.answer or {}, "".join(pending.stdout)

    def kill(self) -> None:
        """SIGTERM to its process group, SIGKILL 2 s later (in the background)."""

        if self.child.poll() is None:
            threading.Thread(target=kill_group, args=(self.child,), daemon=True).start()

    def close(self) -> None:
        """stdin closed (a harness that reads it ends), killed a second later if it has not; returns
        once its sandbox is closed."""
        try:
            self.child.stdin.close()
        except OSError:
            pass
        try:
            self.child.wait(1)
        except subprocess.TimeoutExpired:
            self.kill()
        self.exited.wait(5)
        # Its container is removed by the thread that saw it end: a worker that exits right after
        # close() would otherwise leave it (and Docker's network holder) behind.
        self.box_closed.wait(30)


class PersistentHarness:
    """The processes of one persistent harness command: as many as rollouts run at once, reused."""

    def __init__(self, argv: list[str], cwd: str, daemon_url: str):
        if not argv:
            raise ValueError("the run names no harness.command")
        self.argv = argv
        self.cwd = cwd
        self.daemon_url = daemon_url
        self.lock = threading.Lock()
        self.idle: list[HarnessProcess] = []
        self.all: list[HarnessProcess] = []
        self.closed = False
        self.started = 0

    def _take(self, sandbox, timeout_s: float) -> HarnessProcess:
        with self.lock:
            while self.idle:
                p = self.idle.pop()
                if not p.exited.is_set():
                    return p
            self.started += 1
            n = self.started
        env = {PERSISTENT_ENV: "1"}
        try:
            box = open_sandbox(
                sandbox or "none",
                # Named for the process, not the attempt: it outlives its first rollout.
                f"persistent{os.getpid()}{n}{os.urandom(4).hex()}",
                self.argv,
                self.cwd,
                list(env),
                self.daemon_url,
                timeout_s,
                persistent=True,
            )
        except Exception as e:  # noqa: BLE001 - whatever stopped the sandbox, the harness is not to blame
            raise AttemptFailed(f"sandbox did not start: {e}", "infrastructure", "sandbox_start") from e
        try:
            p = HarnessProcess(box.argv, self.cwd, {**child_environ(), **env}, box)
        except OSError as e:
            box.close()
            raise AttemptFailed(f"could not start {self.argv[0]}: {e}", "harness", "exit") from e
        with self.lock:
            self.all = [q for q in self.all if not q.exited.is_set()] + [p]
        return p

    def rollout(
        self,
        claim: dict,
        env: dict[str, str],
        over: threading.Event,
        on_output: Callable[[str], None] | None = None,
    ) -> tuple[float | None, str]:
        """Runs one claimed rollout on an idle process (or a new one): its reward (None: it posted it
        itself) and its output."""
        if self.closed:
            raise AttemptFailed("the worker stopped", "infrastructure", "worker_stopped")
        proc = self._take(claim.get("sandbox"), claim["timeout_s"])
        message = {
            "rollout_id": claim["rollout"]["id"],
            "attempt_id": claim["attempt"]["id"],
            "task": claim.get("input"),
            "model": claim["model"],
            "env": env,
        }
        try:
            answer, stdout = proc.run(message, over, on_output)
        finally:
            with self.lock:
                reuse = not proc.exited.is_set() and not over.is_set() and not self.closed
                if reuse:
                    self.idle.append(proc)
            if not reuse and not proc.exited.is_set():
                proc.kill()
        if "error" in answer:
            if answer.get("infrastructure"):
                raise AttemptFailed(f"harness: {answer['error']}", "infrastructure", "reported")
            raise AttemptFailed(f"harness: {answer['error']}", "harness", "error")
        return answer.get("reward"), stdout

    def close(self) -> None:
        """Ends every process (and its sandbox)."""
        with self.lock:
            self.closed = True
            procs, self.idle = list(self.all), []
        threads = [threading.Thread(target=p.close, daemon=True) for p in procs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(40)  # a process: 1 s to end, 5 to be killed, its sandbox up to 30 to go
