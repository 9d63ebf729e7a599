// The bridged body's text, written from the last prompt's text: the same bytes JSON.stringify writes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completionBody, completionText, PromptTexts } from './bridge';
import { completionRequestFor } from './tito';

const ids = fc.array(fc.nat(200_000), { maxLength: 40 });

describe('PromptTexts, completionText and completionBody', () => {
  it('write a conversation’s token prompts as JSON.stringify does, turn after turn', () => {
    fc.assert(
      fc.property(
        // any text for the model's name: the bytes are UTF-8 around the ids' ASCII
        fc.string({ unit: 'binary' }),
        fc.array(fc.record({ keep: fc.double({ min: 0, max: 1.2, noNaN: true }), more: ids }), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.record({
          temperature: fc.option(fc.double({ noNaN: true, noDefaultInfinity: true })),
          logprobs: fc.boolean(),
        }),
        (model, turns, sampling) => {
          const texts = new PromptTexts();
          let previous: number[] | null = null;
          for (const t of turns) {
            // Mostly the last prompt and more; sometimes cut (then the text is written whole).
            const base: number[] = previous ?? [];
            const kept: number[] = t.keep >= 1 ? base : base.slice(0, Math.floor(t.keep * base.length));
            const prompt: number[] = [...kept, ...t.more];
            const chat = { model, messages: [], max_tokens: 64, ...sampling };
            const req = completionRequestFor(chat, prompt);
            if (!req.ok) throw new Error(req.reason);
            const text = texts.text(previous, prompt);
            expect(text).toBe(prompt.join(','));
            expect(completionText(req.body, text as string)).toBe(JSON.stringify(req.body));
            const written = completionBody(req.body, text);
            expect(written?.text).toBe(JSON.stringify(req.body));
            expect(written?.bytes.equals(Buffer.from(JSON.stringify(req.body)))).toBe(true);
            // the kept text, now a slice of the body, is where the next prompt's text starts
            if (written) texts.within(prompt, text as string, written.text, written.at);
            previous = prompt;
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('writes no text for ids JSON would not write as integers, and none for a body of another shape', () => {
    const texts = new PromptTexts();
    expect(texts.text(null, [1, Number.NaN])).toBeNull();
    expect(texts.text(null, [1, 2.5])).toBeNull();
    expect(completionText({ prompt: [1], model: 'm' }, '1')).toBeNull();
    expect(completionBody({ prompt: [1], model: 'm' }, '1')).toBeNull();
    expect(completionBody({ model: 'm', prompt: [1] }, null)).toBeNull();
  });

  it('forgets a prompt’s text: the next one is written whole, and still right', () => {
    const texts = new PromptTexts();
    const first = [1, 2, 3];
    texts.text(null, first);
    texts.forget(first);
    expect(texts.text(first, [1, 2, 3, 4])).toBe('1,2,3,4');
  });

  it('checks that a prompt continues the last one, unless the caller says it does', () => {
    const texts = new PromptTexts();
    const first = [1, 2, 3];
    texts.text(null, first);
    expect(texts.text(first, [1, 9, 3, 4])).toBe('1,9,3,4');
    const second = [1, 2, 3, 4];
    texts.text(first, second);
    expect(texts.text(second, [1, 2, 3, 4, 5], true)).toBe('1,2,3,4,5');
  });
});
