// `harness-rl daemon`: start the daemon in the foreground; SIGINT / SIGTERM stop it cleanly.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfigFile } from '../../config/load';
import { tokenPath } from '../../config/token';
import { type DaemonOptions, startDaemon } from '../../daemon';

const USAGE = `usage: harness-rl daemon [--port N] [--host H] [--data DIR] [--store sqlite|postgres://…]
                        [--token T] [--backend URL]... [--config FILE]
                        [--tls-cert PEM --tls-key PEM] [--allow-plain-http]
                        [--otlp-endpoint URL] [--otlp-header NAME=VALUE]... [--otlp-content]
  --otlp-endpoint exports spans to an OTLP/HTTP traces URL (…/v1/traces); the standard
    OTEL_EXPORTER_OTLP_* variables work too. --otlp-content adds message content, redacted
  --host other than loopback needs --tls-cert/--tls-key (https), or --allow-plain-http`;

export function defaultDataDir(): string {
  return process.env.HARNESS_RL_DATA || join(homedir(), '.harness-rl');
}

/**
 * The daemon's options from the command line and the optional config file's `daemon` section (flags
 * win; the section's `data` resolves against the file's folder). null for --help.
 */
/** The PEM pair named by --tls-cert/--tls-key, read (the node agent's flags, the same way). */
function readTls(cert: string | undefined, key: string | undefined): DaemonOptions['tls'] {
  return cert && key ? { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') } : undefined;
}

/** --otlp-* over the config file's daemon.otlp section. */
function otlpFlags(
  section: DaemonOptions['config'],
  values: { 'otlp-endpoint'?: string; 'otlp-header'?: string[]; 'otlp-content'?: boolean },
): DaemonOptions['config'] {
  const endpoint = values['otlp-endpoint'];
  const list = values['otlp-header'];
  const content = values['otlp-content'];
  if (endpoint === undefined && list === undefined && content === undefined) return section;
  const headers: Record<string, string> = { ...section?.otlp?.headers };
  for (const h of list ?? []) {
    const eq = h.indexOf('=');
    if (eq <= 0) throw new Error(`--otlp-header must be NAME=VALUE, got ${h}\n${USAGE}`);
    headers[h.slice(0, eq).trim()] = h.slice(eq + 1).trim();
  }
  const otlp = {
    ...section?.otlp,
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(list !== undefined ? { headers } : {}),
    ...(content !== undefined ? { content } : {}),
  };
  return { ...section, otlp };
}

export async function daemonOptions(argv: string[]): Promise<DaemonOptions | null> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      data: { type: 'string' },
      store: { type: 'string' },
      token: { type: 'string' },
      backend: { type: 'string', multiple: true },
      config: { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'allow-plain-http': { type: 'boolean' },
      'otlp-endpoint': { type: 'string' },
      'otlp-header': { type: 'string', multiple: true },
      'otlp-content': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return null;
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    throw new Error(`--port must be 0…65535, got ${values.port}\n${USAGE}`);
  }
  if (Boolean(values['tls-cert']) !== Boolean(values['tls-key']))
    throw new Error(`--tls-cert and --tls-key go together\n${USAGE}`);
  const loaded = values.config ? await loadConfigFile(values.config) : null;
  const section = otlpFlags(loaded?.config.daemon, values);
  return {
    dataDir: resolve(
      values.data ?? (section?.data ? resolve(loaded!.baseDir, section.data) : defaultDataDir()),
    ),
    config: section,
    port,
    host: values.host,
    store: values.store,
    token: values.token,
    backends: values.backend ? [...(section?.backends ?? []), ...values.backend] : undefined,
    tls: readTls(values['tls-cert'], values['tls-key']),
    allowPlainHttp: values['allow-plain-http'],
  };
}

export async function run(argv: string[]): Promise<number> {
  const options = await daemonOptions(argv);
  if (!options) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const dataDir = options.dataDir;
  const daemon = await startDaemon({ ...options, log: (line) => process.stderr.write(`${line}\n`) });
  return new Promise<number>((done) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        process.stderr.write(`harness-rl daemon: ${signal} again, exiting now\n`);
        process.exit(1);
      }
      stopping = true;
      process.stderr.write(`harness-rl daemon: ${signal}, stopping\n`);
      daemon.close().then(
        () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          process.stdout.write('harness-rl daemon stopped\n');
          // Anything that still holds the event loop (a stuck socket) must not keep a stopped daemon alive.
          setTimeout(() => process.exit(0), 2000).unref();
          done(0);
        },
        (err) => {
          process.stderr.write(
            `harness-rl daemon: stop failed: ${err instanceof Error ? err.message : err}\n`,
          );
          done(1);
        },
      );
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // Printed once the signals are handled: whoever reads the URL may stop the daemon at once.
    const local = daemon.boundUrl === daemon.url ? '' : `, locally ${daemon.url}`;
    process.stdout.write(
      `harness-rl daemon listening on ${daemon.boundUrl}${local} (data ${dataDir}, store ${daemon.ctx.store.kind})\n`,
    );
    if (daemon.tokenCreated) {
      process.stdout.write(`access token (saved to ${tokenPath(dataDir)}, shown once): ${daemon.token}\n`);
    }
  });
}
