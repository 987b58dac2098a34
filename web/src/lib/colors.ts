import { reactive, ref } from 'vue'

// Run colours. Each run ("project/run") gets a palette slot the first time it is seen, in order of
// appearance, kept in localStorage so it keeps its colour across reloads. Pages call
// `distinctColors(keys)` with the runs they show: a run whose slot clashes with an earlier run on
// screen moves to a free slot (and keeps that one). A colour the user picked always wins.

const STORAGE_KEY = 'trainwatch.runColors'
const SLOTS_KEY = 'trainwatch.runSlots'
/** Slots remembered at most (the oldest are forgotten first). */
const MAX_REMEMBERED = 2000

/**
 * 16 well-separated hues at a middle lightness, so each reads on the light and the dark background;
 * ordered so that the first few are as far apart as possible.
 */
export const PALETTE = [
  '#3d85f0', // blue
  '#f28522', // orange
  '#26a95a', // green
  '#e5405e', // red
  '#9b6cf0', // violet
  '#12b3c4', // cyan
  '#c9a100', // gold
  '#e66ac2', // pink
  '#8f6b47', // brown
  '#7d9c14', // olive
  '#5562d8', // indigo
  '#00a393', // teal
  '#d0551f', // rust
  '#b04fc9', // purple
  '#5fa8e8', // sky
  '#8a8f98', // grey
]

function loadJson(key: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(key) ?? '{}')
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>
  } catch {
    /* ignore */
  }
  return {}
}

function save(key: string, value: unknown): void {
  try {
    localStorage.setItem(key, JSON.stringify(value))
  } catch {
    /* ignore */
  }
}

export const HEX_RE = /^#[0-9a-fA-F]{6}$/

const overrides = reactive<Record<string, string>>(
  Object.fromEntries(Object.entries(loadJson(STORAGE_KEY)).filter((e): e is [string, string] => typeof e[1] === 'string' && HEX_RE.test(e[1]))),
)

/** key → slot, in order of first appearance (insertion order). Not reactive: `version` is. */
const slots = new Map<string, number>()
let nextSlot = 0
{
  const stored = loadJson(SLOTS_KEY)
  const order = Array.isArray(stored.order) ? stored.order : []
  for (const e of order) {
    if (Array.isArray(e) && typeof e[0] === 'string' && Number.isInteger(e[1]) && e[1] >= 0 && e[1] < PALETTE.length) slots.set(e[0], e[1])
  }
  if (typeof stored.next === 'number' && Number.isInteger(stored.next)) nextSlot = Math.abs(stored.next) % PALETTE.length
}
/** Bumped when a run's slot changes (a new run getting its first slot changes no colour on screen). */
const version = ref(0)
let saveTimer: number | undefined

function persistSlots(): void {
  while (slots.size > MAX_REMEMBERED) slots.delete(slots.keys().next().value as string)
  if (saveTimer !== undefined) return
  saveTimer = window.setTimeout(() => {
    saveTimer = undefined
    save(SLOTS_KEY, { next: nextSlot, order: [...slots.entries()] })
  }, 0)
}

function slotOf(key: string): number {
  let s = slots.get(key)
  if (s === undefined) {
    s = nextSlot
    nextSlot = (nextSlot + 1) % PALETTE.length
    slots.set(key, s)
    persistSlots()
  }
  return s
}

export function runKey(project: string, run: string): string {
  return `${project}/${run}`
}

export function runColor(key: string): string {
  void version.value // dependency: slots moved by distinctColors
  return overrides[key] ?? PALETTE[slotOf(key)]
}

/**
 * Makes the given runs' colours distinct (as far as the palette allows), earlier keys keeping
 * theirs: a later run whose colour is already taken moves to the least used free slot.
 */
export function distinctColors(keys: string[]): void {
  const used = new Map<string, number>() // colour → count among earlier keys
  for (const k of keys) if (overrides[k]) used.set(overrides[k], (used.get(overrides[k]) ?? 0) + 1)
  let moved = false
  const seen = new Set<string>()
  for (const k of keys) {
    if (seen.has(k)) continue
    seen.add(k)
    if (overrides[k]) continue
    let s = slotOf(k)
    if (used.has(PALETTE[s])) {
      const free = PALETTE.findIndex((c) => !used.has(c))
      if (free >= 0) {
        s = free
        slots.delete(k)
        slots.set(k, s)
        moved = true
      }
    }
    used.set(PALETTE[s], (used.get(PALETTE[s]) ?? 0) + 1)
  }
  if (moved) {
    persistSlots()
    version.value++
  }
}

export function setRunColor(key: string, hex: string | null): void {
  if (hex && HEX_RE.test(hex)) overrides[key] = hex.toLowerCase()
  else delete overrides[key]
  save(STORAGE_KEY, overrides)
}

/** A colour per series index (metrics of a combined chart, GPUs). */
export function seriesColor(i: number): string {
  return PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length]
}

/** `#rrggbb` with an alpha in [0, 1] as an rgba() string. */
export function withAlpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16)
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`
}
