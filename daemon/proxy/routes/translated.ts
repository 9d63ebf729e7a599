// A Responses, Messages or Gemini request translated to chat for the inference backends: parsed by the
// wire's translator, hosted tools left out (or refused), sampled, and run like a native chat call.
import { z } from 'zod';
import { errorText } from '../../error-text';
import type { WireApi } from '../../protocol/entities';
import type { Call } from '../call';
import { backendBody, type FixedTarget } from '../dispatch';
import { invalidBody, ProxyError } from '../errors';
import type { Json } from '../json';
import { type Output, translatedOutput } from '../output';
import { runCall } from '../pipeline';
import { sampledBody } from '../sampling';
import type { Scope } from '../scope';
import { translators } from '../translate';
import type { ChatRequest } from '../translate/types';
import { asProxyError, type ProxyDeps } from './deps';

/** Runs `call` (its scope known) of a translated wire through the backends. Never throws. */
export async function runTranslated(
  d: ProxyDeps,
  call: Call,
  wire: Extract<WireApi, 'responses' | 'messages' | 'gemini'>,
  body: Json,
  early: Output | undefined,
): Promise<void> {
  const scope = call.scope as Scope;
  const t = translators[wire];
  if (!t) return void call.fail(new ProxyError(501, `the ${wire} API is not available yet`), {}, early);
  let parsedReq: unknown;
  let chat: ChatRequest;
  let stream: boolean;
  let output: Output;
  try {
    parsedReq = t.parse(body);
    stream = t.isStream(parsedReq);
    chat = t.toChat(parsedReq);
    output = translatedOutput(t, parsedReq);
  } catch (e) {
    if (e instanceof z.ZodError) return void call.fail(invalidBody(e), {}, early);
    return void call.fail(new ProxyError(400, errorText(e)), {}, early);
  }
  // Hosted tools (web_search …) the backend cannot run: left out and noted, or refused by the run.
  const leftOut = t.leftOut?.(parsedReq) ?? [];
  if (leftOut.length > 0 && scope.runConfig?.inference?.unsupported_tools === 'reject')
    return void call.fail(
      new ProxyError(
        400,
        `${leftOut.map((l) => `${l.path} (${l.tool}) is a ${l.reason}`).join('; ')} (this run sets inference.unsupported_tools: reject)`,
        leftOut[0].path,
        'unsupported_tool',
      ),
      {},
      output,
    );
  for (const l of leftOut) call.tags.push(`tool-left-out:${l.tool} (${l.reason})`);
  let target: FixedTarget | null;
  let sent: ReturnType<typeof sampledBody>;
  try {
    target = await d.upstreams.target(scope.upstream);
    sent = sampledBody(scope, backendBody(chat as Json, 'chat', target?.extras ?? true), wire);
  } catch (e) {
    return void call.fail(asProxyError(e), {}, output);
  }
  await runCall(call, d.pool, {
    kind: 'chat',
    body: sent.body,
    sampling: sent.plan,
    stream,
    output,
    target,
    tito: d.policy.titoOf(scope, call.tags),
    promptIds: d.promptIds,
  });
}
