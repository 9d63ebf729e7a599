// proxy.profile    with BENCH_PROFILE=dir: the proxy's CPU per call by stage in the throughput,
//                  stream and conversation (bridged, native) phases, from a V8 CPU profile (the
//                  profiler itself adds to every stage); the pass-through's beside it, its floor
import { emit } from '../emit';
import { newestProfile, stagesPerCall } from '../profile';
import type { Targets } from './targets';

/** The lines of every profiled target's measured windows (its profile is written as it exits). */
export function emitProfiles(t: Targets): void {
  if (t.passProfile)
    for (const w of t.passWindows)
      emit('proxy.profile', {
        target: 'passthrough',
        phase: w.phase,
        calls: w.calls,
        ...stagesPerCall(newestProfile(t.passProfile), w.from, w.to, w.calls),
      });
  for (const p of t.proxies)
    if (p.profileDir)
      for (const w of p.windows)
        emit('proxy.profile', {
          target: 'proxy',
          store: p.store,
          phase: w.phase,
          calls: w.calls,
          ...stagesPerCall(newestProfile(p.profileDir), w.from, w.to, w.calls),
        });
}
