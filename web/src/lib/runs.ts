import { reactive } from 'vue'
import { api } from '../api/client'
import type { Run, RunDetail } from '../api/types'
import { subscribe } from '../live/live'
import { runKey } from './colors'

/** Runs seen so far, by "project/run" (names, start times for the relative x axis). */
export const runCache = reactive(new Map<string, Run>())

export function rememberRuns(runs: Run[]): void {
  for (const r of runs) runCache.set(runKey(r.project, r.id), r)
}

/** "project/run" → [project, run]; the run id may itself contain '/', the project may not. */
export function splitRunKey(key: string): [string, string] | null {
  const i = key.indexOf('/')
  if (i <= 0 || i === key.length - 1) return null
  return [key.slice(0, i), key.slice(i + 1)]
}

export function runLabel(key: string): string {
  const r = runCache.get(key)
  if (r && r.name && r.name !== r.id) return `${r.name}`
  return key
}

/** The details (metadata and metrics) of runs by "project/run" key, fetched in parallel and
 *  remembered in runCache; a run that cannot be read is reported in `errors`, not thrown. */
export async function loadRunDetails(keys: string[]): Promise<{ details: Map<string, RunDetail>; errors: string[] }> {
  const errors: string[] = []
  const details = new Map<string, RunDetail>()
  await Promise.all(
    keys.map(async (k) => {
      const [project, run] = splitRunKey(k)!
      try {
        details.set(k, await api.run(project, run))
      } catch (e) {
        errors.push(`${k}: ${e instanceof Error ? e.message : String(e)}`)
      }
    }),
  )
  rememberRuns([...details.values()])
  return { details, errors }
}

/** Follows these runs on the live channel (by project when they all share one). */
export function subscribeToRuns(keys: string[]): void {
  const projects = [...new Set(keys.map((k) => splitRunKey(k)![0]))]
  const ids = [...new Set(keys.map((k) => splitRunKey(k)![1]))]
  subscribe(projects.length === 1 ? { project: projects[0], runs: ids } : { runs: ids })
}
