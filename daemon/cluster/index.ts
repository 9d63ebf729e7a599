// The cluster plugin: the run scheduler (RunController), which the worker routes of the API table
// (api/workers.ts) report to. Runs a previous daemon left running resume from their stored step.
import type { DaemonContext, RunController } from '../context';
import type { ProxyHandle } from '../proxy';
import { Workers } from '../worker/workers';
import { Scheduler, type SchedulerOptions } from './scheduler';

/** heartbeatSeconds: 5 unless given. */
export interface ClusterOptions extends Partial<SchedulerOptions> {
  /** Resume runs left 'running' (default true). */
  resume?: boolean;
}

export async function registerCluster(
  ctx: DaemonContext,
  proxy: ProxyHandle,
  options: ClusterOptions = {},
): Promise<RunController> {
  const heartbeatSeconds = options.heartbeatSeconds ?? 5;
  // A worker that waits for a claim is seen every second; one running a rollout every heartbeat.
  const workers = new Workers(ctx, { goneAfterMs: Math.max(3000, heartbeatSeconds * 3 * 1000) });
  const scheduler = new Scheduler(
    ctx,
    proxy,
    {
      heartbeatSeconds,
      sweepIntervalMs: options.sweepIntervalMs ?? 2000,
      heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? heartbeatSeconds * 6 * 1000,
    },
    workers,
  );
  if (options.resume ?? true) {
    // After the daemon finished starting (the caller sets ctx.runs once we return).
    setImmediate(() => {
      scheduler.resumeAll().catch((err) => ctx.log('resuming runs failed', { error: String(err) }));
    });
  }
  return scheduler;
}
