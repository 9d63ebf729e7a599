"""The Ray job a run submits (daemon/worker/ray.ts): `--workers` actors, each a Worker running
`--concurrency` rollouts at a time on the node Ray placed it on, with `--resources` reserved.

An actor that dies with its node is restarted by Ray elsewhere (max_restarts) and its loop started
again; the daemon, told by Ray that the node died (or missing the attempts' heartbeats), fails the
attempts it held as node_lost and retries the rollouts. The workers call the daemon with the run's worker
credential ($HARNESS_RL_WORKER_KEY, good for this run's worker routes only), never the daemon token.
The job ends when every worker saw the run end (the daemon answers 410); stopping the job (SIGTERM to
this driver) ends the actors, whose harness processes die with them (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

import ray


@ray.remote(max_restarts=-1, max_task_retries=0)
class WorkerActor:
    def __init__(self, url: str, token: str, run_id: str, index: int, cwd: str | None, tls_ca: str | None):
        from .worker import Daemon, Worker

        ctx = ray.get_runtime_context()
        node = ctx.get_node_id()
        ip = ray.util.get_node_ip_address()
        # The name says where it runs: the daemon shows it with the run's workers and each attempt.
        name = f"ray:{ip}:{node[:12]}:w{index}"
        self.worker = Worker(
            Daemon(url, token, tls_ca), run_id, name, cwd, log=lambda m: print(m, flush=True)
        )

    def run(self, concurrency: int) -> dict:
        s = self.worker.run(concurrency)
        return {k: getattr(s, k) for k in ("succeeded", "failed", "timed_out", "cancelled")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness_rl_worker.ray_job")
    p.add_argument("--url", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--resources", default="{}", help="resources per worker, as harness.workers.ray has them")
    p.add_argument("--cwd")
    p.add_argument("--tls-ca")
    a = p.parse_args(argv)
    token = os.environ.get("HARNESS_RL_WORKER_KEY") or os.environ.get("HARNESS_RL_TOKEN", "")
    res = json.loads(a.resources)
    options = {"num_cpus": res.get("num_cpus", 1), "num_gpus": res.get("num_gpus", 0)}
    if res.get("memory"):
        options["memory"] = res["memory"]
    if res.get("resources"):
        options["resources"] = res["resources"]
    ray.init(address="auto")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    actors = [
        WorkerActor.options(**options).remote(a.url, token, a.run, i, a.cwd, a.tls_ca)
        for i in range(a.workers)
    ]
    running = {actor.run.remote(a.concurrency): actor for actor in actors}
    while running:
        [ref], _ = ray.wait(list(running), num_returns=1)
        actor = running.pop(ref)
        try:
            print(f"worker done: {ray.get(ref)}", flush=True)
        except ray.exceptions.RayActorError as e:
            # Its node died (or the process): Ray restarts the actor; start its loop again.
            print(f"worker lost ({type(e).__name__}); starting it again", flush=True)
            running[actor.run.remote(a.concurrency)] = actor
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
