import { ref } from 'vue'

const STORAGE_KEY = 'trainwatch.apiKey'

function readKey(): string {
  try {
    return localStorage.getItem(STORAGE_KEY) ?? ''
  } catch {
    return ''
  }
}

/** The API key (localStorage `trainwatch.apiKey`); empty when none. */
export const apiKey = ref<string>(readKey())
/** True while the server has answered 401 and the prompt is waiting for a key. */
export const keyNeeded = ref(false)
/** Why the last key was refused ('' on the first prompt). */
export const keyError = ref('')

let waiters: Array<() => void> = []

export function setApiKey(key: string): void {
  apiKey.value = key.trim()
  try {
    if (apiKey.value) localStorage.setItem(STORAGE_KEY, apiKey.value)
    else localStorage.removeItem(STORAGE_KEY)
  } catch {
    /* storage unavailable: keep the key for this page only */
  }
  keyNeeded.value = false
  const w = waiters
  waiters = []
  for (const f of w) f()
}

/** Called on a 401: shows the prompt and resolves once a (new) key was entered. */
export function waitForKey(refused: boolean): Promise<void> {
  keyError.value = refused && apiKey.value ? 'The server refused this key.' : ''
  keyNeeded.value = true
  return new Promise((resolve) => waiters.push(resolve))
}

export function authHeaders(): Record<string, string> {
  return apiKey.value ? { Authorization: `Bearer ${apiKey.value}` } : {}
}
