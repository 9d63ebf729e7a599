// Why an evaluation attempt failed, and whose fault it was: the infrastructure's (a worker that went
// silent, a backend or the daemon unreachable: retried, never scored) or the harness's (it crashed, gave
// no answer: scored 0, since a harness that breaks is a worse harness). A timeout counts as the
// infrastructure's, as the store's own attempt failures have it.
import type { Attempt } from '../protocol/entities';
import type { EvalFailureKind } from '../protocol/evaluation';

const INFRASTRUCTURE =
  /the worker stopped|could not start|could not read rollout|ECONNREFUSED|ECONNRESET|socket hang up|fetch failed|\b(502|503|504)\b|Bad Gateway|Service Unavailable|no backend|backend (?:failed|unreachable)/i;

const NOISE = /^at |^Node\.js v\d|^\^+$|^file:\/\/|^\s*$/;

/** Ids (prefix_ + 22 base32 characters) and long numbers out, so reasons group across attempts. */
function generic(text: string): string {
  return text
    .replace(/\b[a-z]{1,6}_[0-9a-z]{22}\b/g, '…')
    .replace(/\d{4,}/g, 'N')
    .trim();
}

/**
 * An attempt's failure: the kind and reason its ender named (`attempt.failure`, where the store keeps
 * one), else read from its status and error text.
 */
export function failureOf(
  attempt: Pick<Attempt, 'status' | 'error'> & { failure?: { kind: EvalFailureKind; reason: string } | null },
): { kind: EvalFailureKind; reason: string } {
  const error = attempt.error ?? '';
  if (attempt.failure) {
    const detail = errorDetail(error);
    return {
      kind: attempt.failure.kind,
      reason: detail ? `${attempt.failure.reason}: ${detail}`.slice(0, 160) : attempt.failure.reason,
    };
  }
  if (attempt.status === 'unresponsive') return { kind: 'infrastructure', reason: 'worker unresponsive' };
  if (attempt.status === 'cancelled') return { kind: 'infrastructure', reason: 'cancelled' };
  if (attempt.status === 'timed_out') return { kind: 'infrastructure', reason: 'deadline' };
  const kind: EvalFailureKind = INFRASTRUCTURE.test(error) ? 'infrastructure' : 'harness';
  return { kind, reason: errorDetail(error) || 'failed' };
}

/**
 * "harness exit code 1: <stderr tail>": the head and the error line of the tail say what went wrong
 * (Node's stack frames and its closing version line say nothing).
 */
function errorDetail(error: string): string {
  const lines = error
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const head = lines[0] ?? '';
  const tail = lines.slice(1).filter((l) => !NOISE.test(l));
  const last = tail.findLast((l) => /\b\w*(Error|Exception)\b/.test(l)) ?? tail.at(-1) ?? '';
  return generic(last ? `${head.split(':')[0]}: ${last}` : head).slice(0, 160);
}
