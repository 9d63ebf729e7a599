// Placeholder: the proxy's owner replaces this with the real plugin (same exported signature).
import type { FastifyInstance } from 'fastify';
import type { DaemonContext } from '../context';

/** The inference backends the proxy routes to; the cluster adds the reference engine or node agents. */
export interface Backends {
  add(url: string, options?: { name?: string; modelVersion?: number | null }): void;
  remove(url: string): void;
  /** Record which weight version a backend now serves (after a weight push). */
  setModelVersion(url: string, version: number): void;
  /** Only route to backends serving a version >= min (bounded staleness); null = any. */
  setMinModelVersion(min: number | null): void;
}

export interface ProxyHandle {
  backends: Backends;
}

export async function registerProxy(_app: FastifyInstance, _ctx: DaemonContext): Promise<ProxyHandle> {
  const urls = new Set<string>();
  return {
    backends: {
      add: (url) => void urls.add(url),
      remove: (url) => void urls.delete(url),
      setModelVersion: () => {},
      setMinModelVersion: () => {},
    },
  };
}
