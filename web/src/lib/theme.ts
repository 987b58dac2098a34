import { ref } from 'vue'

export type Theme = 'light' | 'dark'
const STORAGE_KEY = 'trainwatch.theme'

function initial(): Theme {
  const attr = document.documentElement.getAttribute('data-theme')
  if (attr === 'light' || attr === 'dark') return attr
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
}

export const theme = ref<Theme>(initial())
document.documentElement.setAttribute('data-theme', theme.value)

let stored = false
try {
  stored = !!localStorage.getItem(STORAGE_KEY)
} catch {
  /* ignore */
}

// Follow the OS until the user chooses.
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', (e) => {
  if (!stored) setTheme(e.matches ? 'dark' : 'light', false)
})

export function setTheme(t: Theme, persist = true): void {
  theme.value = t
  document.documentElement.setAttribute('data-theme', t)
  if (persist) {
    stored = true
    try {
      localStorage.setItem(STORAGE_KEY, t)
    } catch {
      /* ignore */
    }
  }
}

export function toggleTheme(): void {
  setTheme(theme.value === 'dark' ? 'light' : 'dark')
}

/** Colours for canvas drawing (charts), read from the CSS variables of the current theme. */
export function chartColors(): { axis: string; grid: string; text: string; bg: string } {
  const cs = getComputedStyle(document.documentElement)
  return {
    axis: cs.getPropertyValue('--fg-muted').trim() || '#666',
    grid: cs.getPropertyValue('--grid').trim() || 'rgba(128,128,128,0.15)',
    text: cs.getPropertyValue('--fg').trim() || '#222',
    bg: cs.getPropertyValue('--bg-panel').trim() || '#fff',
  }
}
