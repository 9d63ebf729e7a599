// Problem statements: from the failing tests without a model, or by a model (an OpenAI-compatible
// endpoint such as the proxy) that gets STATEMENT_PROMPT and the failing tests, and nothing else.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { TestResult } from './run-tests';
import { STATEMENT_PROMPT, statementFromModel, statementFromTests } from './statement';

const results = new Map<string, TestResult>([
  ['t.py::test_a', { status: 'failed', message: "AssertionError: assert 'x' == 'y'\nmore" }],
  ['t.py::test_b', { status: 'failed' }],
]);

describe('problem statements', () => {
  it('without a model: the failing tests and the first line of each message', () => {
    expect(statementFromTests(['t.py::test_a', 't.py::test_b'], results)).toBe(
      "2 tests fail that passed before:\n- t.py::test_a: AssertionError: assert 'x' == 'y'\n- t.py::test_b: failed\n\nFix the code so that they pass and the other tests keep passing.",
    );
  });

  it('by a model: it is asked with the stated prompt and the failing tests only, and its answer is the statement', async () => {
    let body: Record<string, unknown> = {};
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (c) => {
        text += c;
      });
      req.on('end', () => {
        body = { url: req.url, auth: req.headers.authorization, ...JSON.parse(text) };
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ choices: [{ message: { content: '  Underscore keeps capitals.  ' } }] }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const text = await statementFromModel(
        { baseURL: url, model: 'm', apiKey: 'k' },
        ['t.py::test_a'],
        results,
      );
      expect(text).toBe('Underscore keeps capitals.');
      expect(body).toMatchObject({ url: '/v1/chat/completions', auth: 'Bearer k', model: 'm' });
      expect(body.messages).toEqual([
        { role: 'system', content: STATEMENT_PROMPT },
        { role: 'user', content: "Failing tests:\n- t.py::test_a: AssertionError: assert 'x' == 'y'" },
      ]);
    } finally {
      server.close();
    }
  });
});
