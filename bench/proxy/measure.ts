// How the proxy bench measures a target over a phase: its process's CPU and the others' beside it,
// round after round in a rotating order (BENCH_ROUNDS), and the ratios every figure is given as.
import { cpus, loadavg } from 'node:os';
import type { Target } from '../client';
import { cpuOf, machineTimes, quantile, round } from '../emit';
import { monotonicUs } from '../profile';
import type { Rate } from './drive';
import type { Goals } from './goals';
import type { Proxied, Targets, Windows } from './targets';

/** What every phase shares: the targets, the goals it fills in, and the run's settings. */
export interface Phase {
  t: Targets;
  goals: Map<string, Goals>;
  /** BENCH_SECONDS (4) a measurement, in ms. */
  ms: number;
  /** BENCH_ROUNDS (1): how many times each target is measured per phase. */
  rounds: number;
}

/** One target's run: its rate, its process's CPU, and the others' beside it (see `measured`). */
export interface Measured extends Rate {
  cpuUs: number;
  backendCpuUs: number;
  clientCpuUs: number;
  idleShare: number;
}

/** One target to measure in a phase: its process, what drives it, and where its window goes. */
export interface Run {
  proc: Proxied['proc'];
  fn: () => Promise<Rate>;
  window?: Windows;
  /** The window's phase name when not the phase's (proxy.profile). */
  phase?: string;
}

/** The machine's load beside each figure. */
export const load = () => ({ loadavg_1m: round(loadavg()[0], 2), cores: cpus().length });

/**
 * Runs `fn` against the target of `proc`, with that process's CPU time over it, the backend's and
 * this client's beside it, and the share of the machine's CPU time nobody used (near 0: the figure
 * is the machine's; well above: a pipeline stall, not CPU, bounds it).
 */
async function measured(fake: Proxied['proc'], run: Run, phase: string): Promise<Measured> {
  const { proc, fn, window } = run;
  const c0 = cpuOf(proc);
  const b0 = proc === fake ? 0 : cpuOf(fake);
  const u0 = process.cpuUsage();
  const m0 = machineTimes();
  const from = monotonicUs();
  const r = await fn();
  window?.push({ phase, from, to: monotonicUs(), calls: r.calls });
  const u = process.cpuUsage(u0);
  const m = machineTimes();
  return {
    ...r,
    cpuUs: cpuOf(proc) - c0,
    backendCpuUs: proc === fake ? 0 : cpuOf(fake) - b0,
    clientCpuUs: u.user + u.system,
    idleShare: (m.idle - m0.idle) / (m.total - m0.total),
  };
}

/** A target's rounds as one: the median round's rate, CPU per call over all rounds. */
const merged = (list: Measured[]): Measured => ({
  rate: quantile(
    list.map((m) => m.rate),
    0.5,
  ),
  calls: list.reduce((a, m) => a + m.calls, 0),
  tokens: list.reduce((a, m) => a + m.tokens, 0),
  cpuUs: list.reduce((a, m) => a + m.cpuUs, 0),
  backendCpuUs: list.reduce((a, m) => a + m.backendCpuUs, 0),
  clientCpuUs: list.reduce((a, m) => a + m.clientCpuUs, 0),
  idleShare: list.reduce((a, m) => a + m.idleShare, 0) / list.length,
});

// BENCH_ROUNDS=k: each phase measures every target k times, in a rotating order; rates are the
// median round, CPU per call over all rounds.
export async function inRounds(p: Phase, runs: Run[], phase: string): Promise<Measured[]> {
  const all: Measured[][] = runs.map(() => []);
  for (let r = 0; r < p.rounds; r++)
    for (let k = 0; k < runs.length; k++) {
      const i = (k + r) % runs.length;
      all[i].push(await measured(p.t.fake.proc, runs[i], runs[i].phase ?? phase));
    }
  return all.map(merged);
}

/** Every target (direct, both pass-throughs, each proxy) driven by `drive`, in rounds. */
export const eachTarget = (p: Phase, phase: string, drive: (t: Target) => Promise<Rate>) =>
  inRounds(
    p,
    [
      { proc: p.t.fake.proc, fn: () => drive(p.t.direct) },
      { proc: p.t.pass.proc, fn: () => drive(p.t.floor), window: p.t.passWindows },
      { proc: p.t.tokenPass.proc, fn: () => drive(p.t.tokenFloor) },
      ...p.t.proxies.map((x) => ({ proc: x.proc, fn: () => drive(x.target), window: x.windows })),
    ],
    phase,
  );

/**
 * What the other parts did while each target was measured, per `unit` (request, token): the backend's
 * and this client's CPU, and the machine's idle share. The proxy asks the backend for token ids and
 * logprobs, which the direct and pass-through calls do not: the backend's own work differs by target.
 */
export const around = (unit: string, per: (m: Measured) => number, ms: Record<string, Measured>) => {
  const out: Record<string, number> = {};
  for (const [name, m] of Object.entries(ms)) {
    if (name !== 'direct') out[`backend_cpu_us_per_${unit}_${name}`] = round(m.backendCpuUs / per(m), 1);
    out[`client_cpu_us_per_${unit}_${name}`] = round(m.clientCpuUs / per(m), 1);
    out[`machine_idle_share_${name}`] = round(m.idleShare, 2);
  }
  return out;
};

/** The pass-throughs' and each proxy's figure as ratios to direct and to the pass-throughs. */
export const ratios = (direct: number, pass: number, tokenPass: number, proxy: number) => ({
  ratio: round(proxy / direct),
  passthrough_ratio: round(pass / direct),
  ratio_to_passthrough: round(proxy / pass),
  token_passthrough_ratio: round(tokenPass / direct),
  ratio_to_token_passthrough: round(proxy / tokenPass),
});
