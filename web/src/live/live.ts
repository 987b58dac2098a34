import { ref, watch } from 'vue'
import { apiKey, keyNeeded } from '../api/auth'
import { freshToken } from '../api/urlToken'
import type { Alert, LiveMessage, LivePoints, LiveSubscription } from '../api/types'

// One WebSocket to /api/v1/live for the whole app. Pages set the subscription; points and alerts are
// dispatched to listeners. Reconnects with backoff (up to 5 s), e.g. after a server restart. With
// an API key, each connection passes a short-lived token (../api/urlToken.ts), never the key: the
// server checks it when the connection opens, and every reconnection asks for one with time left.

export type LiveState = 'live' | 'offline'

export const liveState = ref<LiveState>('offline')

type PointsListener = (msg: LivePoints) => void
type AlertListener = (alert: Alert) => void
type ReconnectListener = () => void

const pointsListeners = new Set<PointsListener>()
const alertListeners = new Set<AlertListener>()
const reconnectListeners = new Set<ReconnectListener>()

/** Never matches a metric: used to receive alerts without points. */
export const NO_METRICS = ['\u0000none']

let subscription: LiveSubscription['subscribe'] = { metrics: NO_METRICS }
let ws: WebSocket | null = null
let backoff = 250
let timer: number | undefined
let everOpened = false
let started = false
let connecting = false // waiting for a token before opening

function url(token: string): string {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:'
  const query = token ? `?token=${encodeURIComponent(token)}` : ''
  return `${proto}//${location.host}/api/v1/live${query}`
}

function send() {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ subscribe: subscription } satisfies LiveSubscription))
}

function schedule() {
  if (timer !== undefined) return
  timer = window.setTimeout(() => {
    timer = undefined
    connect()
  }, backoff)
  backoff = Math.min(backoff * 2, 5000)
}

async function connect() {
  if (ws || connecting) return
  if (keyNeeded.value) return // wait for the key prompt; the watch below reconnects
  connecting = true
  let token: string
  try {
    token = await freshToken()
  } catch {
    schedule()
    return
  } finally {
    connecting = false
  }
  if (ws || keyNeeded.value) return
  let sock: WebSocket
  try {
    sock = new WebSocket(url(token))
  } catch {
    schedule()
    return
  }
  ws = sock
  sock.onopen = () => {
    backoff = 250
    liveState.value = 'live'
    send()
    if (everOpened) for (const f of reconnectListeners) f()
    everOpened = true
  }
  sock.onmessage = (ev) => {
    let msg: LiveMessage
    try {
      msg = JSON.parse(String(ev.data)) as LiveMessage
    } catch {
      return
    }
    if (msg.type === 'points') for (const f of pointsListeners) f(msg)
    else if (msg.type === 'alert') for (const f of alertListeners) f(msg.alert)
    else if (msg.type === 'error') console.warn('live subscription:', msg.error)
  }
  sock.onclose = () => {
    if (ws === sock) ws = null
    liveState.value = 'offline'
    schedule()
  }
  // an error is always followed by close; nothing to do here (and nothing to log as an error)
  sock.onerror = () => {}
}

export function startLive(): void {
  if (started) return
  started = true
  void connect()
  // A new key: reconnect with a token of it.
  watch(apiKey, () => {
    if (ws) ws.close()
    else void connect()
  })
  watch(keyNeeded, (needed) => {
    if (!needed && !ws) void connect()
  })
  // Reconnect at once when the tab comes back or the network returns.
  window.addEventListener('online', () => {
    backoff = 250
    if (!ws) void connect()
  })
}

/** Sets what the server pushes; replaces the previous subscription. */
export function subscribe(sub: LiveSubscription['subscribe']): void {
  const next = JSON.stringify(sub)
  if (next === JSON.stringify(subscription)) return
  subscription = sub
  send()
}

export function onPoints(f: PointsListener): () => void {
  pointsListeners.add(f)
  return () => pointsListeners.delete(f)
}

export function onAlert(f: AlertListener): () => void {
  alertListeners.add(f)
  return () => alertListeners.delete(f)
}

/** Called after a reconnection (the gap may need re-reading). */
export function onReconnect(f: ReconnectListener): () => void {
  reconnectListeners.add(f)
  return () => reconnectListeners.delete(f)
}
