import { traceEnd, traceStart } from '../lib/trace'
import { authHeaders, waitForKey } from './auth'
import type {
  AckRequest,
  AckResponse,
  AlertsQuery,
  AlertsResponse,
  BucketSeriesResponse,
  HistogramsResponse,
  ImagesResponse,
  InfoResponse,
  JsonNumber,
  MediaQuery,
  MetricsResponse,
  RawSeriesResponse,
  RunDetail,
  RunsQuery,
  RunsResponse,
  SeriesBatchResponse,
  SeriesQuery,
  SilenceRequest,
  SilenceResponse,
  SilencesResponse,
  StoredReportResponse,
  TextsResponse,
  TokenResponse,
} from './types'

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

/** A value of the query API as a JS number (NaN/±Infinity from their string forms). */
export function num(v: JsonNumber | null | undefined): number {
  if (v === null || v === undefined) return NaN
  if (typeof v === 'number') return v
  if (v === 'Infinity') return Infinity
  if (v === '-Infinity') return -Infinity
  return NaN
}

type Params = Record<string, string | number | boolean | undefined | null | Array<string | number>>

export function queryString(params: Params): string {
  const sp = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue
    if (Array.isArray(v)) for (const item of v) sp.append(k, String(item))
    else sp.append(k, String(v))
  }
  const s = sp.toString()
  return s ? `?${s}` : ''
}

/** Limits how many requests run at once (charts fetch many series in parallel). */
class Limiter {
  private active = 0
  private queue: Array<() => void> = []
  constructor(private max: number) {}
  async run<T>(f: () => Promise<T>): Promise<T> {
    const t0 = traceStart()
    if (this.active >= this.max) await new Promise<void>((r) => this.queue.push(r))
    traceEnd('queue', t0)
    this.active++
    try {
      return await f()
    } finally {
      this.active--
      this.queue.shift()?.()
    }
  }
}

const seriesLimiter = new Limiter(6)

async function request<T>(path: string, init: RequestInit = {}, signal?: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const headers: Record<string, string> = { ...authHeaders() }
    if (init.body) headers['Content-Type'] = 'application/json'
    const t0 = traceStart()
    const res = await fetch(path, { ...init, headers, signal, cache: 'no-store' })
    traceEnd('fetch', t0, path)
    if (res.status === 401 && attempt < 5) {
      await waitForKey(attempt > 0 || !!authHeaders().Authorization)
      continue
    }
    const t1 = traceStart()
    const text = await res.text()
    traceEnd('body', t1, path)
    const t2 = traceStart()
    let body: unknown = undefined
    try {
      body = text ? JSON.parse(text) : undefined
    } catch {
      /* not JSON */
    }
    traceEnd('parse', t2, path)
    if (!res.ok) {
      const msg =
        body && typeof body === 'object' && 'error' in body ? String((body as { error: unknown }).error) : text || res.statusText
      throw new ApiError(res.status, msg)
    }
    return body as T
  }
}

function post<T>(path: string, body: unknown): Promise<T> {
  return request<T>(path, { method: 'POST', body: JSON.stringify(body) })
}

export const api = {
  info: () => request<InfoResponse>('/api/v1/info'),

  runs(q: RunsQuery = {}, signal?: AbortSignal): Promise<RunsResponse> {
    const params: Params = {
      project: q.project,
      q: q.q,
      tag: q.tag,
      status: q.status,
      group: q.group,
      sort: q.sort,
      limit: q.limit,
      offset: q.offset,
      latest: q.latest && q.latest.length ? q.latest.join(',') : undefined,
    }
    for (const [k, v] of Object.entries(q.config ?? {})) params[`config.${k}`] = v
    return request<RunsResponse>(`/api/v1/runs${queryString(params)}`, {}, signal)
  },

  run: (project: string, run: string, signal?: AbortSignal) =>
    request<RunDetail>(`/api/v1/run${queryString({ project, run })}`, {}, signal),

  metrics: (project: string, run: string, signal?: AbortSignal) =>
    request<MetricsResponse>(`/api/v1/metrics${queryString({ project, run })}`, {}, signal),

  /** Downsampled series (M4 buckets), through the shared concurrency limit. */
  seriesBuckets(q: SeriesQuery & { buckets: number }, signal?: AbortSignal): Promise<BucketSeriesResponse> {
    const qs = queryString({ project: q.project, run: q.runs, metric: q.metric, x: q.x, from: q.from, to: q.to, buckets: q.buckets })
    return seriesLimiter.run(() => request<BucketSeriesResponse>(`/api/v1/series${qs}`, {}, signal))
  },

  /** Downsampled series of several metrics (`/api/v1/series/batch`), through the same limit. Charts
   *  use it through fetchChartBuckets (./seriesBatch.ts), which gathers their asks. */
  seriesBatch(q: Omit<SeriesQuery, 'metric'> & { metrics: string[]; buckets: number }, signal?: AbortSignal): Promise<SeriesBatchResponse> {
    const qs = queryString({ project: q.project, run: q.runs, metric: q.metrics, x: q.x, from: q.from, to: q.to, buckets: q.buckets })
    return seriesLimiter.run(() => request<SeriesBatchResponse>(`/api/v1/series/batch${qs}`, {}, signal))
  },

  seriesRaw(q: SeriesQuery, signal?: AbortSignal): Promise<RawSeriesResponse> {
    const qs = queryString({ project: q.project, run: q.runs, metric: q.metric, x: q.x, from: q.from, to: q.to })
    return seriesLimiter.run(() => request<RawSeriesResponse>(`/api/v1/series${qs}`, {}, signal))
  },

  // The two answers below are not in schema/api.schema.json yet, so they come back as `unknown` and
  // are checked where they are read (decodeHistograms, decodeGraph in lib/decode.ts).

  /** `GET /api/v1/histograms` */
  histograms: (q: { project: string; run: string; metric: string; from?: number; to?: number; limit?: number }, signal?: AbortSignal) =>
    request<HistogramsResponse>(`/api/v1/histograms${queryString({ ...q })}`, {}, signal),

  /** `GET /api/v1/graph`: the model graph the writer sent */
  graph: (project: string, run: string, signal?: AbortSignal) => request<unknown>(`/api/v1/graph${queryString({ project, run })}`, {}, signal),

  /** `GET /api/v1/images`: a run's images (of one tag with `name`), by step and index */
  images: (q: MediaQuery, signal?: AbortSignal) => request<ImagesResponse>(`/api/v1/images${queryString({ ...q })}`, {}, signal),

  /** `GET /api/v1/texts` */
  texts: (q: MediaQuery, signal?: AbortSignal) => request<TextsResponse>(`/api/v1/texts${queryString({ ...q })}`, {}, signal),

  alerts: (q: AlertsQuery = {}, signal?: AbortSignal) =>
    request<AlertsResponse>(`/api/v1/alerts${queryString({ ...q })}`, {}, signal),

  ack: (body: AckRequest) => post<AckResponse>('/api/v1/alerts/ack', body),

  silence: (body: SilenceRequest) => post<SilenceResponse>('/api/v1/silences', body),

  silences: () => request<SilencesResponse>('/api/v1/silences'),

  /** `GET /api/v1/report/stored/info`: whether a report was stored when the run ended, and which */
  storedReport: (project: string, run: string, signal?: AbortSignal) =>
    request<StoredReportResponse>(`/api/v1/report/stored/info${queryString({ project, run })}`, {}, signal),

  /** A GET of `path` with the query `params`, through the series' concurrency limit (the
   *  distributed-run answers of ./ranks.ts, which decodes them). */
  get<T>(path: string, params: Params, signal?: AbortSignal): Promise<T> {
    return seriesLimiter.run(() => request<T>(`${path}${queryString(params)}`, {}, signal))
  },

  /** `POST /api/v1/tokens`: a short-lived token for URLs (./urlToken.ts) */
  token: () => request<TokenResponse>('/api/v1/tokens', { method: 'POST' }),
}

export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'AbortError'
}
