// Which calls are side calls (a recording's title or summary requests, a small router model) and which
// are bridged token-in-token-out: the proxy's per-call policy, decided from the scope and the body.
import type { DaemonContext } from '../context';
import type { BridgeMemory } from './bridge';
import type { Json } from './json';
import type { Scope } from './scope';

// Claude's Haiku, OpenAI's mini and nano, Gemini's flash-lite (Gemini CLI's model router)
const DEFAULT_SIDE_MODELS = '(^|[-_./])(haiku|mini|nano|lite)([-_./]|$)';
const TITLE_HINT = /\btitle\b|summari[sz]e this (coding )?conversation/i;

function systemText(body: Json): string {
  let s = '';
  const add = (v: unknown) => {
    if (typeof v === 'string') s += `${v}\n`;
    else if (Array.isArray(v)) for (const p of v) if (p && typeof p.text === 'string') s += `${p.text}\n`;
  };
  add(body.system);
  add(body.instructions);
  if (Array.isArray(body.messages))
    for (const m of body.messages) if (m?.role === 'system' || m?.role === 'developer') add(m.content);
  return s.slice(0, 4000);
}

export class CallPolicy {
  private readonly sideModels: RegExp;

  constructor(
    ctx: DaemonContext,
    private readonly memory: BridgeMemory,
  ) {
    let sideModels = new RegExp(DEFAULT_SIDE_MODELS, 'i');
    try {
      if (ctx.config.side_models) sideModels = new RegExp(ctx.config.side_models, 'i');
    } catch (e) {
      ctx.log('proxy: side_models is not a valid regular expression; using the default', {
        error: String(e),
      });
    }
    this.sideModels = sideModels;
  }

  /** `['side']` for a recording's side call (a small model, a title or summary, count_tokens), else none. */
  sideTags(scope: Scope, body: unknown, countTokensCall = false): string[] {
    if (!scope.recording) return [];
    if (countTokensCall) return ['side'];
    const b = (body && typeof body === 'object' ? body : {}) as Json;
    if (typeof b.model === 'string' && this.sideModels.test(b.model)) return ['side'];
    if (TITLE_HINT.test(systemText(b))) return ['side'];
    return [];
  }

  /**
   * The token-in-token-out bridge wherever the backend returns token ids: rollouts of runs with
   * `algorithm.tito` (the default), standalone rollouts unless created with `tito: false`, recordings on
   * a vLLM or reference upstream. Not for provider pass-through (text only) or side calls, which are no
   * turns of the trajectory (bridging them would also replace what the next main call extends).
   */
  titoOf(scope: Scope, tags: readonly string[]): BridgeMemory | undefined {
    if (tags.includes('side')) return undefined;
    if (scope.upstream && scope.upstream.kind !== 'vllm') return undefined;
    const on = scope.runConfig ? scope.runConfig.algorithm?.tito !== false : scope.rollout.tito !== false;
    return on ? this.memory : undefined;
  }
}
