import { reactive } from 'vue'

// Hash router: `#/<path>?<query>`. Every piece of view state lives in the query so views can be shared.

export type Query = Record<string, string>

export interface Route {
  path: string
  /** path segments, decoded */
  segments: string[]
  query: Query
}

function parse(hash: string): Route {
  let h = hash.startsWith('#') ? hash.slice(1) : hash
  if (!h.startsWith('/')) h = '/' + h
  const qi = h.indexOf('?')
  const pathPart = qi >= 0 ? h.slice(0, qi) : h
  const query: Query = {}
  if (qi >= 0) new URLSearchParams(h.slice(qi + 1)).forEach((v, k) => (query[k] = v))
  const segments = pathPart
    .split('/')
    .filter((s) => s !== '')
    .map((s) => {
      try {
        return decodeURIComponent(s)
      } catch {
        return s
      }
    })
  if (segments.length === 0) segments.push('runs')
  return { path: '/' + segments.join('/'), segments, query }
}

export const route = reactive<Route>(parse(location.hash))

function apply(r: Route) {
  route.path = r.path
  route.segments = r.segments
  route.query = r.query
}

window.addEventListener('hashchange', () => apply(parse(location.hash)))

/** Query values are written compactly: `,` and `/` stay readable in shared links. */
function encodeValue(v: string): string {
  return encodeURIComponent(v).replace(/%2C/gi, ',').replace(/%2F/gi, '/')
}

export function href(segments: string[], query: Query = {}): string {
  const path = segments.map((s) => encodeURIComponent(s)).join('/')
  const qs = Object.entries(query)
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeValue(v)}`)
    .join('&')
  return `#/${path}${qs ? '?' + qs : ''}`
}

export function navigate(segments: string[], query: Query = {}): void {
  const h = href(segments, query)
  if (h !== location.hash) location.hash = h
}

/**
 * Changes some query values of the current route. `replace` (the default) does not add a history
 * entry: used for typing, sliders and toggles.
 */
export function setQuery(patch: Record<string, string | undefined | null>, replace = true): void {
  const q: Query = { ...route.query }
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined || v === null || v === '') delete q[k]
    else q[k] = v
  }
  const h = href(route.segments, q)
  if (h === location.hash) return
  if (replace) {
    history.replaceState(history.state, '', h)
    apply(parse(h))
  } else {
    location.hash = h
  }
}
