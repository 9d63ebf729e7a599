// Where a recording's calls go: its upstream's target (a vLLM or OpenAI root, what it serves, the
// user's key from <dataDir>/secrets.json) and the headers of an Anthropic upstream.
import { readSecrets } from '../config/secrets';
import { errorText } from '../error-text';
import { rootUrl } from '../http';
import { registerSecret } from '../redact';
import { askServedModels, type ServedModels } from './backends';
import type { FixedTarget } from './dispatch';
import { ProxyError } from './errors';
import type { ProxyRequest } from './front';
import type { Upstream } from './scope';

export const ANTHROPIC_BASE = 'https://api.anthropic.com';
export const OPENAI_BASE = 'https://api.openai.com/v1';

export class Upstreams {
  /**
   * The names each recording's vLLM upstream serves and its context length (the bridge's default
   * max_tokens), asked at most once a minute while it answers.
   */
  private readonly served = new Map<string, { at: number; served: Promise<ServedModels | null> }>();

  constructor(private readonly dataDir: string) {}

  private servedModels(root: string): Promise<ServedModels | null> {
    const known = this.served.get(root);
    if (known && Date.now() - known.at < 60_000) return known.served;
    const served = askServedModels(root, 10_000).then((s) => (s?.maxModelLen === undefined ? null : s));
    this.served.set(root, { at: Date.now(), served });
    // not known (down, not vLLM-shaped): asked again by the next call
    served.then((n) => n === null && this.served.get(root)?.served === served && this.served.delete(root));
    return served;
  }

  /** The target of a recording's OpenAI / vLLM upstream (chat and completions); null: the pool. */
  async target(u: Upstream | null): Promise<FixedTarget | null> {
    if (!u) return null;
    if (u.kind === 'vllm') {
      if (!u.base_url) throw new ProxyError(400, 'the recording upstream "vllm" has no base_url');
      const root = rootUrl(u.base_url);
      const models = await this.servedModels(root);
      return {
        root,
        name: u.base_url,
        headers: {},
        extras: true,
        served: models?.names ?? null,
        maxModelLen: models?.maxModelLen ?? null,
      };
    }
    if (u.kind === 'openai') {
      const key = upstreamKey(this.dataDir, 'openai');
      if (!key)
        throw new ProxyError(401, `no OpenAI key: put {"openai": "sk-..."} in ${this.dataDir}/secrets.json`);
      const base = u.base_url ?? OPENAI_BASE;
      return { root: rootUrl(base), name: base, headers: { authorization: `Bearer ${key}` }, extras: false };
    }
    throw new ProxyError(
      400,
      'this recording forwards to Anthropic: point the client at the Anthropic base URL (…/v1/messages)',
    );
  }

  /** The headers of a request to an Anthropic upstream: the user's key and the client's version/beta. */
  anthropicHeaders(req: ProxyRequest): Record<string, string> {
    const key = upstreamKey(this.dataDir, 'anthropic');
    if (!key)
      throw new ProxyError(
        401,
        `no Anthropic key: put {"anthropic": "sk-ant-..."} in ${this.dataDir}/secrets.json`,
      );
    const h: Record<string, string> = {
      'x-api-key': key,
      'anthropic-version': String(req.headers['anthropic-version'] ?? '2023-06-01'),
    };
    if (typeof req.headers['anthropic-beta'] === 'string')
      h['anthropic-beta'] = req.headers['anthropic-beta'];
    return h;
  }
}

/**
 * The user's own upstream API key `name` from `<dataDir>/secrets.json` (never stored in traces), read
 * with the shared reader; undefined when absent. A malformed file is a clear 500, not a crash.
 */
export function upstreamKey(dataDir: string, name: 'openai' | 'anthropic'): string | undefined {
  let secrets: Record<string, string>;
  try {
    secrets = readSecrets(dataDir);
  } catch (e) {
    throw new ProxyError(500, `cannot read the upstream keys: ${errorText(e)}`);
  }
  const key = secrets[name] || undefined;
  registerSecret(key);
  return key;
}
