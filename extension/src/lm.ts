// Offers the model being trained as a chat model in VS Code (vscode.lm), where the running VS Code
// has registerLanguageModelChatProvider (1.104+). @types/vscode here is 1.100, so the few types
// used are declared below and the call is guarded.
import * as vscode from 'vscode';
import type { Ctx } from './ctx';

interface ChatInformation {
  id: string;
  name: string;
  family: string;
  version: string;
  maxInputTokens: number;
  maxOutputTokens: number;
  capabilities: Record<string, unknown>;
}
interface ChatMessageLike {
  role: number;
  content: readonly unknown[];
}
interface ChatProvider {
  provideLanguageModelChatInformation(
    options: unknown,
    token: vscode.CancellationToken,
  ): Promise<ChatInformation[]>;
  provideLanguageModelChatResponse(
    model: ChatInformation,
    messages: readonly ChatMessageLike[],
    options: unknown,
    progress: vscode.Progress<unknown>,
    token: vscode.CancellationToken,
  ): Promise<void>;
  provideTokenCount(
    model: ChatInformation,
    text: string | ChatMessageLike,
    token: vscode.CancellationToken,
  ): Promise<number>;
}
type Register = (vendor: string, provider: ChatProvider) => vscode.Disposable;

function textOf(m: ChatMessageLike | string): string {
  if (typeof m === 'string') return m;
  return m.content
    .map((p) => (p && typeof p === 'object' && 'value' in p && typeof p.value === 'string' ? p.value : ''))
    .join('');
}

/** Registers the provider when the API exists; returns whether it did. */
export function registerLanguageModel(ctx: Ctx): boolean {
  const lm = (vscode as unknown as { lm?: { registerLanguageModelChatProvider?: Register } }).lm;
  const register = lm?.registerLanguageModelChatProvider;
  if (typeof register !== 'function') return false;
  const provider: ChatProvider = {
    async provideLanguageModelChatInformation() {
      const client = ctx.client;
      if (!client) return [];
      const runs = await client.listRuns(undefined, 20).catch(() => ({ items: [] }));
      const names = new Set<string>();
      for (const r of runs.items) {
        const name = (r.config as { model?: { name?: string } } | null)?.model?.name;
        if (name) names.add(name);
      }
      return [...names].map((name) => ({
        id: name,
        name: `${name} (Harness RL)`,
        family: 'harness-rl',
        version: 'latest',
        maxInputTokens: 8192,
        maxOutputTokens: 4096,
        capabilities: {},
      }));
    },
    async provideLanguageModelChatResponse(model, messages, _options, progress, token) {
      const client = ctx.client;
      if (!client) throw new Error('the Harness RL daemon is not running');
      const abort = new AbortController();
      token.onCancellationRequested(() => abort.abort());
      const res = await fetch(new URL('/v1/chat/completions', client.baseUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${client.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: model.id,
          stream: true,
          messages: messages.map((m) => ({ role: m.role === 2 ? 'assistant' : 'user', content: textOf(m) })),
        }),
        signal: abort.signal,
      });
      if (!res.ok || !res.body) throw new Error(`the daemon answered HTTP ${res.status}`);
      const decoder = new TextDecoder();
      let buf = '';
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          nl = buf.indexOf('\n');
          if (!line.startsWith('data:')) continue;
          const payload = line.slice(5).trim();
          if (payload === '[DONE]') return;
          try {
            const delta = JSON.parse(payload).choices?.[0]?.delta?.content;
            if (typeof delta === 'string' && delta) progress.report(new vscode.LanguageModelTextPart(delta));
          } catch {
            // ignore keep-alives
          }
        }
      }
    },
    async provideTokenCount(_model, text) {
      return Math.ceil(textOf(text).length / 4);
    },
  };
  ctx.push(register('harness-rl', provider));
  return true;
}
