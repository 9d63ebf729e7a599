// Runs a command in a throw-away copy of the repository with a time limit, inside bubblewrap where it
// works: the system folders read-only, the copy the only writable place (plus an empty /tmp), no
// network, no other namespace shared, killed with its parent. Where `bwrap` is missing or cannot create
// namespaces it runs the command directly, with a warning: then only the time limit, the copy as working
// folder and the stripped environment apply (the command can read and write whatever the user can, and
// reach the network).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** System folders bound read-only into the sandbox (those that exist). */
const SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc'];
const OUTPUT_LIMIT = 64 * 1024;

export type SandboxMode = 'auto' | 'off';

export interface Sandboxed {
  code: number | null;
  /** The tail of stdout and stderr together. */
  output: string;
  timedOut: boolean;
  /** Whether it ran inside bubblewrap. */
  sandboxed: boolean;
}

/** A throw-away copy of `repo` under the system's temp folder. */
export async function throwAwayCopy(repo: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'coding-agent-'));
  await cp(repo, dir, { recursive: true });
  return dir;
}

/**
 * The bwrap argv that runs `argv` with `dir` as the only writable folder; `readOnly` folders (a venv,
 * the node_modules a copy links to) are seen read-only at their own paths.
 */
export function bwrapArgs(dir: string, argv: string[], readOnly: string[] = []): string[] {
  const binds = SYSTEM.filter((p) => existsSync(p));
  for (const p of readOnly) if (existsSync(p) && !binds.includes(p)) binds.push(p);
  // node installed outside the system folders (nvm, /opt) is bound read-only too
  const nodePrefix = dirname(dirname(process.execPath));
  if (!binds.some((p) => nodePrefix === p || nodePrefix.startsWith(`${p}/`))) binds.push(nodePrefix);
  // Folders under /tmp (a checkout there, its venv) go on top of the private /tmp, not under it.
  const inTmp = (p: string) => p === '/tmp' || p.startsWith('/tmp/');
  return [
    ...binds.filter((p) => !inTmp(p)).flatMap((p) => ['--ro-bind', p, p]),
    ...['--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
    ...binds.filter(inTmp).flatMap((p) => ['--ro-bind', p, p]),
    ...['--bind', dir, dir, '--chdir', dir],
    ...['--unshare-all', '--die-with-parent', '--new-session'],
    '--',
    ...argv,
  ];
}

let probed: { ok: boolean; why: string } | undefined;

/** Whether bwrap runs here (it is installed and may create namespaces); asked once. */
export function bwrapWorks(): { ok: boolean; why: string } {
  if (!probed) {
    const probe = spawnSync('bwrap', bwrapArgs(tmpdir(), ['true']), { encoding: 'utf8', timeout: 10_000 });
    probed =
      probe.error || probe.status !== 0
        ? { ok: false, why: probe.error ? `bwrap not found (${probe.error.message})` : probe.stderr.trim() }
        : { ok: true, why: '' };
  }
  return probed;
}

let warned = false;

/** The sandbox (or the command in it) could not start: not the agent's failure (verify.ts exits 75). */
export class SandboxStartError extends Error {}

/**
 * Run `argv` in `dir` for at most `timeoutMs` (then its process group is killed). `mode` 'off' (or
 * $CODING_AGENT_SANDBOX=off) skips bubblewrap.
 */
export function runSandboxed(
  argv: string[],
  options: { dir: string; timeoutMs: number; mode?: SandboxMode; readOnly?: string[] },
): Promise<Sandboxed> {
  const mode = options.mode ?? (process.env.CODING_AGENT_SANDBOX === 'off' ? 'off' : 'auto');
  const bwrap = mode === 'auto' ? bwrapWorks() : { ok: false, why: 'the sandbox is off' };
  if (!bwrap.ok && mode === 'auto' && !warned) {
    warned = true;
    process.stderr.write(
      `coding-agent: WARNING running tests without a sandbox (${bwrap.why}): only the time limit and the throw-away copy apply\n`,
    );
  }
  const [cmd, ...args] = bwrap.ok ? ['bwrap', ...bwrapArgs(options.dir, argv, options.readOnly)] : argv;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, args, {
      cwd: options.dir,
      // no proxy key or daemon token reaches the tests
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: options.dir, LANG: 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-OUTPUT_LIMIT);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }, options.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new SandboxStartError(`could not start ${cmd}: ${err.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, timedOut, sandboxed: bwrap.ok });
    });
  });
}
