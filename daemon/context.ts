// What every part of a running daemon shares. daemon.ts builds it; api/, proxy/ and cluster/ take it.
import type { DaemonConfig } from './protocol/config';
import type { Store } from './store/store';

export interface DaemonContext {
  store: Store;
  config: DaemonConfig;
  /** The daemon's access token (full access to /api and the proxy). */
  token: string;
  dataDir: string;
  /** http://127.0.0.1:PORT once listening. */
  baseUrl(): string;
  log(message: string, detail?: Record<string, unknown>): void;
}
