// The training view's model: a rollout's llm calls merged token by token the way the samples
// stage merges them (spec/samples.md, merge exact), with each token's call, loss mask,
// logprob and advantage, and the prefix breaks that split samples. Pure (unit tested).
import type { HistoryChange, LlmCall, PrefixBreak } from '../../daemon/protocol/entities';
import type { SampleJson } from '../../daemon/protocol/samples';

export interface TokenCell {
  id: number;
  mask: 0 | 1;
  logprob: number | null;
  advantage: number | null;
  /** index of the llm call (within the rollout's calls) this token came from */
  call: number;
  text: string | null;
}

export interface SampleView {
  index: number;
  tokens: TokenCell[];
  /** the break that ended the previous sample and started this one */
  breakBefore: PrefixBreak | null;
  calls: number[];
}

type TokenCall = Pick<LlmCall, 'prompt_ids' | 'response_ids' | 'response_logprobs' | 'status'>;

/** Merges calls into samples; `samples` from the daemon (same ids) supply mask/advantage/logprobs. */
export function tokenView(
  calls: TokenCall[],
  breaks: PrefixBreak[],
  samples: SampleJson[] | null = null,
  texts: string[][] | null = null,
): SampleView[] {
  const out: SampleView[] = [];
  let cur: SampleView | null = null;
  calls.forEach((call, ci) => {
    if (!call.prompt_ids || !call.response_ids) return;
    const P = call.prompt_ids;
    const R = call.response_ids;
    const lp = call.response_logprobs;
    const resp = (): TokenCell[] =>
      R.map((id, j) => ({ id, mask: 1, logprob: lp?.[j] ?? null, advantage: null, call: ci, text: null }));
    if (cur && startsWith(P, cur.tokens)) {
      for (let j = cur.tokens.length; j < P.length; j++) {
        cur.tokens.push({ id: P[j], mask: 0, logprob: null, advantage: null, call: ci, text: null });
      }
      cur.tokens.push(...resp());
      cur.calls.push(ci);
      return;
    }
    let breakBefore: PrefixBreak | null = null;
    if (cur) {
      out.push(cur);
      breakBefore = breaks.find((b) => b.call_index === ci) ?? diagnoseBreak(cur.tokens, P, ci);
    }
    cur = {
      index: out.length,
      tokens: [
        ...P.map((id) => ({ id, mask: 0 as const, logprob: null, advantage: null, call: ci, text: null })),
        ...resp(),
      ],
      breakBefore,
      calls: [ci],
    };
  });
  if (cur) out.push(cur);
  for (const view of out) {
    const s = samples?.find((x) => x.index === view.index);
    if (
      s &&
      s.input_ids.length === view.tokens.length &&
      s.input_ids.every((id, i) => id === view.tokens[i].id)
    ) {
      view.tokens.forEach((t, i) => {
        t.mask = s.loss_mask[i];
        t.advantage = s.loss_mask[i] ? s.advantages[i] : null;
        t.logprob = s.old_logprobs[i] ?? t.logprob;
      });
    }
    const tt = texts?.[view.index];
    if (tt && tt.length === view.tokens.length) {
      for (let i = 0; i < tt.length; i++) view.tokens[i].text = tt[i];
    }
  }
  return out;
}

function startsWith(prompt: number[], seq: TokenCell[]): boolean {
  if (prompt.length < seq.length) return false;
  for (let i = 0; i < seq.length; i++) if (prompt[i] !== seq[i].id) return false;
  return true;
}

/** A break the daemon did not report: the first differing position and short windows. */
export function diagnoseBreak(seq: TokenCell[], prompt: number[], callIndex: number): PrefixBreak {
  let p = 0;
  while (p < seq.length && p < prompt.length && seq[p].id === prompt[p]) p++;
  return {
    call_index: callIndex,
    position: p,
    expected: seq.slice(p, p + 16).map((t) => t.id),
    actual: prompt.slice(p, p + 16),
    expected_text: null,
    actual_text: null,
    class: 'other',
  };
}

const DIAGNOSIS: Record<PrefixBreak['class'], string> = {
  template:
    'The chat template rendered earlier turns differently in this prompt (for example thinking stripped from history or a changed system prompt), so the sampled tokens are not a prefix of the new prompt.',
  retokenized:
    'The harness resent earlier model output as text and it tokenized differently from the tokens the model sampled; the token-in-token-out bridge (tito) avoids this.',
  other:
    'The new prompt is not a continuation of the previous prompt and response (the harness rewrote or truncated history).',
};

const CHANGE: Record<HistoryChange['change'], string> = {
  message_removed: 'is missing',
  role_changed: 'has another role',
  whitespace: 'was resent with different whitespace',
  content_edited: 'was edited',
  tool_calls_edited: 'has other tool calls',
  tool_call_id_changed: 'answers another tool call',
  tools_changed: 'The tools offered changed',
  template_options_changed: 'The chat template options changed',
};

/** Why a prefix break happened: the history change the bridge found (which message, how), else the token class. */
export function breakDiagnosis(b: PrefixBreak): string {
  const c = b.change;
  if (!c)
    return b.bridge_fallback ? `${DIAGNOSIS[b.class]} Bridge: ${b.bridge_fallback}.` : DIAGNOSIS[b.class];
  const what = c.index === null ? CHANGE[c.change] : `Message ${c.index} (${c.role}) ${CHANGE[c.change]}`;
  return `${what}: ${c.detail}.`;
}

/** Heat map: probability exp(logprob) → share (0–100) of the "unlikely" colour; null when unknown. */
export function heat(logprob: number | null): number | null {
  if (logprob === null || !Number.isFinite(logprob)) return null;
  const p = Math.exp(Math.min(0, logprob));
  return Math.round((1 - p) * 100);
}

/** How a token shows: its text with whitespace made visible, or its id. */
export function tokenLabel(t: Pick<TokenCell, 'id' | 'text'>): string {
  if (t.text === null) return String(t.id);
  return t.text.replace(/\n/g, '↵\n').replace(/\t/g, '→') || '∅';
}

export interface TokenSummary {
  samples: number;
  tokens: number;
  maskTokens: number;
  breaks: number;
  meanLogprob: number | null;
}

export function summarize(views: SampleView[]): TokenSummary {
  let tokens = 0;
  let mask = 0;
  let lpSum = 0;
  let lpN = 0;
  for (const v of views) {
    tokens += v.tokens.length;
    for (const t of v.tokens) {
      if (t.mask) mask++;
      if (t.mask && t.logprob !== null) {
        lpSum += t.logprob;
        lpN++;
      }
    }
  }
  return {
    samples: views.length,
    tokens,
    maskTokens: mask,
    breaks: views.filter((v) => v.breakBefore).length,
    meanLogprob: lpN ? lpSum / lpN : null,
  };
}
