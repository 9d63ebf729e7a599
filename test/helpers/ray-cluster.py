"""A Ray cluster on loopback for the tests, the way Ray's own tests make one (ray.cluster_utils.Cluster):
a head with the dashboard (the Jobs REST API) and no CPUs, and `--nodes` worker nodes of `--cpus` CPUs.

Prints one JSON line {"dashboard", "nodes": [node ids]} when ready; then reads commands on stdin:
`kill <node id prefix>` removes that node at once (its raylet and workers killed), `nodes` prints the
node ids again, `add` adds a node. Ends the cluster at EOF.
"""

import argparse
import json
import os
import socket
import sys

# Everything on loopback: without this Ray maps 127.0.0.1 to the machine's address
# (ray/_private/services.py resolve_ip_for_localhost), where the loopback-bound GCS is not, and the
# dashboard agents never connect (the Jobs API answers "No available agent to submit job").
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
# A killed node is reported DEAD after about 3 s (Ray's defaults: 3 s checks, 5 failures, ~16 s here),
# so the node-loss test sees the daemon learn it from Ray (ray/_private/ray_config_def.h health_check_*).
os.environ.setdefault("RAY_health_check_period_ms", "1000")
os.environ.setdefault("RAY_health_check_timeout_ms", "1000")
os.environ.setdefault("RAY_health_check_failure_threshold", "3")

from ray.cluster_utils import Cluster

p = argparse.ArgumentParser()
p.add_argument("--dashboard-port", type=int, required=True)
p.add_argument("--nodes", type=int, default=2)
p.add_argument("--cpus", type=float, default=1)
a = p.parse_args()


def again(what, make, tries=4):
    """Ray gives a raylet 30 s to register (ray/_private/node.py); a loaded machine needs tries."""
    for i in range(tries):
        try:
            return make()
        except Exception as e:
            print(f"ray-cluster: {what} failed ({e}); try {i + 2}", file=sys.stderr, flush=True)
            if i == tries - 1:
                raise


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


cluster = Cluster()
dashboard_port = a.dashboard_port or free_port()


def head():
    global dashboard_port
    try:
        return cluster.add_node(
            num_cpus=0,
            include_dashboard=True,
            dashboard_host="127.0.0.1",
            dashboard_port=dashboard_port,
            node_ip_address="127.0.0.1",
        )
    except Exception:
        # What the failed head started (GCS, dashboard) would hold its ports: end it, take new ones.
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        dashboard_port = free_port()
        raise


again("the head", head)


def add():
    node = again("a node", lambda: cluster.add_node(num_cpus=a.cpus, node_ip_address="127.0.0.1"))
    cluster.wait_for_nodes()
    return node


workers = [add() for _ in range(a.nodes)]


def say(**kw):
    print(json.dumps({**kw, "nodes": [n.node_id for n in workers]}), flush=True)


say(dashboard=f"http://127.0.0.1:{dashboard_port}", address=cluster.address)
try:
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "kill":
            node = next(n for n in workers if n.node_id.startswith(arg))
            cluster.remove_node(node, allow_graceful=False)
            workers.remove(node)
            say(killed=node.node_id)
        elif cmd == "add":
            workers.append(add())
            say(added=workers[-1].node_id)
        elif cmd == "nodes":
            say()
finally:
    cluster.shutdown()
