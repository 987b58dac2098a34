// A line chart's data, from the server's buckets to uPlot's columns: each run's points (exact
// first/last points of each bucket on the step axis, bucket means on time axes), then all runs
// joined on one x axis with TensorBoard's smoothing, and each run's min/max envelope beside.
//
// Missing values are NaN, not null, until the very end: arrays of plain numbers stay unboxed in V8,
// so a page of charts does not leave a million boxed numbers for the garbage collector.
import { num } from '../api/client'
import type { BucketColumns, SeriesGrid } from '../api/types'
import type { Envelope } from './envelope'
import { debiasedEma } from './smoothing'

/** One run's points, x strictly increasing; NaN where a value is not finite (or a bucket held NaNs only). */
export interface RunData {
  xs: number[]
  raw: number[]
  min: number[]
  max: number[]
  steps: number[]
  lastStep: number
  /** some bucket holds several different values: there is an envelope to draw */
  hasBand: boolean
  /** the most points any one drawn bucket stands for (1: every point drawn as it is) */
  bucketMax: number
}

/** One run's buckets as points: on the step axis each bucket's first and last points at their own
 *  steps (exact), the min/max envelope between; on time axes (whose buckets know their steps, not
 *  their times) one point at the bucket's centre, the mean of its finite values. */
export function columnsToRun(s: BucketColumns, g: SeriesGrid, byStep: boolean): RunData {
  const d: RunData = { xs: [], raw: [], min: [], max: [], steps: [], lastStep: -1, hasBand: false, bucketMax: 0 }
  const push = (x: number, y: number, lo: number, hi: number, step: number) => {
    d.xs.push(x)
    d.raw.push(Number.isFinite(y) ? y : NaN)
    d.min.push(Number.isFinite(lo) ? lo : NaN)
    d.max.push(Number.isFinite(hi) ? hi : NaN)
    d.steps.push(step)
  }
  for (let k = 0; k < s.i.length; k++) {
    const count = s.count[k]
    if (count <= 0) continue
    const lo = num(s.min[k])
    const hi = num(s.max[k])
    const firstStep = s.first_step[k]
    const lastStep = s.last_step[k]
    if (count > 1 && lo !== hi) d.hasBand = true
    if (count > d.bucketMax) d.bucketMax = count
    if (lastStep > d.lastStep) d.lastStep = lastStep
    if (byStep) {
      push(firstStep, num(s.first[k]), lo, hi, firstStep)
      if (lastStep !== firstStep) push(lastStep, num(s.last[k]), lo, hi, lastStep)
      continue
    }
    const finite = count - s.nan_count[k]
    let y: number
    if (finite <= 0) y = NaN
    else if (Number.isFinite(lo) && Number.isFinite(hi)) y = num(s.sum[k]) / finite
    else y = num(s.last[k])
    push(g.from + (s.i[k] + 0.5) * g.width, y, lo, hi, lastStep)
  }
  return d
}

/** The sorted union of strictly increasing arrays (most often all equal: runs logged at the same
 *  steps). Always a new array: live points are appended to the runs' own. */
export function unionOf(lists: number[][]): number[] {
  if (!lists.length) return []
  const first = lists[0]
  if (lists.every((l) => l === first || (l.length === first.length && l.every((x, i) => x === first[i])))) return first.slice()
  const all = new Float64Array(lists.reduce((n, l) => n + l.length, 0))
  let n = 0
  for (const l of lists) for (const x of l) all[n++] = x
  all.sort()
  const out: number[] = []
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) out.push(all[i])
  return out
}

/** A column for uPlot: NaN (none) becomes null (a gap), in a copy, only when there is one. */
function withGaps(col: number[]): (number | null)[] {
  for (const v of col) if (v !== v) return col.map((x) => (x === x ? x : null))
  return col
}

export interface Joined {
  xs: number[]
  /** per run, in order: raw, then smoothed */
  columns: (number | null)[][]
  /** the runs with an envelope (hasBand), on xs */
  envelopes: Envelope[]
  /** lowest min and highest max of every run (the y range must hold the envelopes) */
  extent: [number, number]
}

/** The runs on one x axis; values ≤ 0 dropped on a log scale. */
export function joinRuns(runs: { data: RunData; fill: string }[], smoothing: number, log: boolean): Joined {
  const xs = unionOf(runs.map((r) => r.data.xs))
  const ok = (v: number) => (log && v <= 0 ? NaN : v)
  const columns: (number | null)[][] = []
  const envelopes: Envelope[] = []
  let lo = Infinity
  let hi = -Infinity
  for (const { data: d, fill } of runs) {
    const mn: number[] = []
    const mx: number[] = []
    const raw: number[] = []
    const sm: number[] = []
    const smoothed = debiasedEma(d.raw, smoothing)
    // d.xs is a subsequence of xs: NaN at the x values only other runs have
    for (let j = 0, i = 0; j < xs.length; j++) {
      if (xs[j] !== d.xs[i]) {
        mn.push(NaN)
        mx.push(NaN)
        raw.push(NaN)
        sm.push(NaN)
        continue
      }
      const a = ok(d.min[i])
      const b = ok(d.max[i])
      mn.push(a)
      mx.push(b)
      if (a < lo) lo = a
      if (b > hi) hi = b
      raw.push(ok(d.raw[i]))
      const v = smoothed[i]
      sm.push(v !== null && Number.isFinite(v) ? ok(v) : NaN)
      i++
    }
    columns.push(withGaps(raw), withGaps(sm))
    if (d.hasBand) envelopes.push({ min: mn, max: mx, fill })
  }
  return { xs, columns, envelopes, extent: [lo, hi] }
}
