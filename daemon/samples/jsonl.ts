// The JSONL side of the samples contract: trajectory lines in (validated with the zod Trajectory schema
// plus cross-field checks), sample lines out (SampleJson). Used by `harness-rl samples` and `export`.
import type { z } from 'zod';
import { errorText } from '../error-text';
import type { SampleJson } from '../protocol/samples';
import { Trajectory } from '../protocol/samples';
import type { Sample } from '../protocol/training';
import type { TrajectoryArrays } from './build';

export interface LineError {
  /** 1-based line number in the input file. */
  line: number;
  rollout_id: string | null;
  /** Path of the bad field, e.g. `calls[0].response_logprobs`; `(line)` when the line is not JSON. */
  field: string;
  message: string;
}

const MAX_TOKEN_ID = 0x7fffffff;

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out === '' ? '(line)' : out;
}

export function formatLineError(e: LineError): string {
  const who = e.rollout_id !== null ? ` (rollout ${e.rollout_id})` : '';
  return `line ${e.line}${who}: ${e.field}: ${e.message}`;
}

function issuesToErrors(issues: z.core.$ZodIssue[], line: number, rollout: string | null): LineError[] {
  return issues.map((issue) => {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = keys.length === 1 ? [...issue.path, keys[0]] : issue.path;
    const message =
      issue.code === 'unrecognized_keys'
        ? `unknown field${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`
        : / received undefined$/.test(issue.message)
          ? `required field is missing (${issue.message})`
          : issue.message;
    return { line, rollout_id: rollout, field: formatPath(path), message };
  });
}

/** Why a line that JSON.parse rejected is bad, naming the field when a non-JSON number literal is the cause. */
function jsonError(text: string, line: number, rollout: string | null, err: unknown): LineError {
  const literal = /"([^"\\]+)"\s*:\s*(-?NaN|-?Infinity|undefined)\b/.exec(text);
  if (literal) {
    return { line, rollout_id: rollout, field: literal[1], message: `${literal[2]} is not a JSON number` };
  }
  const detail = errorText(err);
  // name the last key before the error position, when the parser tells it
  const at = /position (\d+)/.exec(detail);
  const keys = at ? [...text.slice(0, Number(at[1])).matchAll(/"([^"\\]+)"\s*:/g)] : [];
  const field = keys.length > 0 ? keys[keys.length - 1][1] : '(line)';
  return { line, rollout_id: rollout, field, message: `not valid JSON (${detail})` };
}

/** Checks the schema cannot express: logprobs per response id, ids that fit int32. */
function crossFieldErrors(t: Trajectory, line: number): LineError[] {
  const errors: LineError[] = [];
  t.calls.forEach((c, i) => {
    for (const key of ['prompt_ids', 'response_ids'] as const) {
      const bad = c[key].findIndex((id) => id > MAX_TOKEN_ID);
      if (bad >= 0) {
        errors.push({
          line,
          rollout_id: t.rollout_id,
          field: `calls[${i}].${key}[${bad}]`,
          message: `token id ${c[key][bad]} is larger than 2^31−1`,
        });
      }
    }
    const lp = c.response_logprobs;
    if (lp && lp.length !== c.response_ids.length) {
      errors.push({
        line,
        rollout_id: t.rollout_id,
        field: `calls[${i}].response_logprobs`,
        message: `${lp.length} logprobs for ${c.response_ids.length} response ids (must be one per id)`,
      });
    }
  });
  return errors;
}

/** Parses and validates one input line (1-based `line` for messages). */
export function parseTrajectoryLine(
  text: string,
  line: number,
): { ok: true; value: Trajectory } | { ok: false; errors: LineError[] } {
  const rolloutMatch = /"rollout_id"\s*:\s*"((?:[^"\\]|\\.){1,200})"/.exec(text);
  let rollout = rolloutMatch ? rolloutMatch[1] : null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, errors: [jsonError(text, line, rollout, err)] };
  }
  if (raw && typeof raw === 'object' && typeof (raw as { rollout_id?: unknown }).rollout_id === 'string') {
    rollout = (raw as { rollout_id: string }).rollout_id;
  }
  const parsed = Trajectory.safeParse(raw);
  if (!parsed.success) return { ok: false, errors: issuesToErrors(parsed.error.issues, line, rollout) };
  const errors = crossFieldErrors(parsed.data, line);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: parsed.data };
}

/** Every non-blank line of a JSONL text as a trajectory; any error makes the whole input invalid. */
export function parseTrajectories(text: string): { trajectories: Trajectory[]; errors: LineError[] } {
  const trajectories: Trajectory[] = [];
  const errors: LineError[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const body = lines[i].trim();
    if (body === '') continue;
    const r = parseTrajectoryLine(body, i + 1);
    if (r.ok) trajectories.push(r.value);
    else errors.push(...r.errors);
  }
  return { trajectories, errors };
}

/** A validated trajectory line as buildSamples input (absent logprobs → null). */
export function trajectoryArrays(t: Trajectory): TrajectoryArrays {
  return {
    rollout_id: t.rollout_id,
    group_id: t.group_id,
    reward: t.reward,
    calls: t.calls.map((c) => ({
      prompt_ids: c.prompt_ids,
      response_ids: c.response_ids,
      response_logprobs: c.response_logprobs ?? null,
      temperature: c.temperature ?? null,
      constrained: c.constrained ?? null,
    })),
  };
}

/** A sample as its JSON line object: NaN logprobs → null, advantages 0 on mask-0 tokens. */
export function toSampleJson(s: Sample & { advantage?: number }): SampleJson {
  const n = s.input_ids.length;
  const advantages = new Array<number>(n);
  const oldLogprobs = new Array<number | null>(n);
  for (let i = 0; i < n; i++) {
    advantages[i] = s.loss_mask[i] ? (s.advantage ?? s.advantages[i]) : 0;
    const lp = s.old_logprobs[i];
    oldLogprobs[i] = Number.isNaN(lp) ? null : lp;
  }
  return {
    rollout_id: s.rollout_id,
    group_id: s.group_id,
    index: s.index,
    input_ids: Array.from(s.input_ids),
    loss_mask: Array.from(s.loss_mask) as (0 | 1)[],
    advantages,
    old_logprobs: oldLogprobs,
    loss_weights: Array.from(s.loss_weights),
    ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
  };
}
