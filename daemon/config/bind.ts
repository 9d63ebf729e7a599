// Where the daemon may listen: loopback always; any other address only over TLS, or with the user's
// explicit, loudly logged opt-out (the token and every prompt would cross the network in plain text).
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export function isLoopback(address: string): boolean {
  const a = address.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (isIP(a) === 4) return a.startsWith('127.');
  if (isIP(a) === 6) return a === '::1' || /^::ffff:127\./.test(a);
  return false;
}

/** Every address `host` names is loopback (a name is looked up; `0.0.0.0` and `::` are not). */
export async function bindsLoopbackOnly(host: string): Promise<boolean> {
  const h = host.replace(/^\[(.*)\]$/, '$1');
  if (isIP(h)) return isLoopback(h);
  try {
    const all = await lookup(h, { all: true });
    return all.length > 0 && all.every((a) => isLoopback(a.address));
  } catch {
    return false;
  }
}

/** How a refusal names the listener's flags: the daemon's (HTTP) or a node agent's (WebSocket). */
export interface BindFlags {
  host: '--host' | '--listen';
  plain: 'HTTP' | 'WebSocket (ws://)';
  optOut: '--allow-plain-http' | '--allow-plain-ws';
  secrets: string;
}

export const DAEMON_BIND: BindFlags = {
  host: '--host',
  plain: 'HTTP',
  optOut: '--allow-plain-http',
  secrets: 'its token, rollout keys and every prompt',
};

export const NODE_BIND: BindFlags = {
  host: '--listen',
  plain: 'WebSocket (ws://)',
  optOut: '--allow-plain-ws',
  secrets: 'its token, every prompt and the model weights',
};

/** Throws unless a listener may bind `host` as asked. */
export async function checkBind(
  host: string,
  tls: boolean,
  allowPlain: boolean,
  flags: BindFlags = DAEMON_BIND,
): Promise<void> {
  if (tls || allowPlain || (await bindsLoopbackOnly(host))) return;
  throw new Error(
    `${flags.host} ${host} reaches beyond this machine and would serve plain ${flags.plain}: ${flags.secrets} would cross the network unencrypted. Give --tls-cert and --tls-key (PEM files), or ${flags.optOut} to accept that (it is logged on every start), or bind 127.0.0.1 and tunnel (ssh -L).`,
  );
}

/** The URL a listening socket answers on, as bound (`[::]` and `0.0.0.0` included). */
export function boundUrl(scheme: 'http' | 'https', address: string, port: number): string {
  return `${scheme}://${address.includes(':') ? `[${address}]` : address}:${port}`;
}
