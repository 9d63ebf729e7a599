// Which node agents on this machine use which GPUs: each agent leaves a claim file (role, pid, GPUs, the
// memory share it gave vLLM) in one folder per user, so a second role started on the same card without a
// stated memory split is refused naming the first, before either has allocated anything.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { type GpuProcess, gpuProcesses } from './gpu';

const Claim = z.object({
  role: z.enum(['inference', 'trainer']),
  pid: z.number().int(),
  /** null: every GPU the machine has (no --gpus). */
  gpus: z.array(z.number().int()).nullable(),
  /** vLLM's --gpu-memory-utilization (inference), null when unstated. */
  memory_share: z.number().nullable(),
  listen: z.string(),
});
export type Claim = z.infer<typeof Claim>;

export function claimsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HARNESS_RL_GPU_CLAIMS || join(homedir(), '.harness-rl-node', 'gpu-claims');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The claims of other live node agents (files of dead ones are removed). */
export function otherClaims(dir: string): Claim[] {
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  const out: Claim[] = [];
  for (const name of names) {
    try {
      const claim = Claim.parse(JSON.parse(readFileSync(join(dir, name), 'utf8')));
      if (claim.pid === process.pid) continue;
      if (alive(claim.pid)) out.push(claim);
      else rmSync(join(dir, name), { force: true });
    } catch {}
  }
  return out;
}

const overlap = (a: number[] | null, b: number[] | null) =>
  a === null || b === null || a.some((g) => b.includes(g));
const gpuNames = (g: number[] | null) => (g ? `GPU ${g.join(',')}` : 'every GPU');
export const describeClaim = (c: Claim) =>
  `the ${c.role} node agent (pid ${c.pid}, ${c.listen}) on ${gpuNames(c.gpus)}`;

/** Who else uses this node's GPUs: other node agents, then other processes nvidia-smi lists. */
export function sharers(mine: Claim, dir: string, processes: GpuProcess[] = gpuProcesses()): string | null {
  const agents = otherClaims(dir).filter((c) => overlap(c.gpus, mine.gpus));
  if (agents.length > 0) return agents.map(describeClaim).join(' and ');
  const agentPids = new Set([process.pid, ...otherClaims(dir).map((c) => c.pid)]);
  const procs = processes.filter((p) => !agentPids.has(p.pid) && overlap([p.gpu], mine.gpus));
  if (procs.length > 0)
    return procs.map((p) => `pid ${p.pid} (${p.name}, ${p.usedMb} MiB on GPU ${p.gpu})`).join(' and ');
  return null;
}

/**
 * The clashes of `mine` with the other agents' claims: another vLLM on these GPUs that was given the
 * whole card (no --gpu-memory-utilization), or vLLM shares that leave a trainer on the card next to
 * nothing. (This node's own vLLM without a share on a shared GPU is the preflight's to name.)
 */
export function claimClashes(mine: Claim, others: Claim[]): string[] {
  const shared = others.filter((c) => overlap(c.gpus, mine.gpus));
  const clashes = shared
    .filter((c) => c.role === 'inference' && c.memory_share === null)
    .map(
      (c) =>
        `${describeClaim(c)} gives vLLM the whole card (no --gpu-memory-utilization): restart it with a share, or give this node other --gpus`,
    );
  const all = [mine, ...shared];
  const total = all.reduce((s, c) => s + (c.role === 'inference' ? (c.memory_share ?? 0) : 0), 0);
  const limit = all.some((c) => c.role === 'trainer') ? 0.9 : 1;
  if (shared.length > 0 && total > limit)
    clashes.push(
      `the vLLM memory shares on ${gpuNames(mine.gpus)} add up to ${total.toFixed(2)}${limit < 1 ? ', leaving the trainer under 10% of the card' : ''}`,
    );
  return clashes;
}

/** Writes this agent's claim; returns the function that removes it. */
export function writeClaim(dir: string, claim: Claim): () => void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${claim.role}-${claim.pid}.json`);
  writeFileSync(path, JSON.stringify(claim), { mode: 0o600 });
  return () => rmSync(path, { force: true });
}
