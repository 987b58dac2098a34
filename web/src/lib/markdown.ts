// A small Markdown reader for logged text (TensorBoard's text plugin renders Markdown): headings,
// paragraphs, fenced code, lists, block quotes, pipe tables; inline code, bold, italics and links.
// It builds a tree of plain data, never HTML: the view (components/MarkdownView.ts) turns it into
// elements whose text is always text, so markup or scripts in a run's text are shown, not run.
// Anything it does not know stays literal text.

export type Inline =
  | { t: 'text'; text: string }
  | { t: 'code'; text: string }
  | { t: 'strong'; children: Inline[] }
  | { t: 'em'; children: Inline[] }
  | { t: 'link'; href: string; children: Inline[] }

export type Block =
  | { t: 'h'; level: number; children: Inline[] }
  | { t: 'p'; children: Inline[] }
  | { t: 'pre'; text: string }
  | { t: 'ul' | 'ol'; items: Inline[][] }
  | { t: 'quote'; children: Inline[] }
  | { t: 'table'; head: Inline[][]; rows: Inline[][][] }

/** Links only to the web and mail, or within the page: never `javascript:` and the like. */
export function safeHref(url: string): string | null {
  const u = url.trim()
  return /^(https?:\/\/|mailto:|#)/i.test(u) ? u : null
}

// Underscores emphasise only at word boundaries, opening before and closing after a letter or digit
// (near enough to CommonMark's flanking rules): snake_case_names and obj.__attr stay as written.
const INLINE = new RegExp(
  [
    '`([^`]+)`',
    '\\*\\*(.+?)\\*\\*',
    '(?<![\\p{L}\\p{N}_])__(\\S(?:.*?[\\p{L}\\p{N}])?)__(?![\\p{L}\\p{N}_])',
    '\\*([^*\\s][^*]*?)\\*',
    '(?<![\\p{L}\\p{N}_])_([^_\\s](?:[^_]*?[\\p{L}\\p{N}])?)_(?![\\p{L}\\p{N}_])',
    '\\[([^\\]]+)\\]\\(([^)\\s]+)\\)',
  ].join('|'),
  'u',
)

export function parseInline(text: string, depth = 0): Inline[] {
  const out: Inline[] = []
  let rest = text
  while (rest) {
    const m = depth < 8 ? INLINE.exec(rest) : null
    if (!m) {
      out.push({ t: 'text', text: rest })
      break
    }
    if (m.index > 0) out.push({ t: 'text', text: rest.slice(0, m.index) })
    if (m[1] !== undefined) out.push({ t: 'code', text: m[1] })
    else if (m[2] !== undefined || m[3] !== undefined) out.push({ t: 'strong', children: parseInline(m[2] ?? m[3], depth + 1) })
    else if (m[4] !== undefined || m[5] !== undefined) out.push({ t: 'em', children: parseInline(m[4] ?? m[5], depth + 1) })
    else {
      const href = safeHref(m[7])
      const children = parseInline(m[6], depth + 1)
      out.push(href ? { t: 'link', href, children } : { t: 'text', text: m[0] })
    }
    rest = rest.slice(m.index + m[0].length)
  }
  return out
}

function cells(line: string): string[] {
  return line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim())
}

const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/

export function parseMarkdown(src: string): Block[] {
  const lines = src.replace(/\r\n?/g, '\n').split('\n')
  const blocks: Block[] = []
  let para: string[] = []
  const flush = () => {
    if (para.length) blocks.push({ t: 'p', children: parseInline(para.join(' ')) })
    para = []
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    let m: RegExpExecArray | null
    if (/^\s*```/.test(line)) {
      flush()
      const code: string[] = []
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i])
      blocks.push({ t: 'pre', text: code.join('\n') })
    } else if ((m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      flush()
      blocks.push({ t: 'h', level: m[1].length, children: parseInline(m[2]) })
    } else if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      flush()
      const ordered = /^\s*\d/.test(line)
      const items: Inline[][] = []
      for (; i < lines.length && (m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i])); i++) items.push(parseInline(m[2]))
      i--
      blocks.push({ t: ordered ? 'ol' : 'ul', items })
    } else if (/^\s*>/.test(line)) {
      flush()
      const quote: string[] = []
      for (; i < lines.length && (m = /^\s*>\s?(.*)$/.exec(lines[i])); i++) quote.push(m[1])
      i--
      blocks.push({ t: 'quote', children: parseInline(quote.join(' ')) })
    } else if (line.includes('|') && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
      flush()
      const head = cells(line).map((c) => parseInline(c))
      const rows: Inline[][][] = []
      for (i += 2; i < lines.length && lines[i].includes('|') && lines[i].trim(); i++) rows.push(cells(lines[i]).map((c) => parseInline(c)))
      i--
      blocks.push({ t: 'table', head, rows })
    } else if (!line.trim()) {
      flush()
    } else {
      para.push(line.trim())
    }
  }
  flush()
  return blocks
}
