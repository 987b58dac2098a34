import { ref, watch } from 'vue'
import { apiKey } from './auth'
import { api, queryString } from './client'

// Short-lived tokens (docs/security.md, "Short-lived tokens"). Where the browser cannot send the
// API key in a header — the live WebSocket, an <img src> — the app puts `?token=` in the URL
// instead: a token fetched with the key (POST /api/v1/tokens, the key in the Authorization header)
// that only reads and expires after a few minutes. The key itself never goes in a URL. Without a
// key there is no token, and the URLs carry nothing.

/** The current token; '' without a key, or until the first one came. Image URLs follow it. */
export const urlToken = ref('')

/** A token is renewed once this share of its life has passed (images and reconnections always
 *  have one with time left). */
const RENEW_AFTER = 0.6
/** After a failed renewal, try again this soon (ms). */
const RETRY_MS = 5000

let renewAt = 0 // Date.now() from which the token counts as due for renewal
let pending: Promise<string> | null = null
let timer: number | undefined
let generation = 0 // bumped when the key changes: an answer fetched with the old key is dropped
let started = false

function scheduleRenewal(ms: number) {
  if (timer !== undefined) window.clearTimeout(timer)
  timer = window.setTimeout(() => {
    timer = undefined
    freshToken().catch(() => scheduleRenewal(RETRY_MS))
  }, ms)
}

async function fetchToken(): Promise<string> {
  const gen = generation
  const asked = Date.now()
  const answer = await api.token()
  if (gen !== generation) return urlToken.value // the key changed meanwhile: its own fetch follows
  // The lifetime counts from when it was asked for, by this clock: no skew with the server's.
  const life = answer.ttl_seconds * 1000
  renewAt = asked + life * RENEW_AFTER
  urlToken.value = answer.token
  scheduleRenewal(renewAt - Date.now())
  return answer.token
}

/** A token with time left ('' without a key): the current one, or a new one fetched now. */
export function freshToken(): Promise<string> {
  if (!apiKey.value) return Promise.resolve('')
  if (urlToken.value && Date.now() < renewAt) return Promise.resolve(urlToken.value)
  if (!pending) {
    const p = fetchToken().finally(() => {
      if (pending === p) pending = null
    })
    pending = p
  }
  return pending
}

/** Fetches a token whenever there is a key, and keeps it fresh. */
export function startUrlTokens(): void {
  if (started) return
  started = true
  watch(
    apiKey,
    () => {
      generation++
      pending = null
      renewAt = 0
      urlToken.value = ''
      if (timer !== undefined) window.clearTimeout(timer)
      timer = undefined
      if (apiKey.value) freshToken().catch(() => scheduleRenewal(RETRY_MS))
    },
    { immediate: true },
  )
}

/** An image's `url` (`/api/v1/blobs/<sha256>`) for an <img>, which the browser fetches without our
 *  headers: with a key, the current token and the image's project and run in its query (a
 *  project-bound key reads a blob only through a run it sees); undefined (no src yet) while the
 *  token is on its way. */
export function blobSrc(url: string, project: string, run: string): string | undefined {
  if (!url.startsWith('/api/v1/blobs/')) return undefined
  if (!apiKey.value) return url
  if (!urlToken.value) return undefined
  return url + queryString({ project, run, token: urlToken.value })
}
