// A run's workers on a Ray cluster (harness.workers.ray): one Ray job per run, submitted with the
// Jobs REST API of the head's dashboard (POST /api/jobs/), whose entry point (workers/python,
// `python -m harness_rl_worker.ray_job`) starts the worker actors; the job is watched while the run
// runs (submitted again when it ends early) and stopped with the run (POST /api/jobs/:id/stop), the
// daemon waiting until Ray says it stopped. The REST API and not a Python driver in the daemon: the
// daemon stays Node-only, and a job is what the dashboard lists, stops and keeps the logs of. The job
// gets the run's worker credential (api/auth.ts), never the daemon token: Ray's dashboard shows a job's
// runtime_env to whoever reaches it. While the job runs, the nodes Ray reports DEAD (its State API)
// are told to the caller, whose attempts there end as `node_lost`.
import { z } from 'zod';
import { errorText } from '../error-text';
import type { RayWorkersConfig } from '../protocol/placement';
import { shellWord } from './shell';
import { sleep } from './wait';

/** Ray job statuses that will not change again (ray/dashboard/modules/job/common.py JobStatus). */
export const RAY_TERMINAL = new Set(['STOPPED', 'SUCCEEDED', 'FAILED']);

export interface RayJobInfo {
  submission_id: string;
  status: string;
  message?: string | null;
  metadata?: Record<string, string> | null;
}

// undici's request, not fetch: fetch sends Sec-Fetch-* headers, and Ray's dashboard refuses a POST
// that looks like a browser's (ray/dashboard/optional_utils.py is_browser_request). Imported with the
// first call: the package's index (110 modules) stays out of a daemon without Ray (http.ts loads only
// undici's agent).
async function rayCall(
  address: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<unknown> {
  const url = `${address.replace(/\/$/, '')}${path}`;
  let status: number;
  let text: string;
  const { request } = await import('undici');
  try {
    const response = await request(url, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    status = response.statusCode;
    text = await response.body.text();
  } catch (err) {
    throw new Error(`Ray at ${address} did not answer ${method} ${path}: ${errorText(err)}`);
  }
  if (status >= 400) throw new Error(`Ray ${method} ${path}: HTTP ${status} ${text.slice(0, 500)}`);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The job entry point that runs a run's workers on the cluster. */
export function rayEntrypoint(
  ray: RayWorkersConfig,
  options: { runId: string; daemonUrl: string; concurrency: number; cwd: string | undefined },
): string {
  const words = [ray.python, '-m', 'harness_rl_worker.ray_job'];
  words.push('--url', ray.daemon_url ?? options.daemonUrl, '--run', options.runId);
  words.push('--workers', String(ray.workers), '--concurrency', String(options.concurrency));
  words.push('--resources', JSON.stringify(ray.resources_per_worker));
  const cwd = ray.cwd ?? options.cwd;
  if (cwd) words.push('--cwd', cwd);
  if (ray.tls_ca) words.push('--tls-ca', ray.tls_ca);
  return words.map(shellWord).join(' ');
}

/**
 * Submit the run's worker job; its credential (good for the run's worker routes only) travels in the
 * job's env, not on its command line.
 */
export async function submitRayJob(
  ray: RayWorkersConfig,
  options: {
    runId: string;
    daemonUrl: string;
    credential: string;
    concurrency: number;
    cwd: string | undefined;
  },
): Promise<string> {
  const runtimeEnv = { ...(ray.runtime_env ?? {}) } as Record<string, unknown>;
  runtimeEnv.env_vars = {
    ...((runtimeEnv.env_vars as Record<string, string> | undefined) ?? {}),
    HARNESS_RL_WORKER_KEY: options.credential,
  };
  const submissionId = `harness-rl-${options.runId}-${Date.now().toString(36)}`;
  await rayCall(ray.address, 'POST', '/api/jobs/', {
    entrypoint: rayEntrypoint(ray, options),
    submission_id: submissionId,
    runtime_env: runtimeEnv,
    metadata: { harness_rl_run: options.runId },
    entrypoint_num_cpus: 0,
  });
  return submissionId;
}

export async function rayJob(address: string, id: string): Promise<RayJobInfo> {
  return (await rayCall(address, 'GET', `/api/jobs/${encodeURIComponent(id)}`)) as RayJobInfo;
}

/** The run's jobs Ray still runs (a daemon that restarted finds the ones it started before). */
export async function liveRayJobs(address: string, runId: string): Promise<RayJobInfo[]> {
  const all = (await rayCall(address, 'GET', '/api/jobs/')) as RayJobInfo[];
  return all.filter((j) => j.metadata?.harness_rl_run === runId && !RAY_TERMINAL.has(j.status));
}

/** Stop a job and wait until Ray says it ended (its actors and their harnesses are gone then). */
export async function stopRayJob(address: string, id: string, waitMs = 60_000): Promise<string> {
  await rayCall(address, 'POST', `/api/jobs/${encodeURIComponent(id)}/stop`).catch(() => {});
  const until = Date.now() + waitMs;
  for (;;) {
    const job = await rayJob(address, id);
    if (RAY_TERMINAL.has(job.status)) return job.status;
    if (Date.now() > until) throw new Error(`Ray job ${id} is still ${job.status} ${waitMs} ms after stop`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A node as Ray's State API lists it (ray/util/state/common.py NodeState). */
const RayNode = z.object({ node_id: z.string(), state: z.string() }).passthrough();
const RayNodes = z.object({
  data: z.object({ result: z.object({ result: z.array(RayNode) }) }),
});

/** The ids of the nodes Ray reports DEAD (GET /api/v0/nodes of the dashboard's State API). */
export async function deadRayNodes(address: string): Promise<string[]> {
  const parsed = RayNodes.safeParse(await rayCall(address, 'GET', '/api/v0/nodes?limit=10000'));
  if (!parsed.success) throw new Error(`Ray's node list is not one: ${parsed.error.issues[0]?.message}`);
  return parsed.data.data.result.result.filter((n) => n.state === 'DEAD').map((n) => n.node_id);
}

/**
 * The node a Ray worker runs on, as its name says (`ray:<ip>:<node id, 12 first>:w<i>`,
 * workers/python/harness_rl_worker/ray_job.py), or null.
 */
export function workerNode(worker: string | null): string | null {
  return /^ray:[^:]*:([0-9a-f]{12}):w\d+$/.exec(worker ?? '')?.[1] ?? null;
}

/** What the daemon knows of a run's Ray job (shown by GET /api/runs/:id/workers). */
export interface RayState {
  address: string;
  job_id: string | null;
  status: string | null;
  error: string | null;
  /** The nodes of the cluster Ray reported DEAD. */
  dead: Set<string>;
}

/** Whether Ray reported the node of this worker dead. */
export function onDeadNode(state: RayState, worker: string | null): boolean {
  const node = workerNode(worker);
  return node !== null && [...state.dead].some((id) => id.startsWith(node));
}

/** Ask Ray which nodes died; tell the new ones (a State API that fails is tried again next poll). */
async function watchNodes(
  address: string,
  state: RayState,
  nodesLost: (ids: string[]) => Promise<void>,
): Promise<void> {
  const dead = await deadRayNodes(address).catch(() => null);
  const fresh = (dead ?? []).filter((id) => !state.dead.has(id));
  if (fresh.length === 0) return;
  for (const id of fresh) state.dead.add(id);
  await nodesLost(fresh);
}

/**
 * Keep the run's Ray job running until `signal` aborts, then stop it and wait until it ended. A job
 * the daemon started before it restarted is adopted; one that ends while the run still runs (the
 * driver died, the head restarted) is submitted again.
 */
export async function superviseRayJob(
  ray: RayWorkersConfig,
  options: Omit<Parameters<typeof submitRayJob>[1], 'credential'> & {
    /** A new worker credential for the run (each submission gets its own; an adopted job keeps its). */
    credential: () => Promise<string>;
    state: RayState;
    signal: AbortSignal;
    runOver: () => Promise<boolean>;
    changed: () => void;
    /** Nodes Ray newly reported DEAD. */
    nodesLost: (ids: string[]) => Promise<void>;
    pollMs?: number;
  },
): Promise<void> {
  const { state, signal } = options;
  let backoff = 1000;
  while (!signal.aborted) {
    try {
      if (!state.job_id) {
        const [live, ...extra] = await liveRayJobs(ray.address, options.runId);
        for (const job of extra) await stopRayJob(ray.address, job.submission_id);
        state.job_id =
          live?.submission_id ??
          (await submitRayJob(ray, { ...options, credential: await options.credential() }));
        state.error = null;
        options.changed();
      }
      await watchNodes(ray.address, state, options.nodesLost);
      const job = await rayJob(ray.address, state.job_id);
      if (job.status !== state.status) {
        state.status = job.status;
        options.changed();
      }
      if (RAY_TERMINAL.has(job.status)) {
        if (await options.runOver()) break;
        state.error = `Ray job ${state.job_id} ended ${job.status}${job.message ? `: ${job.message}` : ''}; submitting it again`;
        state.job_id = null;
        options.changed();
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 30_000);
        continue;
      }
      backoff = 1000;
    } catch (err) {
      state.error = errorText(err);
      options.changed();
    }
    await sleep(options.pollMs ?? 2000, signal);
  }
  if (state.job_id && !RAY_TERMINAL.has(state.status ?? '')) {
    state.status = await stopRayJob(ray.address, state.job_id).catch((err) => {
      state.error = errorText(err);
      return state.status;
    });
    options.changed();
  }
}
