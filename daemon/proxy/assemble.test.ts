// Stripping vLLM's extras from streamed chunks by text surgery gives exactly what parse → strip →
// stringify gives, whatever the content and token strings contain.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Asked, StreamAssembler, strip, stripText } from './assemble';
import { tokensOf } from './record-fields';

const chunk = (content: string, tokens: string[], ids: number[], withPrompt: boolean, idsFirst: boolean) => {
  const choice: Record<string, unknown> = {
    index: 0,
    delta: { content },
    logprobs: {
      content: tokens.map((t, i) => ({ token: t, logprob: -i / 10, bytes: [1, 2], top_logprobs: [] })),
    },
    finish_reason: null,
  };
  const c = idsFirst ? { token_ids: ids, ...choice } : { ...choice, token_ids: ids };
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [c],
    ...(withPrompt ? { prompt_token_ids: [1, 2, 3] } : {}),
  };
};

describe('stripText', () => {
  it('equals parse-strip-stringify for any content and token text', () => {
    const tricky = fc.oneof(
      fc.string(),
      fc.constantFrom('"logprobs":{', '{"a":[}', '\\"', '"token_ids":[1]', '}}]]'),
    );
    fc.assert(
      fc.property(
        tricky,
        fc.array(tricky, { maxLength: 4 }),
        fc.array(fc.nat(200_000), { maxLength: 5 }),
        fc.boolean(),
        fc.boolean(),
        fc.record({ ids: fc.boolean(), logprobs: fc.boolean() }),
        (content, tokens, ids, withPrompt, idsFirst, asked: Asked) => {
          const raw = JSON.stringify(chunk(content, tokens, ids, withPrompt, idsFirst));
          expect(JSON.parse(stripText(raw, asked))).toEqual(strip(JSON.parse(raw), asked));
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('StreamAssembler', () => {
  it.each([true, false])(
    'a streamed chat answer assembles to the non-streaming shape with every token id and logprob (logprobEntries %s)',
    (logprobEntries) => {
      const asm = new StreamAssembler('chat', { logprobEntries });
      asm.push({
        id: 'x',
        created: 1,
        model: 'm',
        prompt_token_ids: [5, 6],
        choices: [{ index: 0, delta: { role: 'assistant', content: '' } }],
      });
      asm.push({
        choices: [
          {
            index: 0,
            delta: { content: 'he' },
            token_ids: [7],
            logprobs: { content: [{ token: 'he', logprob: -0.5 }] },
          },
        ],
      });
      asm.push({
        choices: [
          {
            index: 0,
            delta: { content: 'y' },
            token_ids: [8],
            logprobs: { content: [{ token: 'y', logprob: -0.25 }] },
            finish_reason: 'stop',
          },
        ],
      });
      const json = asm.result();
      expect(json.choices[0].message).toEqual({ role: 'assistant', content: 'hey' });
      expect(tokensOf(json, 'chat')).toEqual({
        prompt_ids: [5, 6],
        response_ids: [7, 8],
        response_logprobs: [-0.5, -0.25],
        finish_reason: 'stop',
        usage: { prompt_tokens: 2, completion_tokens: 2 },
      });
      expect(json.choices[0].logprobs.content[0]).toEqual(
        logprobEntries ? { token: 'he', logprob: -0.5 } : { logprob: -0.5 },
      );
    },
  );

  it.each([true, false])(
    'a streamed completion keeps every token logprob (logprobEntries %s)',
    (logprobEntries) => {
      const asm = new StreamAssembler('completions', { logprobEntries });
      for (const [t, lp] of [
        ['a', -1],
        ['b', -2],
      ] as const)
        asm.push({
          choices: [
            {
              index: 0,
              text: t,
              token_ids: [t.charCodeAt(0)],
              logprobs: { tokens: [t], token_logprobs: [lp], top_logprobs: [null], text_offset: [0] },
            },
          ],
        });
      const json = asm.result();
      expect(json.choices[0].text).toBe('ab');
      expect(tokensOf(json, 'completions').response_logprobs).toEqual([-1, -2]);
      expect(json.choices[0].logprobs.tokens).toEqual(logprobEntries ? ['a', 'b'] : []);
    },
  );
});
