"""The verifier of a run with `harness.reward: verifier`, as daemon/worker/verifier.ts runs it.

After the harness finished a rollout, the worker runs `harness.verifier` (argv) in the run's folder with
`{run_id, rollout_id, attempt_id, task, output, stdout, harness_reward}` as JSON on stdin and in the file
$HARNESS_RL_VERIFY_INPUT (plus $HARNESS_RL_TASK, $HARNESS_RL_ROLLOUT_ID, $HARNESS_RL_ATTEMPT_ID and
$HARNESS_RL_RUN_ID). Its last stdout line, `{"reward": x, "detail": ...}` or a bare number x, is the
reward; one that exits nonzero or prints no reward fails the attempt (kind harness, reason verifier),
one that exits 75 (EX_TEMPFAIL) fails it as infrastructure: a rollout is never silently rewarded 0.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable

from .sandbox import child_environ, kill_group

EXIT_TEMPFAIL = 75
STDERR_TAIL = 4000
STDOUT_TAIL = 64 * 1024
VERDICT_FORM = '{"reward": x} or a number x'
UNTRAINABLE = ("no_choices", "no_token_ids", "logprobs_mismatch")


class VerifierFailed(Exception):
    """Why a verifier gave no reward, with its failure (daemon/protocol/failures.ts: kind and reason)."""

    def __init__(self, message: str, kind: str = "harness", reason: str = "verifier"):
        super().__init__(message)
        self.failure = {"kind": kind, "reason": reason}


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def last_line(stdout: str) -> str | None:
    lines = [line.strip() for line in stdout.split("\n") if line.strip()]
    return lines[-1] if lines else None


def parse_verdict(stdout: str) -> dict | None:
    """The last non-empty stdout line as {"reward": x} (with "detail" when given) or a bare x; else None."""
    last = last_line(stdout)
    if last is None:
        return None
    try:
        parsed = json.loads(last)
    except ValueError:
        return None
    if _finite(parsed):
        return {"reward": parsed}
    if not isinstance(parsed, dict) or not _finite(parsed.get("reward")):
        return None
    return {k: parsed[k] for k in ("reward", "detail") if k in parsed}


def no_reward_line(stdout: str, form: str) -> str:
    """As daemon/worker/command.ts noRewardLine: what the last stdout line should have been."""
    last = last_line(stdout)
    seen = f"not {json.dumps(last[:200], ensure_ascii=False)}" if last else "and it printed nothing"
    return f"its last stdout line must be {form}, {seen}"


REWARD_FORM = '{"reward": x} with x a finite number'


def no_reward_text(mode: str | None, rollout_id: str, stdout: str | None) -> str:
    """As daemon/worker/command.ts noRewardText (test/fixtures/no-reward.json holds both's texts): why a
    harness that finished has no reward, saying what it must print and where."""
    if stdout is None:
        return "harness gave no reward: it returned none and posted none"
    if mode != "persistent":
        return f"harness printed no reward and posted none: {no_reward_line(stdout, REWARD_FORM)}"
    rid = f'"rollout_id": {json.dumps(rollout_id)}'
    return (
        f"persistent harness answered {{{rid}}} with no reward and posted none: the stdout line that ends "
        f'the rollout must be {{{rid}, "reward": x}} with x a finite number, or the harness posts the '
        f"reward (POST /api/rollouts/{rollout_id}/reward) before that line"
    )


def _parts_text(parts: object, types: tuple[str, ...]) -> str:
    if not isinstance(parts, list):
        return ""
    return "".join(
        p["text"]
        for p in parts
        if isinstance(p, dict) and p.get("type") in types and isinstance(p.get("text"), str)
    )


def response_text(call: dict) -> str:
    """The assistant text of one recorded response, per wire API ("" for a response with only tool calls)."""
    response = call.get("response")
    if not isinstance(response, dict):
        return ""
    wire = call.get("wire_api")
    if wire in ("chat", "completions"):
        choices = response.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            return ""
        if wire == "completions":
            return choice["text"] if isinstance(choice.get("text"), str) else ""
        message = choice.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else _parts_text(content, ("text",))
    if wire == "messages":
        return _parts_text(response.get("content"), ("text",))
    if wire == "responses":
        if isinstance(response.get("output_text"), str):
            return response["output_text"]
        items = response.get("output") if isinstance(response.get("output"), list) else []
        return "".join(
            _parts_text(i.get("content"), ("output_text", "text"))
            for i in items
            if isinstance(i, dict) and i.get("type") == "message"
        )
    return ""


def final_output(calls: list[dict], attempt_id: str | None = None) -> str | None:
    """The text of the last answered llm call of the attempt (calls tagged "side" left out); None without one."""
    own = [c for c in calls if c.get("attempt_id") == attempt_id] if attempt_id else calls
    answered = [
        c
        for c in (own or calls)
        if (c.get("status") == "ok" or c.get("status") in UNTRAINABLE)
        and c.get("response") is not None
        and "side" not in (c.get("tags") or [])
    ]
    if not answered:
        return None
    return response_text(max(answered, key=lambda c: c.get("seq", 0)))


def run_verifier(
    argv: list[str],
    verify_input: dict,
    cwd: str | None,
    stop: threading.Event,
    preexec: Callable[[], None] | None = None,
) -> dict:
    """Runs the verifier until it exits or `stop` is set (it is killed then); returns its verdict."""
    if not argv:
        raise VerifierFailed("no verifier command given")
    text = json.dumps(verify_input)
    folder = tempfile.mkdtemp(prefix="harness-rl-verify-")
    try:
        path = os.path.join(folder, "input.json")
        with open(path, "w") as f:
            f.write(text)
        env = {
            **child_environ(),
            "HARNESS_RL_VERIFY_INPUT": path,
            "HARNESS_RL_TASK": json.dumps(verify_input.get("task")),
            "HARNESS_RL_ROLLOUT_ID": verify_input["rollout_id"],
            "HARNESS_RL_ATTEMPT_ID": verify_input["attempt_id"],
            "HARNESS_RL_RUN_ID": verify_input.get("run_id") or "",
        }
        try:
            child = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=preexec,
            )
        except OSError as e:
            raise VerifierFailed(f"could not start {argv[0]}: {e.strerror or e}") from None
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.2):
                if stop.is_set():
                    kill_group(child)
                    return

        threading.Thread(target=watch, daemon=True).start()
        try:
            out, err = child.communicate(text.encode())
        finally:
            done.set()
        stdout = out.decode(errors="replace")[-STDOUT_TAIL:]
        stderr = err.decode(errors="replace")[-STDERR_TAIL:]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if stop.is_set():
        raise VerifierFailed("stopped")
    code = child.returncode
    how = f"exit code {code}" if code >= 0 else f"signal {signal.Signals(-code).name}"
    tail = "\n".join(stderr.strip().split("\n")[-20:]) if stderr.strip() else ""
    exit_text = how + (f": {tail}" if tail else "")
    if code == EXIT_TEMPFAIL:
        raise VerifierFailed(
            f"verifier reported an infrastructure failure ({exit_text})", "infrastructure", "reported"
        )
    if code != 0:
        raise VerifierFailed(exit_text)
    verdict = parse_verdict(stdout)
    if verdict is None:
        raise VerifierFailed(f"printed no reward: {no_reward_line(stdout, VERDICT_FORM)}")
    return verdict
