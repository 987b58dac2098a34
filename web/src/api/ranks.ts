// The distributed-run answers (docs/distributed.md, "Reading"; their types from the schema): the
// across-rank aggregates of a metric (`/api/v1/series/ranks`), the rank × step matrix
// (`/api/v1/series/rank_matrix`), one rank's series (`/api/v1/series?rank=N`) and the ranks table
// (`/api/v1/ranks`), each read into the plain shapes the charts draw: numbers (NaN for null and
// the "NaN" strings), the matrix's columns spread over the grid's buckets.
import { api, num } from './client'
import type {
  BucketSeriesResponse,
  JsonNumber,
  RankAggregatesResponse,
  RankMatrixResponse,
  RankStatus,
  RankTableResponse,
  SeriesGrid,
} from './types'

/** The across-rank statistics of one bucket of the step grid. */
export interface RankBucket {
  /** x of the bucket on the step axis: its step when it holds one, else the middle of its steps */
  x: number
  firstStep: number
  lastStep: number
  /** points of every rank in the bucket */
  count: number
  /** ranks with a point in the bucket */
  ranks: number
  min: number
  max: number
  /** the rank holding min / max (-1: none, every value NaN) */
  minRank: number
  maxRank: number
  mean: number
  median: number
  p10: number
  p90: number
}

export interface RankAggregates {
  metric: string
  /** ranks that have the metric */
  rankCount: number
  buckets: RankBucket[]
}

/** One rank's row of the rank × step matrix: per bucket of the grid the mean, min and max of its
 *  points (NaN: none). */
export interface MatrixRow {
  rank: number
  mean: number[]
  min: number[]
  max: number[]
}

export interface RankMatrix {
  metric: string
  /** column i holds the steps [from + i × width, from + (i + 1) × width) */
  from: number
  width: number
  buckets: number
  rows: MatrixRow[]
}

export interface RankRow {
  rank: number
  localRank: number
  host: string
  lastStep: number
  stepsPerSecond: number
  /** steps behind the median rank's last step (negative: ahead) */
  lag: number
  status: RankStatus
  lastHeartbeat: number
}

const n = (v: JsonNumber | null | undefined) => num(v)

/** The x of a bucket spanning steps [first, last]. */
function bucketX(first: number, last: number): number {
  return first === last ? first : (first + last) / 2
}

export function decodeRankAggregates(body: RankAggregatesResponse): RankAggregates {
  const buckets: RankBucket[] = []
  for (const b of body.buckets) {
    if (b.count <= 0) continue
    buckets.push({
      x: bucketX(b.first_step, b.last_step),
      firstStep: b.first_step,
      lastStep: b.last_step,
      count: b.count,
      ranks: b.ranks,
      min: n(b.min),
      max: n(b.max),
      minRank: b.min_rank ?? -1,
      maxRank: b.max_rank ?? -1,
      mean: n(b.mean),
      median: n(b.median),
      p10: n(b.p10),
      p90: n(b.p90),
    })
  }
  return { metric: body.metric, rankCount: body.rank_count, buckets }
}

/** Each rank's non-empty buckets (columns `i`, `mean`, `min`, `max`) spread over the grid. */
export function decodeRankMatrix(body: RankMatrixResponse): RankMatrix {
  const g: SeriesGrid = body.grid
  const buckets = Math.max(0, g.buckets)
  const rows: MatrixRow[] = body.ranks.map((r) => {
    const row: MatrixRow = { rank: r.rank, mean: new Array(buckets).fill(NaN), min: new Array(buckets).fill(NaN), max: new Array(buckets).fill(NaN) }
    r.i.forEach((i, k) => {
      if (i < 0 || i >= buckets || (r.count[k] ?? 1) <= 0) return
      row.mean[i] = n(r.mean[k])
      row.min[i] = n(r.min[k])
      row.max[i] = n(r.max[k])
    })
    return row
  })
  rows.sort((a, b) => a.rank - b.rank)
  return { metric: body.metric, from: g.from, width: g.width, buckets, rows }
}

export function decodeRanks(body: RankTableResponse): RankRow[] {
  return body.ranks
    .map((r) => ({
      rank: r.rank,
      localRank: r.local_rank,
      host: r.host,
      lastStep: r.last_step,
      stepsPerSecond: r.steps_per_second,
      lag: r.lag,
      status: r.status,
      lastHeartbeat: r.last_heartbeat,
    }))
    .sort((a, b) => a.rank - b.rank)
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
  aggregates: async (q: RankQuery, signal?: AbortSignal) =>
    decodeRankAggregates(await api.get<RankAggregatesResponse>('/api/v1/series/ranks', { ...q }, signal)),
  matrix: async (q: RankQuery, signal?: AbortSignal) =>
    decodeRankMatrix(await api.get<RankMatrixResponse>('/api/v1/series/rank_matrix', { ...q }, signal)),
  /** One rank's buckets on the step axis. */
  series: (q: RankQuery & { rank: number }, signal?: AbortSignal) =>
    api.get<BucketSeriesResponse>(
      '/api/v1/series',
      { project: q.project, run: q.run, metric: q.metric, rank: q.rank, x: 'step', from: q.from, to: q.to, buckets: q.buckets },
      signal,
    ),
  ranks: async (project: string, run: string, signal?: AbortSignal) =>
    decodeRanks(await api.get<RankTableResponse>('/api/v1/ranks', { project, run }, signal)),
}
