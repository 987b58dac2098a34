// The distributed-run answers (docs/distributed.md, "Reading"): the across-rank aggregates of a
// metric (`/api/v1/series/ranks`), the rank × step matrix (`/api/v1/series/rank_matrix`), one
// rank's series (`/api/v1/series?rank=N`) and the ranks table (`/api/v1/ranks`), each read into the
// plain shapes the charts draw. Numbers may arrive as JSON numbers or the strings "NaN",
// "Infinity", "-Infinity" (JsonNumber); absent or null values read as NaN.
import { api, num } from './client'
import type { BucketSeriesResponse, JsonNumber } from './types'

/** The across-rank statistics of one bucket of the step grid. */
export interface RankBucket {
  /** x of the bucket on the step axis (its step when it holds one, else its centre) */
  x: number
  firstStep: number
  lastStep: number
  /** points of every rank in the bucket */
  count: number
  min: number
  max: number
  /** the rank holding min / max (-1: unknown) */
  minRank: number
  maxRank: number
  mean: number
  median: number
  p10: number
  p90: number
}

export interface RankAggregates {
  metric: string
  buckets: RankBucket[]
}

/** One rank's row of the rank × step matrix: per bucket the mean, min and max of its points. */
export interface MatrixRow {
  rank: number
  mean: number[]
  min: number[]
  max: number[]
}

export interface RankMatrix {
  metric: string
  /** the steps the columns start at (from + i × width) and their width */
  from: number
  width: number
  buckets: number
  rows: MatrixRow[]
}

export type RankStatus = 'running' | 'dead' | 'finished' | string

export interface RankRow {
  rank: number
  localRank: number
  host: string
  lastStep: number
  stepsPerSecond: number
  /** steps behind the median rank (0 or less: not behind) */
  lag: number
  status: RankStatus
  lastHeartbeat: number
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v)

function n(v: unknown): number {
  if (typeof v === 'number') return v
  if (typeof v === 'string') return num(v as JsonNumber)
  return NaN
}

function intOr(v: unknown, d: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : d
}

/** The value of field `k` of the bucket at index `i`: from an array of bucket objects, or from a
 *  bucket-per-index column (`{ k: [...] }`). */
function field(src: Obj | Obj[], k: string, i: number): unknown {
  if (Array.isArray(src)) return src[i]?.[k]
  const col = src[k]
  return Array.isArray(col) ? col[i] : undefined
}

interface GridLike {
  from: number
  width: number
  buckets: number
}

function grid(body: Obj): GridLike {
  const g = isObj(body.grid) ? body.grid : {}
  return { from: n(g.from) || 0, width: n(g.width) || 1, buckets: intOr(g.buckets, 0) }
}

/** The x of bucket `i` of grid `g` spanning [first, last]: its step when it holds one step. */
function bucketX(g: GridLike, i: number, first: number, last: number): number {
  if (Number.isFinite(first) && first === last) return first
  if (Number.isFinite(first) && Number.isFinite(last)) return (first + last) / 2
  return g.width <= 1 ? g.from + i * g.width : g.from + (i + 0.5) * g.width
}

/** `GET /api/v1/series/ranks`: buckets as objects (`buckets: [...]`) or as columns; throws on
 *  anything else. Empty buckets (count 0) are left out. */
export function decodeRankAggregates(body: unknown): RankAggregates {
  if (!isObj(body)) throw new Error('series/ranks: the answer is not an object')
  const g = grid(body)
  const src = Array.isArray(body.buckets) ? (body.buckets.filter(isObj) as Obj[]) : isObj(body.buckets) ? body.buckets : isObj(body.columns) ? body.columns : null
  if (!src) throw new Error('series/ranks: the answer has no buckets')
  const len = Array.isArray(src) ? src.length : Math.max(0, ...Object.values(src).map((c) => (Array.isArray(c) ? c.length : 0)))
  const out: RankBucket[] = []
  for (let k = 0; k < len; k++) {
    const count = intOr(field(src, 'count', k), 1)
    if (count <= 0) continue
    const i = intOr(field(src, 'i', k), k)
    const firstStep = n(field(src, 'first_step', k))
    const lastStep = n(field(src, 'last_step', k))
    out.push({
      x: bucketX(g, i, firstStep, lastStep),
      firstStep: Number.isFinite(firstStep) ? firstStep : Math.ceil(g.from + i * g.width),
      lastStep: Number.isFinite(lastStep) ? lastStep : Math.ceil(g.from + (i + 1) * g.width) - 1,
      count,
      min: n(field(src, 'min', k)),
      max: n(field(src, 'max', k)),
      minRank: intOr(field(src, 'min_rank', k), -1),
      maxRank: intOr(field(src, 'max_rank', k), -1),
      mean: n(field(src, 'mean', k)),
      median: n(field(src, 'median', k)),
      p10: n(field(src, 'p10', k)),
      p90: n(field(src, 'p90', k)),
    })
  }
  return { metric: String(body.metric ?? ''), buckets: out }
}

function numbers(v: unknown, len: number): number[] {
  const out = new Array<number>(len).fill(NaN)
  if (Array.isArray(v)) for (let i = 0; i < Math.min(len, v.length); i++) out[i] = n(v[i])
  return out
}

/** `GET /api/v1/series/rank_matrix`: per rank, its buckets as columns (`mean`, `min`, `max`, with
 *  `i` when empty buckets are left out) or as bucket objects. */
export function decodeRankMatrix(body: unknown): RankMatrix {
  if (!isObj(body)) throw new Error('series/rank_matrix: the answer is not an object')
  const g = grid(body)
  const list = Array.isArray(body.ranks) ? body.ranks : Array.isArray(body.rows) ? body.rows : Array.isArray(body.series) ? body.series : null
  if (!list) throw new Error('series/rank_matrix: the answer has no ranks')
  let buckets = g.buckets
  const rows: MatrixRow[] = []
  for (const r of list) {
    if (!isObj(r)) continue
    const rank = intOr(r.rank, -1)
    if (rank < 0) continue
    const src: Obj | Obj[] | null = Array.isArray(r.buckets) ? (r.buckets.filter(isObj) as Obj[]) : isObj(r.buckets) ? r.buckets : r
    const idx = Array.isArray(src) ? src.map((b, k) => intOr(b.i, k)) : Array.isArray(src.i) ? src.i.map((x, k) => intOr(x, k)) : null
    const len = Array.isArray(src) ? src.length : Array.isArray(src.mean) ? src.mean.length : 0
    if (!buckets) buckets = idx ? Math.max(0, ...idx) + 1 : len
    const row: MatrixRow = { rank, mean: new Array(buckets).fill(NaN), min: new Array(buckets).fill(NaN), max: new Array(buckets).fill(NaN) }
    const mean = Array.isArray(src) ? null : numbers(src.mean, len)
    const min = Array.isArray(src) ? null : numbers(src.min, len)
    const max = Array.isArray(src) ? null : numbers(src.max, len)
    for (let k = 0; k < len; k++) {
      const i = idx ? idx[k] : k
      if (i < 0 || i >= buckets) continue
      if (Array.isArray(src)) {
        if (intOr(src[k].count, 1) <= 0) continue
        row.mean[i] = n(src[k].mean)
        row.min[i] = n(src[k].min)
        row.max[i] = n(src[k].max)
      } else {
        row.mean[i] = mean![k]
        row.min[i] = min![k]
        row.max[i] = max![k]
      }
    }
    rows.push(row)
  }
  rows.sort((a, b) => a.rank - b.rank)
  return { metric: String(body.metric ?? ''), from: g.from, width: g.width, buckets, rows }
}

/** `GET /api/v1/ranks` */
export function decodeRanks(body: unknown): RankRow[] {
  if (!isObj(body) || !Array.isArray(body.ranks)) throw new Error('ranks: the answer has no ranks')
  const out: RankRow[] = []
  for (const r of body.ranks) {
    if (!isObj(r)) continue
    out.push({
      rank: intOr(r.rank, -1),
      localRank: intOr(r.local_rank, -1),
      host: typeof r.host === 'string' ? r.host : '',
      lastStep: intOr(r.last_step, -1),
      stepsPerSecond: n(r.steps_per_second ?? r.steps_per_sec ?? r.steps_per_s),
      lag: n(r.lag ?? r.lag_steps),
      status: typeof r.status === 'string' ? r.status : '',
      lastHeartbeat: n(r.last_heartbeat),
    })
  }
  return out.sort((a, b) => a.rank - b.rank)
}

export interface RankQuery {
  project: string
  run: string
  metric: string
  buckets: number
  from?: number
  to?: number
}

export const rankApi = {
  aggregates: async (q: RankQuery, signal?: AbortSignal) => decodeRankAggregates(await api.get<unknown>('/api/v1/series/ranks', { ...q }, signal)),
  matrix: async (q: RankQuery, signal?: AbortSignal) => decodeRankMatrix(await api.get<unknown>('/api/v1/series/rank_matrix', { ...q }, signal)),
  /** One rank's buckets (step axis). */
  series: (q: RankQuery & { rank: number }, signal?: AbortSignal) =>
    api.get<BucketSeriesResponse>('/api/v1/series', { project: q.project, run: q.run, metric: q.metric, rank: q.rank, x: 'step', from: q.from, to: q.to, buckets: q.buckets }, signal),
  ranks: async (project: string, run: string, signal?: AbortSignal) => decodeRanks(await api.get<unknown>('/api/v1/ranks', { project, run }, signal)),
}
