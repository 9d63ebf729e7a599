// Chat tokenizers for the token-in-token-out bridge: the backend's own (/tokenize, /detokenize of vLLM);
// the daemon's own, from the served model's files, is daemon/tokenize/local.ts.

// Loose on purpose: the OpenAI SDK's chat message and tool interfaces are assignable to these.
// biome-ignore lint/suspicious/noExplicitAny: any object with a role
export type ChatMessageLike = { role: string; [k: string]: any };
// biome-ignore lint/suspicious/noExplicitAny: any tool object
export type ChatToolLike = { [k: string]: any };

export interface ChatTokenizer {
  /** Token ids of the chat template applied to `messages` (special tokens included, no BOS added). */
  render(
    messages: ChatMessageLike[],
    tools: ChatToolLike[] | undefined,
    addGenerationPrompt: boolean,
    templateKwargs?: Record<string, unknown>,
  ): Promise<number[]>;
  /** Plain text → ids, special-token text (`<|im_end|>`) mapped to its special id, no BOS/EOS added. */
  encode(text: string): number[] | Promise<number[]>;
  decode(ids: number[]): string | Promise<string>;
}

/** The text of a chat content field: strings as is, text parts joined with '\n' (what vLLM does), null as ''. */
export function contentText(content: unknown): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .filter((p) => p && typeof p === 'object' && (p as { type?: string }).type === 'text')
      .map((p) => String((p as { text?: unknown }).text ?? ''))
      .join('\n');
  return String(content);
}

/** Messages as vLLM hands them to a chat template: text content, tool-call arguments parsed into objects. */
export function templateMessages(messages: ChatMessageLike[]): ChatMessageLike[] {
  return messages.map((m) => {
    const out: ChatMessageLike = { ...m, content: contentText(m.content) };
    if (Array.isArray(m.tool_calls))
      out.tool_calls = m.tool_calls.map((tc: Record<string, any>) => {
        const fn = tc.function ?? {};
        let args = fn.arguments;
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args);
          } catch {
            // left as the string; the template prints strings verbatim
          }
        }
        return { ...tc, function: { ...fn, arguments: args } };
      });
    return out;
  });
}

/** The part of fetch a backend tokenizer uses (the proxy passes its own pooled client). */
export type TokenizerFetch = (
  url: string,
  init: { method: 'POST'; headers: Record<string, string>; body: string },
) => Promise<{ ok: boolean; status: number; text(): Promise<string>; json(): Promise<any> }>;

/** A tokenizer backed by a vLLM server's `/tokenize` and `/detokenize` (baseUrl with or without `/v1`). */
export function backendTokenizer(
  baseUrl: string,
  options: { model?: string; headers?: Record<string, string>; fetch?: TokenizerFetch } = {},
): ChatTokenizer {
  const root = baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  const doFetch: TokenizerFetch = options.fetch ?? fetch;
  async function post(path: string, body: Record<string, unknown>): Promise<any> {
    const res = await doFetch(`${root}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...options.headers },
      body: JSON.stringify(options.model ? { model: options.model, ...body } : body),
    });
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    return res.json();
  }
  return {
    async render(messages, tools, addGenerationPrompt, templateKwargs) {
      const r = await post('/tokenize', {
        messages,
        add_generation_prompt: addGenerationPrompt,
        ...(tools?.length ? { tools } : {}),
        ...(templateKwargs ? { chat_template_kwargs: templateKwargs } : {}),
      });
      return r.tokens as number[];
    },
    async encode(text) {
      const r = await post('/tokenize', { prompt: text, add_special_tokens: false });
      return r.tokens as number[];
    },
    async decode(ids) {
      const r = await post('/detokenize', { tokens: ids });
      return r.prompt as string;
    },
  };
}
