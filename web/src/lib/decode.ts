// Readers for the answers of /api/v1/histograms (typed by the schema; checked for edges/counts
// consistency) and /api/v1/graph (the writer's own JSON: typed as the schema's GraphNode, but checked
// field by field, since any writer may have sent it). They throw on anything unexpected.
import type { HistogramsResponse } from '../api/types'

/** One histogram (one step): `edges` has one more entry than `counts`. */
export interface HistogramFrame {
  step: number
  time: number
  edges: number[]
  counts: number[]
}

/** A module of the model graph, with its parameters' shapes. */
export interface GraphNode {
  name: string
  type: string
  params: { name: string; shape: number[] }[]
  children: GraphNode[]
}

function isObj(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v)
}

export function decodeHistograms(body: HistogramsResponse): HistogramFrame[] {
  return body.histograms.map((h, i) => {
    if (h.edges.length !== h.counts.length + 1) {
      throw new Error(`histograms[${i}]: ${h.edges.length} edges for ${h.counts.length} counts`)
    }
    return { step: h.step, time: h.time, edges: h.edges, counts: h.counts }
  })
}

export function decodeGraph(body: unknown, depth = 0): GraphNode {
  if (depth > 200) throw new Error('model graph nested too deeply')
  if (!isObj(body)) throw new Error('model graph: a node is not an object')
  const params = Array.isArray(body.params)
    ? body.params.filter(isObj).map((p) => ({
        name: String(p.name ?? ''),
        shape: Array.isArray(p.shape) ? p.shape.map((d) => Number(d)).filter((d) => Number.isFinite(d)) : [],
      }))
    : []
  const children = Array.isArray(body.children) ? body.children.map((c) => decodeGraph(c, depth + 1)) : []
  return { name: String(body.name ?? ''), type: String(body.type ?? ''), params, children }
}

