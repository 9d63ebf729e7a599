import { describe, expect, it } from 'vitest';
import { parseBlocks, parseInline } from './markdown';

describe('snippet markdown as blocks', () => {
  it('splits headings, fenced code and paragraphs', () => {
    expect(
      parseBlocks('# Title\n\nSome `x` text\nmore\n\n```sh\nexport A=1\nexport B=2\n```\n## Next'),
    ).toEqual([
      { kind: 'heading', level: 1, text: 'Title' },
      { kind: 'paragraph', text: 'Some `x` text\nmore' },
      { kind: 'code', lang: 'sh', text: 'export A=1\nexport B=2' },
      { kind: 'heading', level: 2, text: 'Next' },
    ]);
  });

  it('reads inline code and bold', () => {
    expect(parseInline('Provider: **OpenAI Compatible** · Key: `sk-1`.')).toEqual([
      { kind: 'text', text: 'Provider: ' },
      { kind: 'strong', text: 'OpenAI Compatible' },
      { kind: 'text', text: ' · Key: ' },
      { kind: 'code', text: 'sk-1' },
      { kind: 'text', text: '.' },
    ]);
  });

  it('keeps a code block whole: blank lines, headings-like lines and indentation inside the fence stay code', () => {
    const md = '## Codex\n```toml\nmodel = "m"\n\n# a comment\n[providers.x]\n  base_url = "u"\n```\nafter';
    expect(parseBlocks(md)).toEqual([
      { kind: 'heading', level: 2, text: 'Codex' },
      { kind: 'code', lang: 'toml', text: 'model = "m"\n\n# a comment\n[providers.x]\n  base_url = "u"' },
      { kind: 'paragraph', text: 'after' },
    ]);
  });
});
