// What the harness receives: a native (Chat Completions / Completions) or translated wire format,
// whole or streamed.
import type { StreamAssembler } from './assemble';
import { askedOf, needsStrip, strip, stripText } from './assemble';
import { type ChatChunkScanner, scannedFrame } from './chunk-scan';
import { openaiErrorBody } from './errors';
import type { Json } from './json';
import type { WireTranslator } from './translate/types';

/** What the harness receives, in its wire format. */
export interface Output {
  /** The harness sees vLLM's logprob entries (the stream assembler must keep them whole). */
  logprobEntries: boolean;
  finish(json: Json): unknown;
  open(): StreamOut;
  error(status: number, message: string, param?: string | null, code?: string | null): unknown;
}

export interface StreamOut {
  chunk(obj: Json, raw: string): string;
  /** `chunk` of a chunk the scanner read from `raw` (no parsed object); absent: every chunk is parsed. */
  scanned?(raw: string, sc: ChatChunkScanner): string;
  end(): string;
  error(message: string): string;
  /** The whole answer as recorded; `json` (= asm.result(), may be changed in place) saves re-assembly. */
  assembled(asm: StreamAssembler, json?: Json): unknown;
}

/** Chat Completions / Completions as the harness asked: vLLM's extras stay only if it asked for them. */
export function nativeOutput(body: Json): Output {
  const asked = askedOf(body);
  return {
    logprobEntries: asked.logprobs,
    finish: (json) => (needsStrip(json, asked) ? strip(json, asked) : json),
    error: (status, message, param = null, code = null) => openaiErrorBody(status, message, param, code),
    open: () => ({
      chunk: (obj, raw) => `data: ${needsStrip(obj, asked) ? stripText(raw, asked) : raw}\n\n`,
      scanned: (raw, sc) => scannedFrame(raw, sc, asked.ids, asked.logprobs),
      end: () => 'data: [DONE]\n\n',
      error: (message) => `data: ${JSON.stringify(openaiErrorBody(502, message))}\n\n`,
      assembled: (asm, json) => strip(json ?? asm.result(), asked),
    }),
  };
}

/** Responses / Messages through a wire translator (chat on the backend side). */
export function translatedOutput<Req>(t: WireTranslator<Req>, req: Req): Output {
  return {
    logprobEntries: false,
    finish: (json) => t.fromChat(json as never, req),
    error: (status, message, param = null) => t.errorBody(status, message, param),
    open: () => {
      const ws = t.stream(req);
      return {
        chunk: (obj) => ws.chunk(obj as never).join(''),
        end: () => ws.end().join(''),
        error: (message) => ws.error(message).join(''),
        assembled: () => ws.assembled(),
      };
    },
  };
}
