// The pure side of a distributed run's charts (components/RankChart.vue, charts/RankHeatmap.vue,
// components/RanksPanel.vue): the across-rank band and median on the step axis, one selected
// rank's line joined to it, which metrics get a rank × step heatmap, and the heatmap's colours.
import { num } from '../api/client'
import type { RankAggregates, RankRow } from '../api/ranks'
import type { SeriesBucket } from '../api/types'
import { unionOf, type RunData } from './chartData'
import type { Envelope } from './envelope'

/** A run is distributed when the server says so, or it has more than one rank. */
export function isDistributed(run: { distributed?: boolean; world_size?: number } | null | undefined): boolean {
  return !!run && (run.distributed === true || (run.world_size ?? 0) > 1)
}

/** The across-rank statistics per bucket as columns on the step axis (x strictly increasing). */
export interface Band {
  xs: number[]
  median: number[]
  p10: number[]
  p90: number[]
  min: number[]
  max: number[]
  minRank: number[]
  maxRank: number[]
  lastStep: number
  /** the rank that holds the bucket maximum most often (-1: none), e.g. a slow rank's step time */
  topRank: number
  /** the rank that holds the bucket minimum most often (-1: none) */
  bottomRank: number
}

const finiteOrNaN = (v: number) => (Number.isFinite(v) ? v : NaN)

/** The rank named most often in `ranks` (ties: the lowest rank); -1 when none is named. */
export function mostFrequent(ranks: number[]): number {
  const counts = new Map<number, number>()
  for (const r of ranks) if (r >= 0) counts.set(r, (counts.get(r) ?? 0) + 1)
  let best = -1
  let bestCount = 0
  for (const [r, c] of counts) if (c > bestCount || (c === bestCount && r < best)) [best, bestCount] = [r, c]
  return best
}

export function bandOf(a: RankAggregates): Band {
  const b: Band = { xs: [], median: [], p10: [], p90: [], min: [], max: [], minRank: [], maxRank: [], lastStep: -1, topRank: -1, bottomRank: -1 }
  let prevX = -Infinity
  for (const k of a.buckets) {
    if (!(k.x > prevX)) continue // the x axis must increase strictly
    prevX = k.x
    b.xs.push(k.x)
    b.median.push(finiteOrNaN(k.median))
    b.p10.push(finiteOrNaN(k.p10))
    b.p90.push(finiteOrNaN(k.p90))
    b.min.push(finiteOrNaN(k.min))
    b.max.push(finiteOrNaN(k.max))
    b.minRank.push(k.minRank)
    b.maxRank.push(k.maxRank)
    if (k.lastStep > b.lastStep) b.lastStep = k.lastStep
  }
  b.topRank = mostFrequent(b.maxRank)
  b.bottomRank = mostFrequent(b.minRank)
  return b
}

/** One rank's downsampled buckets (`/api/v1/series?rank=N&buckets=...`, step axis) as a line: each
 *  bucket's first and last points at their own steps. */
export function rankLineOf(buckets: SeriesBucket[]): RunData {
  const d: RunData = { xs: [], raw: [], min: [], max: [], steps: [], lastStep: -1, hasBand: false, bucketMax: 0 }
  const push = (x: number, y: number) => {
    if (d.xs.length && x <= d.xs[d.xs.length - 1]) return
    d.xs.push(x)
    d.raw.push(Number.isFinite(y) ? y : NaN)
    d.min.push(NaN)
    d.max.push(NaN)
    d.steps.push(x)
  }
  for (const b of buckets) {
    if (b.count <= 0) continue
    push(b.first_step, num(b.first))
    if (b.last_step !== b.first_step) push(b.last_step, num(b.last))
    if (b.count > d.bucketMax) d.bucketMax = b.count
    if (b.last_step > d.lastStep) d.lastStep = b.last_step
  }
  return d
}

export interface JoinedBand {
  xs: number[]
  /** the median, then (when a rank is selected) the rank's line; null where absent */
  columns: (number | null)[][]
  /** min–max (outer, fainter) then p10–p90 (inner) */
  envelopes: Envelope[]
  extent: [number, number]
}

/** The band and the selected rank's line on one x axis; values ≤ 0 dropped on a log scale. */
export function joinBand(band: Band, line: RunData | null, fills: { outer: string; inner: string }, log: boolean): JoinedBand {
  const xs = line ? unionOf([band.xs, line.xs]) : band.xs.slice()
  const ok = (v: number) => (log && v <= 0 ? NaN : v)
  const cols = { median: [] as number[], p10: [] as number[], p90: [] as number[], min: [] as number[], max: [] as number[], line: [] as number[] }
  let lo = Infinity
  let hi = -Infinity
  for (let j = 0, i = 0, l = 0; j < xs.length; j++) {
    const x = xs[j]
    if (band.xs[i] === x) {
      cols.median.push(ok(band.median[i]))
      cols.p10.push(ok(band.p10[i]))
      cols.p90.push(ok(band.p90[i]))
      const mn = ok(band.min[i])
      const mx = ok(band.max[i])
      cols.min.push(mn)
      cols.max.push(mx)
      if (mn < lo) lo = mn
      if (mx > hi) hi = mx
      i++
    } else {
      for (const c of [cols.median, cols.p10, cols.p90, cols.min, cols.max]) c.push(NaN)
    }
    if (line && line.xs[l] === x) {
      const v = ok(line.raw[l])
      cols.line.push(v)
      if (v < lo) lo = v
      if (v > hi) hi = v
      l++
    } else if (line) {
      cols.line.push(NaN)
    }
  }
  const gaps = (c: number[]) => c.map((v) => (v === v ? v : null))
  const columns = [gaps(cols.median)]
  if (line) columns.push(gaps(cols.line))
  return {
    xs,
    columns,
    envelopes: [
      { min: cols.min, max: cols.max, fill: fills.outer },
      { min: cols.p10, max: cols.p90, fill: fills.inner },
    ],
    extent: [lo, hi],
  }
}

/** The index of the largest x ≤ `x` in the increasing `xs` (-1: none). */
export function indexAtOrBefore(xs: number[], x: number): number {
  let lo = 0
  let hi = xs.length - 1
  let best = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (xs[mid] <= x) {
      best = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  return best
}

/** The metrics that get a rank × step heatmap, of those the run has: step time, time to the
 *  collective, the loss and GPU utilisation. */
export function heatmapMetrics(names: string[]): string[] {
  const has = new Set(names)
  const out: string[] = []
  for (const m of ['dist/step_time', 'dist/time_to_collective']) if (has.has(m)) out.push(m)
  const loss = has.has('loss') ? 'loss' : [...names].sort().find((m) => /(^|\/)loss$/.test(m))
  if (loss) out.push(loss)
  // a distributed run's ranks each sample their own GPU under one name; other runs name each GPU
  const sorted = [...names].sort()
  const gpu = has.has('system/gpu/utilization_percent')
    ? 'system/gpu/utilization_percent'
    : (sorted.find((m) => /^system\/gpu\/\d+\/utilization(_percent)?$/.test(m)) ?? sorted.find((m) => /gpu.*util/i.test(m)))
  if (gpu) out.push(gpu)
  return out
}

/** A perceptual ramp (viridis) from 0 (low) to 1 (high); NaN is transparent. */
const RAMP: [number, number, number][] = [
  [68, 1, 84],
  [72, 40, 120],
  [62, 74, 137],
  [49, 104, 142],
  [38, 130, 142],
  [31, 158, 137],
  [53, 183, 121],
  [109, 205, 89],
  [180, 222, 44],
  [253, 231, 37],
]

export function rampColor(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1)
  const i = Math.min(RAMP.length - 2, Math.floor(x))
  const f = x - i
  const a = RAMP[i]
  const b = RAMP[i + 1]
  return [Math.round(a[0] + (b[0] - a[0]) * f), Math.round(a[1] + (b[1] - a[1]) * f), Math.round(a[2] + (b[2] - a[2]) * f)]
}

export const RAMP_CSS = `linear-gradient(to right, ${RAMP.map((c) => `rgb(${c.join(',')})`).join(', ')})`

/** On a grid finer than one step (`width` < 1: more buckets than steps), most buckets hold no
 *  step; each such bucket shows the step before it (the bucket within one step to its left that
 *  holds one), so a heatmap row has no stripes of empty cells. Coarser grids are left as they are. */
export function fillSubStepGaps(values: number[], width: number): number[] {
  if (!(width < 1) || width <= 0) return values
  const reach = Math.ceil(1 / width)
  const out = values.slice()
  let last = -Infinity
  for (let i = 0; i < out.length; i++) {
    if (Number.isFinite(values[i])) last = i
    else if (i - last < reach && last >= 0) out[i] = values[last]
  }
  return out
}

/** The lowest and highest finite values of the rows (for the heatmap's colour scale). */
export function valueRange(rows: number[][]): [number, number] {
  let lo = Infinity
  let hi = -Infinity
  for (const r of rows)
    for (const v of r) {
      if (!Number.isFinite(v)) continue
      if (v < lo) lo = v
      if (v > hi) hi = v
    }
  return lo <= hi ? [lo, hi] : [0, 1]
}

/** The index of the row with the highest mean of its finite values (-1: none). */
export function hottestRow(rows: number[][]): number {
  let best = -1
  let bestMean = -Infinity
  rows.forEach((r, i) => {
    let s = 0
    let c = 0
    for (const v of r) if (Number.isFinite(v)) (s += v), c++
    if (c && s / c > bestMean) [best, bestMean] = [i, s / c]
  })
  return best
}

/** The median of the ranks' last steps, and each rank's lag behind it when the server sent none. */
export function withLag(rows: RankRow[]): RankRow[] {
  if (rows.every((r) => Number.isFinite(r.lag))) return rows
  const steps = rows.map((r) => r.lastStep).sort((a, b) => a - b)
  const m = steps.length ? (steps.length % 2 ? steps[(steps.length - 1) / 2] : (steps[steps.length / 2 - 1] + steps[steps.length / 2]) / 2) : 0
  return rows.map((r) => (Number.isFinite(r.lag) ? r : { ...r, lag: m - r.lastStep }))
}

/** The highlight colour of a selected rank's line: one the run's own colour is far from. */
export function highlightColor(runColor: string): string {
  const hue = hueOf(runColor)
  // orange-red unless the run is itself orange or red, then magenta
  return hue !== null && (hue < 45 || hue > 330) ? '#d61f9b' : '#ff4d1a'
}

function hueOf(hex: string): number | null {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex)
  if (!m) return null
  const [r, g, b] = [m[1], m[2], m[3]].map((h) => parseInt(h, 16) / 255)
  const max = Math.max(r, g, b)
  const min = Math.min(r, g, b)
  if (max === min) return null
  const d = max - min
  const h = max === r ? ((g - b) / d) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4
  return (h * 60 + 360) % 360
}
