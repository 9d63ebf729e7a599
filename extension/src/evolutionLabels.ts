// An evolution's row in the Evolution view: label, description, tooltip, icon and the contextValue
// its inline actions key on (Stop Evolution on a running one, Resume Evolution on an interrupted or
// stopped one). Pure, so it is tested without VS Code.
import { f } from '../../daemon/eval/text';
import type { Evolution } from '../../daemon/protocol/evolution';

/** The statuses Resume Evolution goes on from (POST /api/evolutions/:id/resume takes these). */
export const RESUMABLE: readonly Evolution['status'][] = ['interrupted', 'stopped'];

export function evolutionRow(e: Evolution): {
  label: string;
  description: string;
  tooltip: string;
  icon: string;
  contextValue: string;
} {
  const r = e.result;
  const resumable = RESUMABLE.includes(e.status);
  return {
    label: e.name,
    description: `${e.status}${r ? ` · held-out ${f(r.held_out.root)} → ${f(r.held_out.best)}` : ''}`,
    tooltip: [
      e.id,
      e.harness_dir,
      e.error,
      resumable && 'Resume Evolution goes on from the stored generation: what was evaluated is kept.',
    ]
      .filter(Boolean)
      .join('\n'),
    icon:
      e.status === 'running'
        ? 'loading~spin'
        : resumable
          ? 'debug-pause'
          : e.status === 'failed'
            ? 'error'
            : 'git-branch',
    contextValue: `evolution.${e.status}`,
  };
}
