// Placeholder: the cluster owner replaces this with the run scheduler (same exported signature).
import type { FastifyInstance } from 'fastify';
import type { DaemonContext, RunController } from '../context';
import type { ProxyHandle } from '../proxy';

export async function registerCluster(
  _app: FastifyInstance,
  _ctx: DaemonContext,
  _proxy: ProxyHandle,
): Promise<RunController> {
  return {
    start: async () => {},
    stop: async () => {},
    close: async () => {},
  };
}
