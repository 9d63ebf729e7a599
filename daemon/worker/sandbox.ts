// The sandbox an attempt's harness runs in (harness.sandbox): none, bubblewrap, or a container per
// attempt. A container gets the run's folder read-only at the same path, a private /tmp, CPU, memory,
// process and time limits, and a network namespace of its own whose only way out is a forward of the
// daemon's host:port (socat in the namespace → a unix socket → socat on the host → the daemon): the
// harness keeps its URLs, TLS included, and reaches nothing else. Podman joins that namespace by path;
// Docker cannot, so a holder container (the host's busybox sleeping) owns it and the attempt's container
// joins the holder's. workers/python/harness_rl_worker/sandbox.py builds the same argv
// (test/e2e/sandbox-container.test.ts compares them).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { basename, resolve } from 'node:path';
import type { ContainerSandbox, HarnessSandbox } from '../protocol/placement';

export interface SandboxInput {
  attemptId: string;
  argv: string[];
  /** The folder the harness runs in (mounted read-only in a container). */
  cwd: string;
  /** The names of the env variables the harness gets (their values stay in the engine's env). */
  envKeys: string[];
  /** The daemon's URL as the worker reaches it: the one place a container may connect to. */
  daemonUrl: string;
  timeoutS: number;
  /**
   * A persistent harness process (it takes rollouts over stdin for as long as it lives): a container
   * keeps stdin open (-i) and gets no time limit but an explicit `timeout_s`.
   */
  persistent?: boolean;
}

export interface OpenSandbox {
  argv: string[];
  /** Ends what the sandbox left running (the container, the forwards, the namespace). */
  close(): Promise<void>;
}

/**
 * The bwrap argv: the whole filesystem read-only, a private /tmp, the network shared (for the proxy).
 * Folders under /tmp that the harness runs in (`cwd`, and the checkout it resolves its packages from)
 * are seen again read-only over the private /tmp: a run folder or checkout there would vanish otherwise.
 */
export function bubblewrapArgv(argv: string[], cwd: string = process.cwd()): string[] {
  const under = [...new Set([cwd, process.cwd()].map(tmpTop).filter((p) => p !== null))];
  return [
    'bwrap',
    ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
    ...under.flatMap((p) => ['--ro-bind', p, p]),
    ...['--unshare-all', '--share-net', '--die-with-parent', '--new-session', '--'],
    ...argv,
  ];
}

/** The folder right under /tmp that holds `path` (`/tmp/x/y` → `/tmp/x`), or null. */
function tmpTop(path: string): string | null {
  const m = /^\/tmp\/[^/]+/.exec(resolve(path));
  return m ? m[0] : null;
}

/** A name podman accepts, short enough for a network namespace. */
export function sandboxName(attemptId: string): string {
  return `hrl-${attemptId.replace(/[^A-Za-z0-9]/g, '').slice(-24)}`;
}

/** Where the daemon's URL points: the host, its port, and the address the namespace listens on. */
export function forwardTarget(daemonUrl: string): { host: string; port: number; listen: string } {
  const url = new URL(daemonUrl);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return { host, port, listen: isIP(host) === 4 ? host : '127.0.0.1' };
}

/** Whether the engine is Docker (its flags differ from Podman's: see containerArgv). */
export function isDocker(box: Pick<ContainerSandbox, 'engine'>): boolean {
  return basename(box.engine) === 'docker';
}

/** The container's time limit in seconds; none for a persistent process without an explicit one. */
function timeLimit(box: ContainerSandbox, input: SandboxInput): number | null {
  return input.persistent && box.timeout_s === undefined ? null : Math.ceil(box.timeout_s ?? input.timeoutS);
}

/** The container that holds a Docker attempt's network namespace (Docker cannot join one by path). */
const holderName = (name: string) => `${name}-net`;

/**
 * The engine's argv for one attempt's container (the network namespace named by `sandboxName`).
 * Docker: `--runtime` is a run flag, there is no `--cgroup-manager` (the daemon's setting) nor
 * `--timeout` (openSandbox kills the container at the limit), and the network is that of a holder
 * container (`--network container:`), which also carries the `--add-host`.
 */
export function containerArgv(box: ContainerSandbox, input: SandboxInput): string[] {
  const name = sandboxName(input.attemptId);
  const target = forwardTarget(input.daemonUrl);
  const docker = isDocker(box);
  const addHost = isIP(target.host) ? [] : ['--add-host', `${target.host}:127.0.0.1`];
  const network =
    box.network === 'none'
      ? ['--network', 'none']
      : docker
        ? ['--network', `container:${holderName(name)}`]
        : [...['--network', `ns:/run/netns/${name}`], ...addHost];
  const runtime = box.runtime ? ['--runtime', box.runtime] : [];
  const limit = timeLimit(box, input);
  return [
    box.engine,
    ...(docker ? [] : runtime),
    ...(box.cgroup_manager && !docker ? ['--cgroup-manager', box.cgroup_manager] : []),
    ...['run', '--rm', '--pull', 'never', '--name', name, ...network],
    ...(docker ? runtime : []),
    ...['--memory', `${box.memory_mb}m`, '--cpus', String(box.cpus)],
    ...['--ulimit', `nofile=${box.pids}:${box.pids}`, '--ulimit', `nproc=${box.pids}:${box.pids}`],
    ...(input.persistent ? ['-i'] : []),
    ...(limit === null || docker ? [] : ['--timeout', String(limit)]),
    ...['-v', `${input.cwd}:${input.cwd}:ro`],
    ...box.mounts.map((m) => resolve(input.cwd, m)).flatMap((m) => ['-v', `${m}:${m}:ro`]),
    ...['--tmpfs', '/tmp', '-w', input.cwd],
    ...input.envKeys.flatMap((k) => ['-e', k]),
    box.image,
    ...input.argv,
  ];
}

function must(argv: string[]): void {
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0)
    throw new Error(`sandbox: ${argv.join(' ')} failed: ${r.error?.message ?? r.stderr.trim()}`);
}

/** Whether the namespace has a TCP socket listening on `port` (/proc/net/tcp seen from inside). */
function listening(ns: string, port: number): boolean {
  const r = spawnSync('ip', ['netns', 'exec', ns, 'cat', '/proc/net/tcp'], { encoding: 'utf8' });
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return (r.stdout ?? '').split('\n').some((l) => l.includes(`:${hex} `) && / 0A /.test(l));
}

async function waitFor(what: string, ok: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error(`sandbox: ${what} did not come up within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The namespace and the two forwards that let a container reach the daemon's host:port only. With
 * `pid` the namespace is that process's (a Docker holder container's), attached under `name`.
 */
async function openForward(name: string, daemonUrl: string, pid?: number): Promise<() => void> {
  const target = forwardTarget(daemonUrl);
  const sock = `/run/${name}.sock`;
  const children: ChildProcess[] = [];
  const close = () => {
    for (const c of children) c.kill('SIGKILL');
    spawnSync('ip', ['netns', 'del', name]);
    rmSync(sock, { force: true });
  };
  try {
    spawnSync('ip', ['netns', 'del', name]); // a namespace left by a worker that died
    must(pid === undefined ? ['ip', 'netns', 'add', name] : ['ip', 'netns', 'attach', name, String(pid)]);
    must(['ip', 'netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
    if (isIP(target.host) === 4 && !target.host.startsWith('127.'))
      must(['ip', 'netns', 'exec', name, 'ip', 'addr', 'add', `${target.host}/32`, 'dev', 'lo']);
    const outside = ['socat', `UNIX-LISTEN:${sock},fork,unlink-early`, `TCP:${target.host}:${target.port}`];
    const inside = ['ip', 'netns', 'exec', name, 'socat'];
    inside.push(`TCP-LISTEN:${target.port},bind=${target.listen},fork,reuseaddr`, `UNIX-CONNECT:${sock}`);
    for (const argv of [outside, inside]) {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
      child.on('error', () => {});
      children.push(child);
      if (argv === outside) await waitFor('the host side of the proxy forward', () => existsSync(sock));
    }
    await waitFor('the proxy forward', () => listening(name, target.port));
  } catch (err) {
    close();
    throw err;
  }
  return close;
}

/** A statically linked busybox on the host: the Docker holder container's `sleep`, whatever the image. */
export const HOLDER_BUSYBOX = '/bin/busybox';

/**
 * Docker's holder of an attempt's network namespace: a container of the image with no network, whose
 * process (the host's busybox, mounted) only sleeps; the attempt's container joins its namespace.
 * Returns the holder's pid on the host.
 */
function startHolder(box: ContainerSandbox, name: string, daemonUrl: string): number {
  if (!existsSync(HOLDER_BUSYBOX))
    throw new Error(`sandbox: Docker's network holder needs a static ${HOLDER_BUSYBOX} (busybox-static)`);
  const { host } = forwardTarget(daemonUrl);
  must([
    box.engine,
    ...['run', '-d', '--rm', '--pull', 'never', '--name', holderName(name), '--network', 'none'],
    ...(isIP(host) ? [] : ['--add-host', `${host}:127.0.0.1`]),
    ...['--memory', '32m', '-v', `${HOLDER_BUSYBOX}:/.hrl/busybox:ro`, '--entrypoint', '/.hrl/busybox'],
    ...[box.image, 'sleep', '2147483647'],
  ]);
  const r = spawnSync(box.engine, ['inspect', '-f', '{{.State.Pid}}', holderName(name)], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  const pid = Number(r.stdout?.trim());
  if (!(pid > 0)) throw new Error(`sandbox: no pid for ${holderName(name)}: ${r.stderr?.trim()}`);
  return pid;
}

/** Remove containers by name, whether they still run or not. */
function removeContainers(box: ContainerSandbox, names: string[]): void {
  const runtime = box.runtime && !isDocker(box) ? ['--runtime', box.runtime] : [];
  const args = [...runtime, 'rm', '-f', ...(isDocker(box) ? [] : ['-t', '0']), ...names];
  spawnSync(box.engine, args, { stdio: 'ignore', timeout: 30_000 });
}

/** Prepare the sandbox of one attempt: the argv to run, and what to end afterwards. */
export async function openSandbox(sandbox: HarnessSandbox, input: SandboxInput): Promise<OpenSandbox> {
  if (sandbox === 'none') return { argv: input.argv, close: async () => {} };
  if (sandbox === 'bubblewrap') return { argv: bubblewrapArgv(input.argv, input.cwd), close: async () => {} };
  const box = sandbox.container;
  const name = sandboxName(input.attemptId);
  const docker = isDocker(box);
  const names = docker && box.network === 'proxy' ? [name, holderName(name)] : [name];
  let closeForward = () => {};
  try {
    if (box.network === 'proxy') {
      const pid = docker ? startHolder(box, name, input.daemonUrl) : undefined;
      closeForward = await openForward(name, input.daemonUrl, pid);
    }
  } catch (err) {
    removeContainers(box, names);
    throw err;
  }
  // Docker has no --timeout: the container is removed at the limit (the harness fails as timed out).
  const limit = timeLimit(box, input);
  const timer =
    docker && limit !== null ? setTimeout(() => removeContainers(box, [name]), limit * 1000) : null;
  timer?.unref();
  return {
    argv: containerArgv(box, input),
    close: async () => {
      if (timer) clearTimeout(timer);
      // The engine's client may have been killed (the attempt's deadline): the container goes too.
      removeContainers(box, names);
      closeForward();
    },
  };
}
