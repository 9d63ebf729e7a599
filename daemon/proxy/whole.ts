// A whole (not streamed) answer: read, checked, translated for the harness and recorded before it is
// sent; a backend error, a JSON answer to a streamed request or garbage is a recorded failure instead.
import { readText } from '../http';
import type { NewLlmCall } from '../protocol/entities';
import { JsonText } from '../store/json-text';
import type { BackendKind } from './assemble';
import type { Call } from './call';
import { type Dispatched, sendFailure } from './dispatch';
import { ProxyError, wholeAnswerError } from './errors';
import { parseAnswer } from './fast-paths';
import type { Json } from './json';
import type { Output } from './output';
import type { PromptIdsMemo } from './prompt-ids';
import type { AnswerRecord } from './stream';
import { completionToChat } from './tito';

export interface WholeOptions {
  kind: BackendKind;
  stream: boolean;
  output: Output;
  promptIds?: PromptIdsMemo;
}

export async function finishWhole(
  call: Call,
  d: Dispatched,
  o: WholeOptions,
  base: Partial<NewLlmCall>,
  recordOf: AnswerRecord,
): Promise<void> {
  let text: string;
  try {
    text = await readText(d.res);
  } catch (e) {
    if (call.settled) return;
    await call.fail(sendFailure(e, d.backendName), base, o.output);
    return;
  }
  if (call.settled) return;
  const status = d.res.statusCode ?? 502;
  // A bridged call's prompt ids are the bridge's own, and a harness that will not see vLLM's logprob
  // entries needs only their logprobs: neither is made into objects (the bulk of an answer's bytes).
  const scope = call.scope;
  const json = parseAnswer(text, {
    kind: o.kind,
    bridged: d.bridged !== null,
    entries: o.output.logprobEntries,
    prompt:
      o.promptIds && scope && status === 200 ? { memo: o.promptIds, rolloutId: scope.rolloutId } : undefined,
  });
  const problem = wholeAnswerError(
    d.backendName,
    { status, contentType: d.res.headers['content-type'], streamed: o.stream },
    text,
    json,
  );
  if (problem) {
    await call.fail(problem, { ...base, response: json ?? text.slice(0, 10_000) }, o.output);
    return;
  }
  let completion = json as Json; // a completion (wholeAnswerError)
  if (d.bridged)
    completion = completionToChat(completion, {
      model: String(d.chatBody.model),
      prompt_ids: d.bridged.prompt_ids,
      thinking: d.bridged.thinking,
    });
  let answer = '';
  let fields: Partial<NewLlmCall>;
  try {
    fields = recordOf(
      completion,
      (j) => {
        const out = o.output.finish(j);
        answer = JSON.stringify(out);
        return new JsonText(answer, out);
      },
      () => {
        const total = call.elapsed();
        return { http_status: 200, ttft_ms: total, total_ms: total };
      },
      true,
    );
  } catch (e) {
    await call.fail(
      new ProxyError(502, `could not translate the backend response: ${String(e)}`),
      base,
      o.output,
    );
    return;
  }
  await call.answer(200, { 'content-type': 'application/json' }, answer, fields, o.output);
}
