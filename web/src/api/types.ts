// The API's types. Every response shape comes from schema/api.schema.json through the generated
// ./schema.gen.ts (npm run gen:types; the server's answers are tested against the same schema), so
// the app and the server cannot drift apart. What is written here only narrows a generated type
// (a run's config as JSON values) or describes requests, which the schema does not cover.
import type * as schema from './schema.gen'

export type JsonNumber = schema.JsonNumber
export type RunStatus = schema.RunStatus
export type LatestValue = schema.LatestValue
export type MetricInfo = schema.MetricInfo
export type MetricKind = MetricInfo['kind']
export type XAxis = schema.XAxis
/** [step, time, value] */
export type RawPoint = schema.Point
export type SeriesBucket = schema.Bucket
export type SeriesGrid = schema.Grid
export type RawSeries = schema.RawSeries
export type BucketSeries = schema.BucketSeries
/** `GET /api/v1/series` without `buckets` */
export type RawSeriesResponse = schema.SeriesRaw
/** `GET /api/v1/series?buckets=N` */
export type BucketSeriesResponse = schema.SeriesDownsampled
/** One run's buckets in `GET /api/v1/series/batch`, a column per field */
export type BucketColumns = schema.BucketColumns
/** `GET /api/v1/series/batch` */
export type SeriesBatchResponse = schema.SeriesBatch
export type Alert = schema.Alert
export type AlertKind = Alert['kind']
export type AlertStatus = schema.AlertStatus
/** `GET /api/v1/alerts` */
export type AlertsResponse = schema.AlertList
/** `POST /api/v1/alerts/ack` */
export type AckResponse = schema.AlertResponse
export type Silence = schema.Silence
export type SilenceResponse = schema.SilenceResponse
export type SilencesResponse = schema.SilenceList
/** `GET /api/v1/info` */
export type InfoResponse = schema.ServerInfo
/** `POST /api/v1/tokens` */
export type TokenResponse = schema.Token
/** `GET /api/v1/report/stored/info`: the report stored when the run ended */
export type StoredReportResponse = schema.StoredReport
export type ErrorResponse = schema.ErrorResponse
export type LiveSubscribed = schema.LiveSubscribed
export type LivePoints = schema.LivePoints
export type LiveAlert = schema.LiveAlert
export type LiveError = schema.LiveError
export type LiveMessage = schema.LiveMessage
/** `GET /api/v1/histograms` */
export type HistogramsResponse = schema.HistogramList
/** `GET /api/v1/graph`: writer-supplied JSON, so readers check it (lib/decode.ts). */
export type GraphNodeJson = schema.GraphNode

/** One image of `GET /api/v1/images` (a tag at a step; `index` tells several apart) */
export type ImageEntry = schema.ImageInfo
/** `GET /api/v1/images` */
export type ImagesResponse = schema.ImageList
/** One text of `GET /api/v1/texts` */
export type TextEntry = schema.TextEntry
/** `GET /api/v1/texts` */
export type TextsResponse = schema.TextList

/** `GET /api/v1/series/ranks`: across-rank statistics per bucket of a step grid */
export type RankAggregatesResponse = schema.RankAggregates
export type RankBucketJson = schema.RankBucket
/** `GET /api/v1/series/rank_matrix` */
export type RankMatrixResponse = schema.RankMatrix
/** `GET /api/v1/ranks` */
export type RankTableResponse = schema.RankTable
export type RankStatus = schema.RankStatus

/** Any JSON value (a run's config). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

/** A run object of `/api/v1/runs` and `/api/v1/run`, its config as JSON values. */
export type Run = Omit<schema.Run, 'config'> & { config: { [key: string]: JsonValue } }
/** `GET /api/v1/runs` */
export type RunsResponse = Omit<schema.RunList, 'runs'> & { runs: Run[] }
/** `GET /api/v1/run` */
export type RunDetail = Run & { metrics: MetricInfo[] }
/** `GET /api/v1/metrics`: the `metrics` array of `/api/v1/run`. */
export type MetricsResponse = schema.MetricList

// ---- requests ----

export type RunsSort = 'name' | 'start_time' | 'last_write_time' | 'status' | `metric:${string}`

export interface RunsQuery {
  project?: string
  q?: string
  tag?: string[]
  status?: RunStatus
  group?: string
  /** `config.<path>` → value */
  config?: Record<string, string>
  sort?: RunsSort | `-${RunsSort}`
  limit?: number
  offset?: number
  latest?: string[]
}

export interface SeriesQuery {
  project: string
  runs: string[]
  metric: string
  x?: XAxis
  from?: number
  to?: number
  buckets?: number
}

/** `GET /api/v1/images` and `/api/v1/texts` */
export interface MediaQuery {
  project: string
  run: string
  name?: string
  from?: number
  to?: number
  limit?: number
}

export interface AlertsQuery {
  project?: string
  run?: string
  kind?: AlertKind
  metric?: string
  status?: AlertStatus | 'active'
  after_id?: number
  limit?: number
}

export interface AckRequest {
  id: number
  by?: string
  acknowledged?: boolean
}

export interface SilenceRequest {
  project?: string
  run?: string
  name?: string
  kind?: string
  duration?: string
  starts_at?: number
  ends_at?: number
  comment?: string
  created_by?: string
}

export interface LiveSubscription {
  subscribe: {
    project?: string
    runs?: string[]
    metrics?: string[]
  }
}
