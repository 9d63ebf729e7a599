// Where span export takes its settings from: --otlp-* flags, the config file, the OTEL_EXPORTER_OTLP_* variables.
import { describe, expect, it } from 'vitest';
import { daemonOptions } from '../cli/commands/daemon';
import { DaemonConfig } from '../protocol/config';
import { otlpOptions } from '.';

describe('OTLP settings', () => {
  it('export is off unless an endpoint is configured or OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set', () => {
    expect(otlpOptions(undefined, {})).toBeNull();
    expect(otlpOptions(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toMatchObject({
      endpoint: undefined,
      protocol: 'http/protobuf',
      content: false,
    });
    const env = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://x/v1/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    };
    expect(otlpOptions(undefined, env)?.protocol).toBe('http/json');
    expect(otlpOptions(undefined, { ...env, OTEL_SDK_DISABLED: 'true' })).toBeNull();
  });

  it('--otlp-endpoint, --otlp-header and --otlp-content land in daemon.otlp', async () => {
    const options = await daemonOptions([
      '--otlp-endpoint',
      'http://127.0.0.1:4318/v1/traces',
      '--otlp-header',
      'authorization=Bearer abc',
      '--otlp-header',
      'x-team=rl',
      '--otlp-content',
    ]);
    const config = DaemonConfig.parse(options?.config ?? {});
    expect(config.otlp).toMatchObject({
      endpoint: 'http://127.0.0.1:4318/v1/traces',
      headers: { authorization: 'Bearer abc', 'x-team': 'rl' },
      content: true,
    });
    expect(otlpOptions(config.otlp, {})?.headers).toEqual({ authorization: 'Bearer abc', 'x-team': 'rl' });
    await expect(daemonOptions(['--otlp-header', 'novalue'])).rejects.toThrow(/NAME=VALUE/);
  });

  it('a malformed endpoint is refused naming daemon.otlp.endpoint', () => {
    const r = DaemonConfig.safeParse({ otlp: { endpoint: 'not a url' } });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['otlp', 'endpoint']);
  });
});
