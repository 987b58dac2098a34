import { computed } from 'vue'
import { route, setQuery } from '../router'

/** The rank selected on a distributed run's page (`rank=N` in the URL), or null. */
export const selectedRank = computed<number | null>(() => {
  const v = route.query.rank
  if (v === undefined || v === '' || !/^\d+$/.test(v)) return null
  return Number(v)
})

/** Selects rank `r` (null: none); its line is drawn on every chart of the run. */
export function selectRank(r: number | null): void {
  setQuery({ rank: r === null ? undefined : String(r) })
}
