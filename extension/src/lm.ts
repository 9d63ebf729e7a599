// Offers the model being trained as a chat model in VS Code (vscode.lm), where the running VS Code
// has registerLanguageModelChatProvider (1.104+), so chats with it go through the daemon's proxy
// and are recorded into the active recording. Only glue lives here: the request, the stream and
// token counts are lmChat.ts (tested against a real daemon). @types/vscode here is 1.100, so the
// few 1.104 types used are declared below and the call is guarded.
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import {
  type ChatMessageLike,
  type ChatModelInformation,
  type ChatOptionsLike,
  type ProxyConnection,
  type ResponsePart,
  streamChat,
  toChatRequest,
} from './lmChat';
import { listChatModels, TokenCounter } from './lmModels';

interface ChatProvider {
  provideLanguageModelChatInformation(
    options: { readonly silent?: boolean },
    token: vscode.CancellationToken,
  ): Promise<ChatModelInformation[]>;
  provideLanguageModelChatResponse(
    model: ChatModelInformation,
    messages: readonly ChatMessageLike[],
    options: ChatOptionsLike,
    progress: vscode.Progress<unknown>,
    token: vscode.CancellationToken,
  ): Promise<void>;
  provideTokenCount(
    model: ChatModelInformation,
    text: string | ChatMessageLike,
    token: vscode.CancellationToken,
  ): Promise<number>;
}
type Register = (vendor: string, provider: ChatProvider) => vscode.Disposable;
type PartClasses = {
  LanguageModelTextPart?: new (value: string) => unknown;
  LanguageModelToolCallPart?: new (callId: string, name: string, input: object) => unknown;
};

/** The VS Code part for a streamed piece; plain objects of the same shape where a class is missing. */
function toVsCodePart(part: ResponsePart): unknown {
  const classes = vscode as unknown as PartClasses;
  if (part.type === 'text')
    return classes.LanguageModelTextPart
      ? new classes.LanguageModelTextPart(part.value)
      : { value: part.value };
  return classes.LanguageModelToolCallPart
    ? new classes.LanguageModelToolCallPart(part.callId, part.name, part.input)
    : { callId: part.callId, name: part.name, input: part.input };
}

/** An AbortSignal that follows a VS Code cancellation token; dispose when done. */
function abortOn(token: vscode.CancellationToken): { signal: AbortSignal; dispose(): void } {
  const abort = new AbortController();
  if (token.isCancellationRequested) abort.abort();
  const sub = token.onCancellationRequested(() => abort.abort());
  return { signal: abort.signal, dispose: () => sub.dispose() };
}

/** Registers the provider when the API exists; returns whether it did. */
export function registerLanguageModel(ctx: Ctx): boolean {
  const lm = (vscode as unknown as { lm?: { registerLanguageModelChatProvider?: Register } }).lm;
  const register = lm?.registerLanguageModelChatProvider;
  if (typeof register !== 'function') return false;
  const counter = new TokenCounter();
  const connection = (): ProxyConnection | undefined => {
    const client = ctx.client;
    return client ? { baseUrl: client.baseUrl, token: client.token } : undefined;
  };
  const provider: ChatProvider = {
    async provideLanguageModelChatInformation() {
      const client = ctx.client;
      if (!client) return [];
      const runs = await client.listRuns(undefined, 20).catch(() => ({ items: [] }));
      const names: string[] = [];
      for (const r of runs.items) {
        const name = (r.config as { model?: { name?: string } } | null)?.model?.name;
        if (name) names.push(name);
      }
      return listChatModels({ baseUrl: client.baseUrl, token: client.token }, names);
    },
    async provideLanguageModelChatResponse(model, messages, options, progress, token) {
      const conn = connection();
      if (!conn)
        throw new Error('The Harness RL daemon is not running: start it ("Harness RL: Start Daemon") first.');
      const cancel = abortOn(token);
      try {
        for await (const part of streamChat(conn, toChatRequest(model.id, messages, options), cancel.signal))
          progress.report(toVsCodePart(part));
      } catch (err) {
        if (token.isCancellationRequested) return; // the proxy records the call as cancelled
        throw err;
      } finally {
        cancel.dispose();
      }
    },
    async provideTokenCount(model, text, token) {
      const cancel = abortOn(token);
      try {
        return await counter.count(connection(), model.id, text, cancel.signal);
      } catch {
        return 0; // cancelled: VS Code no longer wants the number
      } finally {
        cancel.dispose();
      }
    },
  };
  ctx.push(register('harness-rl', provider));
  return true;
}
