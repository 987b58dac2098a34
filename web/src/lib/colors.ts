import { reactive } from 'vue'

// A stable colour per run (by its "project/run" key), overridable per run and kept in localStorage.

const STORAGE_KEY = 'trainwatch.runColors'

export const PALETTE = [
  '#4e79a7', '#f28e2b', '#e15759', '#59a14f', '#b07aa1', '#17a2b8',
  '#edc948', '#9c755f', '#ff6fa8', '#2f4bd6', '#7bc043', '#8e44ad',
]

function load(): Record<string, string> {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? '{}')
    if (v && typeof v === 'object') return v as Record<string, string>
  } catch {
    /* ignore */
  }
  return {}
}

const overrides = reactive<Record<string, string>>(load())

function hash(s: string): number {
  // FNV-1a
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

export function runKey(project: string, run: string): string {
  return `${project}/${run}`
}

export function runColor(key: string): string {
  return overrides[key] ?? PALETTE[hash(key) % PALETTE.length]
}

export const HEX_RE = /^#[0-9a-fA-F]{6}$/

export function setRunColor(key: string, hex: string | null): void {
  if (hex && HEX_RE.test(hex)) overrides[key] = hex.toLowerCase()
  else delete overrides[key]
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(overrides))
  } catch {
    /* ignore */
  }
}

/** `#rrggbb` with an alpha in [0, 1] as an rgba() string. */
export function withAlpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16)
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`
}
