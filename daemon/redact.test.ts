// The redactor: every kind of key and URL credential it promises to catch, the text around them kept,
// and ordinary text (ids, hashes, words that open like a key) left alone.
import { describe, expect, it } from 'vitest';
import {
  hasSecret,
  REDACTED,
  redactJson,
  redactText,
  redactUrl,
  redactValue,
  registerSecret,
} from './redact';
import { JsonText } from './store/json-text';

const KEYS = {
  'OpenAI project key': 'sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6',
  'OpenAI key': 'sk-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2',
  'Anthropic key': 'sk-ant-api03-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp-AbCdEf',
  'Google API key': 'AIzaSyD4f9Kq2Lm8Np3Rs7Tv1Wx5Yz0Ab6Cd2EF',
  'GitHub token': 'ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8',
  'GitHub app token': 'ghs_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8',
  'GitHub fine-grained token': 'github_pat_11ABCDEFG0_aB1cD2eF3gH4iJ5kL6mN7oP8qR9',
  'Hugging Face token': 'hf_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx',
  'AWS access key id': 'AKIAQ3EXAMPLE7KEY4ID',
  'AWS temporary key id': 'ASIAQ3EXAMPLE7KEY4ID',
  'GitLab token': 'glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn',
  'Slack token': 'xoxb-1234567890-abcdefghij',
  'Stripe key': 'sk_live_Ab1Cd2Ef3Gh4Ij5Kl6Mn7',
  JWT: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIn0.Sfl4KxwRJSMeKKF2QT4fwpMeJf36POk6yJV',
  'harness-rl rollout key': 'hrk_3q2ZlH0bmbt1b2zLhKcN6oOeMBG0l3Pd0i7u1Jb6gQw',
  'harness-rl daemon token': 'hrl_Rz9c0wS3sT3wS0r6y3z6yXQ2uFvbx0pF',
  'PEM private key':
    '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc+/=\n-----END RSA PRIVATE KEY-----',
};

describe('the redactor', () => {
  for (const [kind, key] of Object.entries(KEYS))
    it(`replaces a ${kind} inside text and keeps the text around it`, () => {
      const text = `export TOKEN="${key}" # set by ci`;
      expect(hasSecret(text)).toBe(true);
      expect(redactText(text)).toBe(`export TOKEN="${REDACTED}" # set by ci`);
    });

  it('takes the userinfo and secret query parameters out of URLs, keeping host, path and other parameters', () => {
    expect(redactUrl('http://alice:pw@gpu.internal:8000/v1')).toBe(`http://${REDACTED}@gpu.internal:8000/v1`);
    expect(redactUrl('postgres://harness:s3cret@db/harness?schema=x')).toBe(
      `postgres://${REDACTED}@db/harness?schema=x`,
    );
    expect(redactUrl('https://h/v1beta/models/m:generate?key=abc&alt=sse')).toBe(
      `https://h/v1beta/models/m:generate?key=${REDACTED}&alt=sse`,
    );
    for (const p of [
      'api_key',
      'API_KEY',
      'token',
      'access_token',
      'sig',
      'X-Amz-Signature',
      'client_secret',
    ])
      expect(redactUrl(`https://h/p?a=1&${p}=zzz#f`)).toBe(`https://h/p?a=1&${p}=${REDACTED}#f`);
    expect(redactText('curl -H "Authorization: Bearer abcdefghijklmnop1234"')).toBe(
      `curl -H "Authorization: Bearer ${REDACTED}"`,
    );
  });

  it('leaves ordinary text alone: ids, hashes, uuids and words that open like a key', () => {
    const text = [
      'task-0123456789abcdefghij risk_live_and_learn sk-learn desk-top ask-questions-about-it',
      'commit 9fceb02d0ae598e95dc970b74767f19372d61af8, uuid 123e4567-e89b-12d3-a456-426614174000',
      'call_01jeq3k9vz4m8x2c5d7f9gh0 http://127.0.0.1:4100/r/rol_1/v1 ?page=2&sort=asc',
      'Basic authentication, Bearer tokens, the AKIA prefix, hf_ and ghp_ prefixes, eyJ',
    ].join('\n');
    expect(hasSecret(text)).toBe(false);
    expect(redactText(text)).toBe(text);
  });

  it('finds a key in a JSON text whose strings escape printable characters', () => {
    const text = '{"content":"\\u0073k-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"}';
    const out = redactJson(new JsonText(text, JSON.parse(text))) as JsonText;
    expect(out.value).toEqual({ content: REDACTED });
    expect(out.text).toBe(`{"content":"${REDACTED}"}`);
  });

  it('finds a key at the start of a line, a URL with escaped slashes and a token after an escaped newline in a JSON text', () => {
    const values = [
      `line one\n${KEYS['OpenAI project key']}`,
      `a\t${KEYS['GitHub token']}`,
      `\r\n${KEYS['AWS access key id']}\n`,
      'see https://alice:pw-of-alice@gpu.internal/v1',
      'Authorization: Bearer\nabcdefghijklmnop1234',
      `jwt\n${KEYS.JWT}`,
    ];
    for (const value of values) {
      // As encoders that escape `/` (PHP, some Java) write it, and as JSON.stringify does.
      for (const text of [
        JSON.stringify({ content: value }),
        JSON.stringify({ content: value }).replaceAll('/', '\\/'),
      ]) {
        const out = redactJson(new JsonText(text, JSON.parse(text))) as JsonText;
        expect(out.text, text).toContain(REDACTED);
        expect(out.value).toEqual({ content: redactText(value) });
      }
    }
  });

  it("finds a secret query parameter in a JSON text that escapes '&' as Go does, and keeps a body that only escapes '<' as it is", () => {
    const text = '{"url":"https://h/p?a=1\\u0026token=zzz-secret-value","html":"\\u003cb\\u003e"}';
    const out = redactJson(new JsonText(text, JSON.parse(text))) as JsonText;
    expect(out.value).toEqual({ url: `https://h/p?a=1&token=${REDACTED}`, html: '<b>' });
    const html = '{"html":"\\u003cdiv class=\\"x\\"\\u003e sk-learn \\u003c/div\\u003e"}';
    const kept = new JsonText(html, JSON.parse(html));
    expect((redactJson(kept) as JsonText).text).toBe(html);
  });

  it('walks values, object keys included, and returns the very value when nothing changed', () => {
    const clean = { a: ['x', { b: 1 }], c: null };
    expect(redactValue(clean)).toBe(clean);
    expect(redactValue({ [KEYS['GitHub token']]: [KEYS.JWT, 2] })).toEqual({ [REDACTED]: [REDACTED, 2] });
    const clean2 = new JsonText('{"a":1}', { a: 1 });
    expect(redactJson(clean2)).toBe(clean2);
  });

  it('redacts a registered secret of no known shape (a chosen daemon token)', () => {
    registerSecret('my-own-daemon-token-42');
    expect(redactText('token my-own-daemon-token-42 here')).toBe(`token ${REDACTED} here`);
  });
});
