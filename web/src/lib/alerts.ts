import type { Alert } from '../api/types'

/** Inserts or replaces an alert (by id) in a newest-first list. */
export function upsertAlert(list: Alert[], a: Alert): Alert[] {
  const i = list.findIndex((x) => x.id === a.id)
  if (i >= 0) {
    const next = list.slice()
    next[i] = a
    return next
  }
  return [a, ...list].sort((x, y) => y.id - x.id)
}

/** The rank an alert names (the distributed kinds, and `nan` of a distributed run), or null. */
export function alertRank(a: Alert): number | null {
  return typeof a.rank === 'number' && a.rank >= 0 ? a.rank : null
}

/** The host of the rank an alert names, or ''. */
export function alertHost(a: Alert): string {
  return a.host ?? ''
}
