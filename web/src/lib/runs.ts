import { reactive } from 'vue'
import type { Run } from '../api/types'
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
