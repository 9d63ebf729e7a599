// Small pure formatting helpers for tree items (unit tested).
import type { Group, LlmCall, Rollout, Run } from '../../daemon/protocol/entities';
import { parseEvolutionRecordingName } from '../../daemon/protocol/evolution';
import { count, formatNumber, statusClass } from '../../webview/src/format';
import { evaluationRunName, runLabels } from '../../webview/src/runLabels';
import type { WorkersNote } from '../../webview/src/workers';

export function statusIcon(status: string): string {
  // An llm call that answered but cannot be trained on (no_choices, no_token_ids, logprobs_mismatch).
  if (statusClass(status) === 'warning') return 'warning';
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
    case 'dropped': // a group its step did not train on (dynamic sampling)
      return 'dash';
    case 'active':
      return 'record';
    default:
      return 'circle-outline';
  }
}

export function formatReward(r: number | null | undefined): string {
  if (r === null || r === undefined) return 'no reward';
  return `reward ${formatNumber(r)}`;
}

/**
 * The theme colour of a reward: green at 1 or more, red at 0 or less, yellow between (rewards are
 * mostly in [0, 1]); none without a reward.
 */
export function rewardColor(
  r: number | null | undefined,
): 'charts.green' | 'charts.yellow' | 'charts.red' | undefined {
  if (r === null || r === undefined) return undefined;
  return r >= 1 ? 'charts.green' : r <= 0 ? 'charts.red' : 'charts.yellow';
}

/** What matters first: the reward, then the status, then what went unusual. */
export function rolloutDescription(
  r: Pick<Rollout, 'status' | 'reward' | 'attempt_count' | 'stats'>,
): string {
  const parts = r.reward === null ? [r.status] : [formatNumber(r.reward), r.status];
  if (r.attempt_count > 1) parts.push(count(r.attempt_count, 'attempt'));
  if (r.stats?.prefix_breaks) parts.push(count(r.stats.prefix_breaks, 'prefix break'));
  return parts.join(' · ');
}

/** Fields that usually hold a task's text, in the order they are tried. */
const TEXT_FIELDS = [
  'prompt',
  'question',
  'problem',
  'instruction',
  'task',
  'query',
  'input',
  'text',
  'content',
];
const NAME_FIELDS = ['title', 'name', 'id'];

/** A task input as one short line: its prompt-like field, its last user message, its name, else its fields. */
export function taskText(input: unknown, max = 80): string {
  return oneLine(rawTaskText(input, 0), max);
}

function rawTaskText(input: unknown, depth: number): string {
  if (input === null || input === undefined) return '';
  if (typeof input === 'string') return input;
  if (typeof input !== 'object') return String(input);
  if (Array.isArray(input)) {
    const user = input.filter((m) => isRecord(m) && m.role === 'user').at(-1);
    return user ? rawTaskText((user as Record<string, unknown>).content, depth + 1) : compact(input);
  }
  const o = input as Record<string, unknown>;
  if (depth < 3) {
    for (const k of TEXT_FIELDS) {
      const text = o[k] === undefined ? '' : rawTaskText(o[k], depth + 1);
      if (text.trim()) return text;
    }
    if (Array.isArray(o.messages)) return rawTaskText(o.messages, depth + 1);
  }
  for (const k of NAME_FIELDS) if (typeof o[k] === 'string' && o[k]) return o[k] as string;
  return compact(o);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** `a=2 b=3` for flat objects, JSON otherwise. */
function compact(v: unknown): string {
  if (!isRecord(v) || Array.isArray(v)) return JSON.stringify(v) ?? '';
  return Object.entries(v)
    .map(([k, x]) => `${k}=${typeof x === 'string' ? x : JSON.stringify(x)}`)
    .join(' ');
}

/** Whitespace collapsed, cut at `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
}

// Run names told apart live beside the dashboard, which shows them too.
export { evaluationRunName, runLabels, startedAt } from '../../webview/src/runLabels';

/**
 * Run names as the Runs view and every picker show them: a candidate's evaluation run as
 * evaluationRunName, runs of one shown name told apart by when they started (runLabels).
 */
export function runNames(runs: readonly Pick<Run, 'id' | 'name' | 'created_at'>[]): Map<string, string> {
  return runLabels(runs.map((r) => ({ ...r, name: evaluationRunName(r.name) })));
}

/** An evolution's proposer or critic recording as "proposer · generation 1"; other names as they are. */
export function recordingName(name: string): string {
  const r = parseEvolutionRecordingName(name);
  return r ? `${r.role} · generation ${r.generation}` : name;
}

/** A run row's description: where it is first ("step 3/30"), then its status and model version. */
export function runDescription(r: Pick<Run, 'status' | 'step' | 'model_version' | 'config'>): string {
  const steps = (r.config as { schedule?: { steps?: number } } | null)?.schedule?.steps;
  return `step ${r.step}${steps ? `/${steps}` : ''} · ${r.status} · v${r.model_version}`;
}

/** A group row's description: how many of its rollouts, then its status. */
export function groupDescription(g: Pick<Group, 'status' | 'size'>): string {
  return `${count(g.size, 'rollout')} · ${g.status}`;
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
  | { kind: 'found'; url: string }
  | { kind: 'idle'; url: string }
  | {
      kind: 'training';
      run: string;
      /** The run's id: the item opens its dashboard, the tooltip stops it. */
      runId?: string;
      step: number;
      steps?: number;
      url: string;
      others?: number;
      /** What the run's workers need (describeWorkers), when anything. */
      workers?: WorkersNote | null;
    }
  | { kind: 'recording'; name: string; url: string }
  /** A run that paused itself (a `validation:` threshold) and waits for a person; `message` says why. */
  | { kind: 'paused'; runId: string; run: string; step: number; message: string; url: string };

/** The status bar's text and tooltip line for each daemon state. */
export function describeStatus(s: StatusView): { text: string; detail: string } {
  switch (s.kind) {
    case 'stopped':
      return { text: '$(circle-slash) Harness RL', detail: 'Daemon stopped' };
    case 'starting':
      return { text: '$(loading~spin) Harness RL', detail: 'Daemon starting…' };
    case 'failed':
      return { text: '$(error) Harness RL', detail: 'Daemon failed — see the logs' };
    case 'found':
      return {
        text: '$(key) Harness RL',
        detail: `A daemon runs at ${s.url} but does not accept the known tokens`,
      };
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
    case 'paused':
      return {
        text: `$(debug-pause) ${s.run} paused at step ${s.step}`,
        detail: `Run **${s.run}** paused: ${s.message.replace(/[\\`*_[\]<>]/g, '\\$&')}`,
      };
  }
}
