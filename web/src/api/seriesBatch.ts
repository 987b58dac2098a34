// Charts ask for their downsampled data one by one; the asks made in the same task for the same
// runs, x axis, range and bucket count go to the server together, as /api/v1/series/batch requests
// of a few metrics each. A page of 50 charts then costs a handful of requests instead of 50, and
// each answer draws several charts in one go (bench/dashboard_bench.mjs, figure 1, measures it).
import { api, ApiError } from './client'
import type { BucketColumns, SeriesGrid, XAxis } from './types'

export interface ChartQuery {
  project: string
  runs: string[]
  metric: string
  x: XAxis
  from?: number
  to?: number
  buckets: number
}

/** One metric's answer: its grid and, per run (in the order asked), the buckets as columns. */
export interface ChartBuckets {
  grid: SeriesGrid
  series: BucketColumns[]
}

/** Series (runs × metrics) per request: small enough that the first charts draw while the server
 *  computes the next request, large enough that a page needs only a few. */
const SERIES_PER_REQUEST = 64
/** The metric names of one request, URL-encoded, stay under this (the server reads up to 64 KiB of
 *  request line and headers; metric names may be 256 bytes, three times that encoded). */
const METRIC_BYTES_PER_REQUEST = 16 * 1024

interface Ask {
  metric: string
  signal: AbortSignal
  resolve: (b: ChartBuckets) => void
  reject: (e: unknown) => void
}

interface Group {
  query: Omit<ChartQuery, 'metric'>
  asks: Ask[]
}

const pending = new Map<string, Group>()
let flushQueued = false

function abortError(): DOMException {
  return new DOMException('The operation was aborted.', 'AbortError')
}

/** The buckets of q.metric for q.runs; rejects with an AbortError when `signal` aborts. */
export function fetchChartBuckets(q: ChartQuery, signal: AbortSignal): Promise<ChartBuckets> {
  if (signal.aborted) return Promise.reject(abortError())
  const { metric, ...rest } = q
  const key = JSON.stringify([rest.project, rest.runs, rest.x, rest.from ?? null, rest.to ?? null, rest.buckets])
  let group = pending.get(key)
  if (!group) {
    group = { query: rest, asks: [] }
    pending.set(key, group)
  }
  const asks = group.asks
  const promise = new Promise<ChartBuckets>((resolve, reject) => asks.push({ metric, signal, resolve, reject }))
  if (!flushQueued) {
    flushQueued = true
    // after the current task's synchronous work: every chart that became visible in it is in
    queueMicrotask(flush)
  }
  return promise
}

function flush() {
  flushQueued = false
  const groups = [...pending.values()]
  pending.clear()
  for (const g of groups) {
    const perRequest = Math.max(1, Math.floor(SERIES_PER_REQUEST / Math.max(1, g.query.runs.length)))
    let chunk: string[] = []
    let bytes = 0
    const sendChunk = () => {
      const names = new Set(chunk)
      if (names.size) send(g.query, chunk, g.asks.filter((a) => names.has(a.metric)))
      chunk = []
      bytes = 0
    }
    for (const metric of new Set(g.asks.map((a) => a.metric))) {
      const size = encodeURIComponent(metric).length + 8 // "&metric="
      if (chunk.length >= perRequest || (chunk.length && bytes + size > METRIC_BYTES_PER_REQUEST)) sendChunk()
      chunk.push(metric)
      bytes += size
    }
    sendChunk()
  }
}

/** One request for `metrics`; each ask settles on its own (an aborted ask at once). The request
 *  itself is aborted only when every ask of it was. */
function send(query: Group['query'], metrics: string[], asks: Ask[]) {
  const ac = new AbortController()
  let open = asks.length
  const live = new Set(asks)
  for (const a of asks) {
    const onAbort = () => {
      if (!live.delete(a)) return
      a.reject(abortError())
      if (--open === 0) ac.abort()
    }
    if (a.signal.aborted) onAbort()
    else a.signal.addEventListener('abort', onAbort, { once: true })
  }
  if (open === 0) return
  api.seriesBatch({ ...query, metrics }, ac.signal).then(
    (resp) => {
      const byMetric = new Map(resp.metrics.map((m) => [m.metric, m]))
      for (const a of live) {
        const m = byMetric.get(a.metric)
        if (m) a.resolve({ grid: m.grid, series: m.series })
        else a.reject(new ApiError(500, `the answer has no metric '${a.metric}'`))
      }
      live.clear()
    },
    (e) => {
      for (const a of live) a.reject(e)
      live.clear()
    },
  )
}
