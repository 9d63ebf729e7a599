import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const root = fileURLToPath(new URL('..', import.meta.url));

/** Print one benchmark figure as a JSON line: {"bench": name, ...numbers}. */
export function emit(bench: string, figures: Record<string, number | string | boolean | null>): void {
  process.stdout.write(`${JSON.stringify({ bench, ...figures })}\n`);
}

/** The q-quantile (0..1) of a list of numbers. */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export const round = (x: number, digits = 3): number => Number(x.toFixed(digits));

/**
 * Runs `script` (TypeScript, as an ES module) in a child Node process with `env` and V8 `flags`;
 * resolves with the JSON object it prints on its first stdout line.
 */
export function child(
  script: string,
  env: Record<string, string> = {},
  flags: string[] = [],
): Promise<{ proc: ChildProcess; info: Record<string, string> }> {
  return spawned([...flags, '--import', 'tsx', '--input-type=module', '-e', script], env);
}

/**
 * Bundles `entry` (a path under bench/) as the daemon's build does (esbuild, ESM, packages external,
 * no tsx and its keepNames wrappers) and runs it like `child`: the figures are the shipped code's.
 * `checkout`: another checkout of the project to take `entry` and its imports from (a baseline).
 */
export async function bundledChild(
  entry: string,
  env: Record<string, string> = {},
  flags: string[] = [],
  checkout: string = root,
): Promise<{ proc: ChildProcess; info: Record<string, string> }> {
  const outfile = join(checkout, 'dist', 'bench', `${basename(entry, '.ts')}.mjs`);
  await build({
    entryPoints: [join(checkout, 'bench', entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: true,
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  return spawned([...flags, '--enable-source-maps', outfile], env);
}

function spawned(
  args: string[],
  env: Record<string, string>,
): Promise<{ proc: ChildProcess; info: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let buf = '';
    proc.stdout?.on('data', (c: Buffer) => {
      buf += c.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ proc, info: JSON.parse(buf.slice(0, nl)) });
    });
    proc.on('exit', (code) => reject(new Error(`bench child exited with ${code}`)));
  });
}

/** CPU time (µs, user + system) a child process has used so far, from /proc (Linux); NaN elsewhere. */
export function cpuOf(proc: ChildProcess): number {
  try {
    const stat = readFileSync(`/proc/${proc.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
  } catch {
    return Number.NaN;
  }
}

/** The machine's CPU time so far (ms, all cores): idle and in all. */
export function machineTimes(): { idle: number; total: number } {
  let idle = 0;
  let total = 0;
  for (const c of cpus()) {
    idle += c.times.idle;
    total += c.times.idle + c.times.user + c.times.nice + c.times.sys + c.times.irq;
  }
  return { idle, total };
}
