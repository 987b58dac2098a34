import { computed } from 'vue'
import { route, setQuery } from '../router'
import type { XMode } from '../components/ScalarChart.vue'

function numOr(v: string | undefined, d: number | undefined): number | undefined {
  if (v === undefined || v === '') return d
  const n = Number(v)
  return Number.isFinite(n) ? n : d
}

/** Chart view state, read from the URL query (smoothing, x, log, from, to). */
export function useChartState() {
  const smoothing = computed(() => Math.min(0.99, Math.max(0, numOr(route.query.smoothing, 0.6)!)))
  const xMode = computed<XMode>(() => {
    const x = route.query.x
    return x === 'relative' || x === 'wall' ? x : 'step'
  })
  const log = computed(() => route.query.log === '1')
  const from = computed(() => {
    const f = numOr(route.query.from, undefined)
    const t = numOr(route.query.to, undefined)
    return f !== undefined && t !== undefined && t > f ? f : undefined
  })
  const to = computed(() => (from.value === undefined ? undefined : numOr(route.query.to, undefined)))
  return { smoothing, xMode, log, from, to }
}

/** Zooms every chart to x in [from, to] (a history entry, so Back undoes the zoom). */
export function zoomTo(from: number, to: number): void {
  setQuery({ from: String(from), to: String(to) }, false)
}

/** Back to the whole x range. */
export function resetZoom(): void {
  setQuery({ from: undefined, to: undefined }, false)
}
