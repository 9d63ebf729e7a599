// The models half of the VS Code language model provider (lm.ts), with no vscode import: the models it
// offers (the runs' models, then what the proxy serves), how each is described, and token counts from
// the proxy's count_tokens (the backend's tokenizer) with a documented estimate as fallback.
import { z } from 'zod';
import { restFetch } from '../../daemon/api/rest-call';
import {
  type ChatMessageLike,
  type ChatModelInformation,
  messageText,
  ProxyChatError,
  type ProxyConnection,
} from './lmChat';

// ---------- token counts ----------

/** The fallback when the daemon cannot count: about four characters per token (English text, BPE). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Token counts for provideTokenCount. The daemon counts with the serving backend's tokenizer
 * through the proxy's Anthropic `count_tokens` (there is no REST tokenize route): a message counts
 * as one user turn (its role framing included); a plain string counts as that turn minus an empty
 * one, i.e. the text's own tokens. These calls need the active recording and are recorded there as
 * side calls (tagged, not part of the rollout), so results are cached; when the daemon cannot count
 * (no recording, an upstream without a tokenizer, unreachable) the estimate is used and the daemon
 * is not asked again for `retryMs`.
 */
export class TokenCounter {
  private readonly cache = new Map<string, number>();
  private readonly failedUntil = new Map<string, number>();

  constructor(private readonly options: { maxEntries?: number; retryMs?: number; timeoutMs?: number } = {}) {}

  async count(
    conn: ProxyConnection | undefined,
    model: string,
    input: string | ChatMessageLike,
    signal?: AbortSignal,
  ): Promise<number> {
    const text = messageText(input);
    if (!conn) return estimateTokens(text);
    const scope = `${conn.baseUrl}\u0000${model}`;
    if ((this.failedUntil.get(scope) ?? 0) > Date.now()) return estimateTokens(text);
    try {
      const whole = await this.countTurn(conn, model, text, signal);
      if (typeof input !== 'string') return whole;
      const empty = await this.countTurn(conn, model, '', signal);
      return Math.max(0, whole - empty);
    } catch (e) {
      if (signal?.aborted) throw e;
      this.failedUntil.set(scope, Date.now() + (this.options.retryMs ?? 30_000));
      return estimateTokens(text);
    }
  }

  private async countTurn(
    conn: ProxyConnection,
    model: string,
    text: string,
    signal?: AbortSignal,
  ): Promise<number> {
    const key = `${conn.baseUrl}\u0000${model}\u0000${text}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      this.cache.delete(key); // refresh its place (least recently used goes first)
      this.cache.set(key, hit);
      return hit;
    }
    const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 10_000);
    const res = await restFetch(
      new URL('/v1/messages/count_tokens', conn.baseUrl).href,
      'POST',
      conn.token,
      { model, messages: [{ role: 'user', content: text }] },
      signal ? AbortSignal.any([signal, timeout]) : timeout,
    );
    const body = (await res.json().catch(() => null)) as { input_tokens?: unknown } | null;
    const n = body?.input_tokens;
    if (!res.ok || typeof n !== 'number' || !Number.isInteger(n) || n < 0)
      throw new ProxyChatError(`count_tokens failed (HTTP ${res.status})`, res.status);
    this.cache.set(key, n);
    const max = this.options.maxEntries ?? 2_000;
    while (this.cache.size > max) {
      const oldest = this.cache.keys().next().value;
      if (oldest === undefined) break;
      this.cache.delete(oldest);
    }
    return n;
  }
}

// ---------- models ----------

/** How the provider describes one model to VS Code. */
export function chatModelInformation(name: string): ChatModelInformation {
  return {
    id: name,
    name: `${name} (Harness RL)`,
    family: 'harness-rl',
    version: 'latest',
    tooltip: `${name} through the Harness RL proxy: chats are recorded into the active recording`,
    maxInputTokens: 8192,
    maxOutputTokens: 4096,
    capabilities: { toolCalling: true, imageInput: false },
  };
}

const ModelList = z.object({
  data: z.array(z.looseObject({ id: z.string(), owned_by: z.string().nullish() })),
});

/**
 * The models to offer: the runs' model names (the models being trained), then what the proxy itself
 * serves (`GET /v1/models` entries owned by harness-rl: the inference pool, or a recording's vLLM
 * upstream; an OpenAI/Anthropic pass-through listing is left out). At most `limit`, no duplicates.
 */
export async function listChatModels(
  conn: ProxyConnection,
  runModelNames: readonly string[],
  limit = 32,
): Promise<ChatModelInformation[]> {
  const names = new Set(runModelNames.filter((n) => n.length > 0));
  try {
    const res = await restFetch(
      new URL('/v1/models', conn.baseUrl).href,
      'GET',
      conn.token,
      undefined,
      AbortSignal.timeout(10_000),
    );
    const parsed = ModelList.safeParse(res.ok ? await res.json() : null);
    if (parsed.success) for (const m of parsed.data.data) if (m.owned_by === 'harness-rl') names.add(m.id);
  } catch {
    // the daemon is down or slow: offer the run models only
  }
  return [...names].slice(0, limit).map(chatModelInformation);
}
