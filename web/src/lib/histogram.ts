// Histograms of one name over steps, brought onto one value grid so that steps can be compared:
// each step's histogram may have its own edges, so its counts are re-binned onto `bins` equal bins
// spanning every step's finite edges (a bucket's count spread uniformly over its width, as
// TensorBoard does), then turned into shares of that step's values.
import type { HistogramFrame } from './decode'

export interface HistogramGrid {
  /** value range of the bins */
  lo: number
  hi: number
  bins: number
  steps: number[]
  /** shares[f][k]: percent of step f's values in bin k */
  shares: Float64Array[]
  /** the largest share of any bin of any step */
  max: number
}

/** At most `max` items, evenly spread, the first and the last always kept. */
export function evenlySpread<T>(items: T[], max: number): T[] {
  if (items.length <= max) return items
  const out: T[] = []
  for (let i = 0; i < max; i++) out.push(items[Math.round((i * (items.length - 1)) / (max - 1))])
  return out
}

/** The frames (sorted by step) on one grid of `bins` bins; null when no frame has a finite range.
 *  A frame without any count keeps all-zero shares. */
export function rebin(frames: HistogramFrame[], bins: number): HistogramGrid | null {
  let lo = Infinity
  let hi = -Infinity
  for (const h of frames) {
    for (const e of h.edges) {
      if (!Number.isFinite(e)) continue
      lo = Math.min(lo, e)
      hi = Math.max(hi, e)
    }
  }
  if (!frames.length || !Number.isFinite(lo) || !(hi > lo)) return null
  const w = (hi - lo) / bins
  let max = 0
  const shares = frames.map((h) => {
    const out = new Float64Array(bins)
    let total = 0
    for (let j = 0; j < h.counts.length; j++) {
      const c = h.counts[j]
      const a = h.edges[j]
      const b = h.edges[j + 1]
      if (!(c > 0) || !Number.isFinite(a) || !Number.isFinite(b) || !(b > a)) continue
      total += c
      const first = Math.max(0, Math.floor((a - lo) / w))
      const last = Math.min(bins - 1, Math.floor((b - lo) / w))
      for (let k = first; k <= last; k++) {
        const overlap = Math.min(b, lo + (k + 1) * w) - Math.max(a, lo + k * w)
        if (overlap > 0) out[k] += (c * overlap) / (b - a)
      }
    }
    if (total > 0) {
      for (let k = 0; k < bins; k++) {
        out[k] = (out[k] / total) * 100
        max = Math.max(max, out[k])
      }
    }
    return out
  })
  return { lo, hi, bins, steps: frames.map((h) => h.step), shares, max }
}
