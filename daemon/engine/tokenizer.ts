// The reference engine's tokenizer: one token per UTF-8 byte (ids 0..255) plus a few special tokens,
// and a minimal chat template with role markers:
//   <|system|>…<|end|><|user|>…<|end|><|assistant|>…<|end|>   (+ "<|assistant|>" as generation prompt)
// Special-token strings inside text are parsed as the special tokens (as HF tokenizers do).

export const SPECIAL_TOKENS = ['<|end|>', '<|system|>', '<|user|>', '<|assistant|>', '<|tool|>'] as const;
export type SpecialToken = (typeof SPECIAL_TOKENS)[number];

export const BYTE_TOKENS = 256;
export const VOCAB_SIZE = BYTE_TOKENS + SPECIAL_TOKENS.length;
/** End of turn; generation stops when it is sampled (it is part of the response's token ids). */
export const END_ID = BYTE_TOKENS;
export const ROLE_IDS: Record<string, number> = {
  system: BYTE_TOKENS + 1,
  developer: BYTE_TOKENS + 1,
  user: BYTE_TOKENS + 2,
  assistant: BYTE_TOKENS + 3,
  tool: BYTE_TOKENS + 4,
};

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

export function isSpecial(id: number): boolean {
  return id >= BYTE_TOKENS && id < VOCAB_SIZE;
}

/** Text → token ids; special-token strings become special tokens. */
export function encode(text: string): number[] {
  const out: number[] = [];
  let rest = text;
  while (rest.length > 0) {
    let at = -1;
    let which = -1;
    for (let s = 0; s < SPECIAL_TOKENS.length; s++) {
      const i = rest.indexOf(SPECIAL_TOKENS[s]);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        which = s;
      }
    }
    const plain = at < 0 ? rest : rest.slice(0, at);
    for (const b of encoder.encode(plain)) out.push(b);
    if (at < 0) break;
    out.push(BYTE_TOKENS + which);
    rest = rest.slice(at + SPECIAL_TOKENS[which].length);
  }
  return out;
}

/** Token ids → text (special tokens kept as their strings unless skipSpecial). Invalid UTF-8 → U+FFFD. */
export function decode(ids: ArrayLike<number>, skipSpecial = false): string {
  let text = '';
  let bytes: number[] = [];
  const flush = () => {
    if (bytes.length > 0) text += decoder.decode(new Uint8Array(bytes));
    bytes = [];
  };
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id < BYTE_TOKENS) bytes.push(id);
    else {
      flush();
      if (!skipSpecial) text += SPECIAL_TOKENS[id - BYTE_TOKENS];
    }
  }
  flush();
  return text;
}

/** The token's display string (vLLM style: undecodable single bytes as "bytes:\xNN"). */
export function tokenString(id: number): string {
  if (isSpecial(id)) return SPECIAL_TOKENS[id - BYTE_TOKENS];
  if (id < 0x80) return String.fromCharCode(id);
  return `bytes:\\x${id.toString(16).padStart(2, '0')}`;
}

export function tokenBytes(id: number): number[] {
  if (isSpecial(id)) return [...encoder.encode(SPECIAL_TOKENS[id - BYTE_TOKENS])];
  return [id];
}

export interface ChatMessage {
  role: string;
  content: string;
}

/** The chat template, as token ids. */
export function applyChatTemplate(messages: ChatMessage[], addGenerationPrompt: boolean): number[] {
  const out: number[] = [];
  for (const m of messages) {
    out.push(ROLE_IDS[m.role] ?? ROLE_IDS.user);
    for (const id of encode(m.content)) out.push(id);
    out.push(END_ID);
  }
  if (addGenerationPrompt) out.push(ROLE_IDS.assistant);
  return out;
}

/** Incremental UTF-8 decoding for streaming: feed token ids, get the text that is complete so far. */
export class StreamDecoder {
  private pending: number[] = [];
  push(id: number): string {
    if (isSpecial(id)) {
      const rest = this.flush();
      return rest + SPECIAL_TOKENS[id - BYTE_TOKENS];
    }
    this.pending.push(id);
    const b = new Uint8Array(this.pending);
    // Hold back an incomplete trailing UTF-8 sequence.
    let need = 0;
    for (let i = b.length - 1; i >= 0 && i >= b.length - 4; i--) {
      const c = b[i];
      if ((c & 0xc0) === 0x80) continue;
      need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
      if (b.length - i < need) return '';
      break;
    }
    return this.flush();
  }
  flush(): string {
    if (this.pending.length === 0) return '';
    const text = decoder.decode(new Uint8Array(this.pending));
    this.pending = [];
    return text;
  }
}
