"""The sandbox an attempt's harness runs in (harness.sandbox), as daemon/worker/sandbox.ts builds it.

none: the command as it is; bubblewrap: bwrap with the filesystem read-only but /tmp, the network
shared; a container: the run's folder read-only at the same path, a private /tmp, CPU, memory, process
and time limits, and a network namespace whose only way out is a forward of the daemon's host:port
(socat in the namespace -> a unix socket -> socat on the host -> the daemon); Docker joins it through a
holder container (the host's busybox sleeping), as Docker cannot join a namespace by path.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# The worker's own credentials: never handed to the harness or the verifier it runs.
WORKER_SECRETS = ("HARNESS_RL_WORKER_KEY", "HARNESS_RL_TOKEN")


def child_environ() -> dict[str, str]:
    """The worker's environment without its credentials (what a harness or verifier starts from)."""
    return {k: v for k, v in os.environ.items() if k not in WORKER_SECRETS}


def bubblewrap_argv(argv: list[str], cwd: str | None = None) -> list[str]:
    """As daemon/worker/sandbox.ts: folders under /tmp the harness runs in are seen again read-only."""
    tops = []
    for path in (cwd or os.getcwd(), os.getcwd()):
        m = re.match(r"^/tmp/[^/]+", os.path.abspath(path))
        if m and m.group(0) not in tops:
            tops.append(m.group(0))
    return [
        "bwrap",
        *["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"],
        *[a for top in tops for a in ("--ro-bind", top, top)],
        *["--unshare-all", "--share-net", "--die-with-parent", "--new-session", "--"],
        *argv,
    ]


def sandbox_name(attempt_id: str) -> str:
    return "hrl-" + re.sub(r"[^A-Za-z0-9]", "", attempt_id)[-24:]


def _ipv4(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 4
    except ValueError:
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def forward_target(daemon_url: str) -> tuple[str, int, str]:
    """(host, port, the address the namespace listens on) of the daemon's URL."""
    url = urlsplit(daemon_url)
    host = url.hostname or "127.0.0.1"
    port = url.port or (443 if url.scheme == "https" else 80)
    return host, port, host if _ipv4(host) else "127.0.0.1"


def is_docker(box: dict) -> bool:
    return os.path.basename(box.get("engine", "podman")) == "docker"


def holder_name(name: str) -> str:
    """The container that holds a Docker attempt's network namespace (Docker cannot join one by path)."""
    return f"{name}-net"


def _limit(box: dict, timeout_s: float, persistent: bool = False) -> int | None:
    """The container's time limit in seconds; none for a persistent process without an explicit one."""
    if persistent and box.get("timeout_s") is None:
        return None
    return int(-(-float(box.get("timeout_s") or timeout_s) // 1))


def container_argv(
    box: dict,
    attempt_id: str,
    argv: list[str],
    cwd: str,
    env_keys: list[str],
    daemon_url: str,
    timeout_s: float,
    persistent: bool = False,
) -> list[str]:
    """As daemon/worker/sandbox.ts containerArgv (Docker: --runtime after run, no --cgroup-manager or
    --timeout, the holder container's network)."""
    name = sandbox_name(attempt_id)
    host, _, _ = forward_target(daemon_url)
    docker = is_docker(box)
    if box.get("network", "proxy") == "none":
        network = ["--network", "none"]
    elif docker:
        network = ["--network", f"container:{holder_name(name)}"]
    else:
        network = ["--network", f"ns:/run/netns/{name}"]
        if not _is_ip(host):
            network += ["--add-host", f"{host}:127.0.0.1"]
    engine = box.get("engine", "podman")
    pids = box.get("pids", 1024)
    runtime = ["--runtime", box["runtime"]] if box.get("runtime") else []
    out = [engine]
    if not docker:
        out += runtime
        if box.get("cgroup_manager"):
            out += ["--cgroup-manager", box["cgroup_manager"]]
    out += ["run", "--rm", "--pull", "never", "--name", name, *network]
    if docker:
        out += runtime
    cpus = box.get("cpus", 1)
    out += ["--memory", f"{box.get('memory_mb', 1024)}m", "--cpus", _num(cpus)]
    out += ["--ulimit", f"nofile={pids}:{pids}", "--ulimit", f"nproc={pids}:{pids}"]
    if persistent:
        out += ["-i"]  # it takes its rollouts on stdin
    limit = _limit(box, timeout_s, persistent)
    if not docker and limit is not None:
        out += ["--timeout", str(limit)]
    out += ["-v", f"{cwd}:{cwd}:ro"]
    for m in box.get("mounts", []):
        m = os.path.normpath(os.path.join(cwd, m))
        out += ["-v", f"{m}:{m}:ro"]
    out += ["--tmpfs", "/tmp", "-w", cwd]
    for k in env_keys:
        out += ["-e", k]
    return [*out, box["image"], *argv]


def _num(x: float) -> str:
    """A number as JavaScript's String() writes it (1, not 1.0)."""
    return str(int(x)) if float(x).is_integer() else str(x)


def _must(argv: list[str]) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise RuntimeError(f"sandbox: {' '.join(argv)} failed: {r.stderr.strip()}")


def _listening(ns: str, port: int) -> bool:
    r = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/tcp"], capture_output=True, text=True)
    hexport = f"{port:04X}"
    return any(f":{hexport} " in line and " 0A " in line for line in r.stdout.splitlines())


def _wait_for(what: str, ok: Callable[[], bool], seconds: float = 3) -> None:
    until = time.monotonic() + seconds
    while not ok():
        if time.monotonic() > until:
            raise RuntimeError(f"sandbox: {what} did not come up within {seconds} s")
        time.sleep(0.02)


def kill_group(child: subprocess.Popen) -> None:
    """SIGTERM to the child's process group, SIGKILL 2 s later if it has not ended (blocks that long)."""
    for sig, wait in ((signal.SIGTERM, 2), (signal.SIGKILL, 0)):
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            child.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except OSError:
        pass


@dataclass
class OpenSandbox:
    argv: list[str]
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for c in reversed(self.closers):
            try:
                c()
            except Exception:  # noqa: BLE001 - closing is best effort, each step on its own
                pass


HOLDER_BUSYBOX = "/bin/busybox"


def _start_holder(box: dict, name: str, daemon_url: str) -> int:
    """Docker's holder of the attempt's network namespace (the host's static busybox sleeping); its pid."""
    if not os.path.exists(HOLDER_BUSYBOX):
        raise RuntimeError(
            f"sandbox: Docker's network holder needs a static {HOLDER_BUSYBOX} (busybox-static)"
        )
    host, _, _ = forward_target(daemon_url)
    engine = box.get("engine", "podman")
    argv = [engine, "run", "-d", "--rm", "--pull", "never", "--name", holder_name(name), "--network", "none"]
    if not _is_ip(host):
        argv += ["--add-host", f"{host}:127.0.0.1"]
    argv += ["--memory", "32m", "-v", f"{HOLDER_BUSYBOX}:/.hrl/busybox:ro", "--entrypoint", "/.hrl/busybox"]
    _must([*argv, box["image"], "sleep", "2147483647"])
    r = subprocess.run(
        [engine, "inspect", "-f", "{{.State.Pid}}", holder_name(name)],
        capture_output=True,
        text=True,
        timeout=10,
    )
    try:
        return int(r.stdout.strip())
    except ValueError:
        raise RuntimeError(f"sandbox: no pid for {holder_name(name)}: {r.stderr.strip()}") from None


def _open_forward(name: str, daemon_url: str, box: OpenSandbox, pid: int | None = None) -> None:
    host, port, listen = forward_target(daemon_url)
    sock = f"/run/{name}.sock"
    children: list[subprocess.Popen] = []

    def close() -> None:
        for c in children:
            c.kill()
            c.wait()
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        if os.path.exists(sock):
            os.unlink(sock)

    box.closers.append(close)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    _must(["ip", "netns", "add", name] if pid is None else ["ip", "netns", "attach", name, str(pid)])
    _must(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"])
    if _ipv4(host) and not host.startswith("127."):
        _must(["ip", "netns", "exec", name, "ip", "addr", "add", f"{host}/32", "dev", "lo"])
    outside = ["socat", f"UNIX-LISTEN:{sock},fork,unlink-early", f"TCP:{host}:{port}"]
    inside = [
        "ip",
        "netns",
        "exec",
        name,
        "socat",
        f"TCP-LISTEN:{port},bind={listen},fork,reuseaddr",
        f"UNIX-CONNECT:{sock}",
    ]
    for argv in (outside, inside):
        children.append(
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        )
        if argv is outside:
            _wait_for("the host side of the proxy forward", lambda: os.path.exists(sock))
    _wait_for("the proxy forward", lambda: _listening(name, port))


def open_sandbox(
    sandbox: str | dict,
    attempt_id: str,
    argv: list[str],
    cwd: str,
    env_keys: list[str],
    daemon_url: str,
    timeout_s: float,
    persistent: bool = False,
) -> OpenSandbox:
    """`persistent`: for a process that takes rollouts on stdin as long as it lives (-i, no time limit
    unless the container names one)."""
    if sandbox in (None, "none"):
        return OpenSandbox(argv)
    if sandbox == "bubblewrap":
        return OpenSandbox(bubblewrap_argv(argv, cwd))
    box = sandbox["container"]
    name = sandbox_name(attempt_id)
    docker = is_docker(box)
    proxy = box.get("network", "proxy") == "proxy"
    opened = OpenSandbox(
        container_argv(box, attempt_id, argv, cwd, env_keys, daemon_url, timeout_s, persistent)
    )
    engine = [box.get("engine", "podman")]
    if box.get("runtime") and not docker:
        engine += ["--runtime", box["runtime"]]
    names = [name, holder_name(name)] if docker and proxy else [name]

    def remove(which: list[str]) -> None:
        rm = ["rm", "-f"] if docker else ["rm", "-f", "-t", "0"]
        subprocess.run([*engine, *rm, *which], capture_output=True, timeout=30)

    try:
        if proxy:
            _open_forward(name, daemon_url, opened, _start_holder(box, name, daemon_url) if docker else None)
    except Exception:
        opened.close()
        remove(names)
        raise
    # Closed first: the engine's client may have been killed (the deadline), the container goes too.
    opened.closers.append(lambda: remove(names))
    limit = _limit(box, timeout_s, persistent)
    if docker and limit is not None:
        # Docker has no --timeout: the container is removed at the limit.
        timer = threading.Timer(limit, lambda: remove([name]))
        timer.daemon = True
        timer.start()
        opened.closers.append(timer.cancel)
    return opened
