// Small pure formatting helpers for tree items (unit tested).
import type { LlmCall, Rollout } from '../../daemon/protocol/entities';
import type { WorkersNote } from '../../webview/src/workers';

export function statusIcon(status: string): string {
  switch (status) {
    case 'running':
    case 'starting':
      return 'sync';
    case 'queued':
    case 'pending':
    case 'created':
      return 'clock';
    case 'succeeded':
    case 'complete':
    case 'finished':
    case 'ok':
    case 'ready':
      return 'pass';
    case 'failed':
    case 'error':
    case 'unhealthy':
      return 'error';
    case 'timed_out':
    case 'unresponsive':
      return 'watch';
    case 'cancelled':
    case 'stopped':
      return 'circle-slash';
    case 'paused':
      return 'debug-pause';
    case 'active':
      return 'record';
    default:
      return 'circle-outline';
  }
}

export function formatReward(r: number | null | undefined): string {
  if (r === null || r === undefined) return 'no reward';
  return `reward ${Number.isInteger(r) ? r : r.toFixed(3)}`;
}

export function rolloutDescription(r: Rollout): string {
  const parts = [r.status, formatReward(r.reward)];
  if (r.attempt_count > 1) parts.push(`${r.attempt_count} attempts`);
  if (r.stats?.prefix_breaks) parts.push(`${r.stats.prefix_breaks} prefix breaks`);
  return parts.join(' · ');
}

export function callLabel(
  c: Pick<
    LlmCall,
    | 'seq'
    | 'wire_api'
    | 'model'
    | 'status'
    | 'usage'
    | 'total_ms'
    | 'model_version'
    | 'prompt_ids'
    | 'response_ids'
  >,
): {
  label: string;
  description: string;
} {
  const prompt = c.usage?.prompt_tokens ?? c.prompt_ids?.length;
  const completion = c.usage?.completion_tokens ?? c.response_ids?.length;
  const parts: string[] = [c.status];
  if (prompt !== undefined || completion !== undefined)
    parts.push(`${prompt ?? '?'}+${completion ?? '?'} tok`);
  if (c.total_ms !== null && c.total_ms !== undefined) parts.push(`${Math.round(c.total_ms)} ms`);
  if (c.model_version !== null && c.model_version !== undefined) parts.push(`v${c.model_version}`);
  return { label: `#${c.seq} ${c.wire_api}${c.model ? ` ${c.model}` : ''}`, description: parts.join(' · ') };
}

export type StatusView =
  | { kind: 'stopped' }
  | { kind: 'starting' }
  | { kind: 'failed' }
  | { kind: 'idle'; url: string }
  | {
      kind: 'training';
      run: string;
      step: number;
      steps?: number;
      url: string;
      others?: number;
      /** What the run's workers need (describeWorkers), when anything. */
      workers?: WorkersNote | null;
    }
  | { kind: 'recording'; name: string; url: string };

/** The status bar's text and tooltip line for each daemon state. */
export function describeStatus(s: StatusView): { text: string; detail: string } {
  switch (s.kind) {
    case 'stopped':
      return { text: '$(circle-slash) Harness RL', detail: 'Daemon stopped' };
    case 'starting':
      return { text: '$(loading~spin) Harness RL', detail: 'Daemon starting…' };
    case 'failed':
      return { text: '$(error) Harness RL', detail: 'Daemon failed — see the logs' };
    case 'idle':
      return { text: '$(pulse) Harness RL', detail: `Daemon idle at ${s.url}` };
    case 'training': {
      const more = s.others ? ` (+${s.others})` : '';
      const moreRuns = s.others ? `, and ${s.others} more run${s.others > 1 ? 's' : ''}` : '';
      if (s.workers?.waiting) {
        // Nothing runs: no spinner, say why and what to do.
        return {
          text: `$(warning) ${s.run} step ${s.step}${s.steps ? `/${s.steps}` : ''} · ${s.workers.short}${more}`,
          detail: `Run **${s.run}** at step ${s.step}${s.steps ? ` of ${s.steps}` : ''}${moreRuns}: ${s.workers.detail}`,
        };
      }
      return {
        text: `$(sync~spin) ${s.run} step ${s.step}${s.steps ? `/${s.steps}` : ''}${more}`,
        detail: `Training run **${s.run}**, step ${s.step}${s.steps ? ` of ${s.steps}` : ''}${moreRuns} (${s.url})`,
      };
    }
    case 'recording':
      return { text: `$(record) Recording ${s.name}`, detail: `Recording **${s.name}** (${s.url})` };
  }
}
